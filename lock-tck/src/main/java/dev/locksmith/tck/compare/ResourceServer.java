package dev.locksmith.tck.compare;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The two resources the contenders write through, served on a loopback port so that separate
 * processes share them: an unguarded counter (read, then write back plus one: only the lock
 * protects it) and a fenced counter that refuses a write whose token is lower than the highest it
 * has accepted. A line protocol: {@code GET} answers {@code <unguarded> <fenced>}; {@code PUT
 * <value>} writes the unguarded counter; {@code FENCED <token> <value>} answers {@code OK} or
 * {@code REJECTED <highest>}.
 *
 * <p>For a semaphore's holders, a resource with room for N at once: {@code ENTER <token> <N>} says
 * a holder starts; if N tokens are inside already, that is an entry over capacity, and the lowest
 * token inside is fenced off (a semaphore's fence: of N + 1 holders at least one lease is stale,
 * and with tokens granted in increasing order and short holds, the lowest is the one held longest).
 * {@code LEAVE <token>} is the holder's write as it ends: {@code REJECTED} for a token fenced off,
 * else {@code OK}. A fence for a semaphore can only guess which holder is stale (a live holder may
 * simply hold longest); {@link Result} judges overlaps from the holders' own reports, and this
 * fence only shows whether the stale write would be refused.
 */
final class ResourceServer implements AutoCloseable {
  private final ServerSocket socket;
  private final ReentrantLock mutex = new ReentrantLock();
  private final List<Socket> connections = new CopyOnWriteArrayList<>();
  private final Thread acceptor;
  private long unguarded;
  private long unguardedWrites;
  private long fenced;
  private long highestToken;
  private long fencedAccepted;
  private long fencedRejected;
  private final java.util.TreeSet<Long> inside = new java.util.TreeSet<>();
  private final java.util.Set<Long> fencedOff = new java.util.HashSet<>();
  private long overCapacity;
  private int mostInside;

  ResourceServer() throws IOException {
    socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    acceptor = new Thread(this::accept, "resource-server");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  int port() {
    return socket.getLocalPort();
  }

  private void accept() {
    while (!socket.isClosed()) {
      try {
        Socket s = socket.accept();
        connections.add(s);
        Thread t = new Thread(() -> serve(s), "resource-client");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return;
      }
    }
  }

  private void serve(Socket s) {
    try (BufferedReader in =
            new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
        PrintWriter out =
            new PrintWriter(
                new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8), true)) {
      for (String line; (line = in.readLine()) != null; ) {
        out.println(handle(line.trim().split(" ")));
      }
    } catch (IOException | RuntimeException e) {
      // the contender went away (killed, paused then stopped): nothing to do
    }
  }

  private String handle(String[] cmd) {
    mutex.lock();
    try {
      switch (cmd[0]) {
        case "GET":
          return unguarded + " " + fenced;
        case "PUT":
          unguarded = Long.parseLong(cmd[1]);
          unguardedWrites++;
          return "OK";
        case "FENCED":
          long token = Long.parseLong(cmd[1]);
          if (token < highestToken) {
            fencedRejected++;
            return "REJECTED " + highestToken;
          }
          highestToken = token;
          fenced = Long.parseLong(cmd[2]);
          fencedAccepted++;
          return "OK";
        case "ENTER":
          {
            long entering = Long.parseLong(cmd[1]);
            int capacity = Integer.parseInt(cmd[2]);
            mostInside = Math.max(mostInside, inside.size() + 1);
            if (inside.size() >= capacity) {
              overCapacity++;
              fencedOff.add(inside.pollFirst());
            }
            inside.add(entering);
            return "OK";
          }
        case "LEAVE":
          {
            long leaving = Long.parseLong(cmd[1]);
            if (fencedOff.remove(leaving)) {
              fencedRejected++;
              return "REJECTED";
            }
            inside.remove(leaving);
            fencedAccepted++;
            return "OK";
          }
        default:
          return "ERROR unknown command " + cmd[0];
      }
    } finally {
      mutex.unlock();
    }
  }

  /** Updates lost on the unguarded counter: writes made minus the value they left. */
  long unguardedLost() {
    mutex.lock();
    try {
      return unguardedWrites - unguarded;
    } finally {
      mutex.unlock();
    }
  }

  /** Updates lost on the fenced counter: accepted writes minus the value they left. */
  long fencedLost() {
    mutex.lock();
    try {
      return fencedAccepted - fenced;
    } finally {
      mutex.unlock();
    }
  }

  long fencedRejected() {
    mutex.lock();
    try {
      return fencedRejected;
    } finally {
      mutex.unlock();
    }
  }

  /**
   * Semaphore holders that entered while N others were inside (stale, live or dead: the resource
   * cannot tell).
   */
  long overCapacity() {
    mutex.lock();
    try {
      return overCapacity;
    } finally {
      mutex.unlock();
    }
  }

  /**
   * The most semaphore holders inside at once, counting the one entering before any was fenced off.
   */
  int mostInside() {
    mutex.lock();
    try {
      return mostInside;
    } finally {
      mutex.unlock();
    }
  }

  long writes() {
    mutex.lock();
    try {
      return unguardedWrites;
    } finally {
      mutex.unlock();
    }
  }

  @Override
  public void close() throws IOException {
    socket.close();
    for (Socket s : connections) {
      s.close();
    }
  }
}
