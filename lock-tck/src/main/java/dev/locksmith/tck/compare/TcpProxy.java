package dev.locksmith.tck.compare;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * A TCP proxy on a loopback port in front of a lock server, to cut one client off or slow its link
 * down: while {@link #blackhole(boolean) blackholed} it keeps every connection open but forwards
 * nothing in either direction, as a network partition does (no reset, no error: only silence; new
 * connections are accepted and left silent too). While {@link #delay(Duration) delayed}, every
 * chunk of bytes read from either side is forwarded that long after it arrived, in order, as over a
 * congested or long link: nothing is lost, everything is late. {@link #silence(Direction, boolean)}
 * blackholes one direction only (a one-way partition): what one side sends arrives, what the other
 * sends waits until the direction is opened again.
 */
public final class TcpProxy implements AutoCloseable {
  private final InetSocketAddress target;
  private final ServerSocket listener;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final Object gate = new Object();
  private volatile boolean silentToServer;
  private volatile boolean silentToClient;

  /** One direction of every connection through the proxy. */
  public enum Direction {
    /** What the client sends to the server: its requests. */
    TO_SERVER,
    /** What the server sends to the client: its replies and notifications. */
    TO_CLIENT
  }

  private volatile long delayNanos;
  private volatile boolean closed;

  /**
   * @param target the server to forward to
   * @throws IOException if no loopback port can be bound
   */
  public TcpProxy(InetSocketAddress target) throws IOException {
    this.target = target;
    this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(this::accept, "tcp-proxy-" + listener.getLocalPort());
    t.setDaemon(true);
    t.start();
  }

  /**
   * @return the proxy's own address: point the cut-off client here
   */
  public InetSocketAddress address() {
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), listener.getLocalPort());
  }

  /**
   * @param on true to stop forwarding (partition), false to forward again (heal)
   */
  public void blackhole(boolean on) {
    silence(Direction.TO_SERVER, on);
    silence(Direction.TO_CLIENT, on);
  }

  /**
   * @param direction the direction to stop or start forwarding
   * @param on true to stop forwarding it (a one-way partition), false to forward it again; what was
   *     held back then goes on, in order, as TCP delivers it once a partition heals
   */
  public void silence(Direction direction, boolean on) {
    if (direction == Direction.TO_SERVER) {
      silentToServer = on;
    } else {
      silentToClient = on;
    }
    if (!on) {
      synchronized (gate) {
        gate.notifyAll();
      }
    }
  }

  /**
   * @param oneWay how late to forward each chunk read from now on, in each direction (zero for no
   *     delay); chunks already waiting keep their time, and order is always kept
   */
  public void delay(Duration oneWay) {
    Objects.requireNonNull(oneWay, "oneWay");
    if (oneWay.isNegative()) {
      throw new IllegalArgumentException(
          "`oneWay` was " + oneWay.toMillis() + "ms but it must be zero or more");
    }
    delayNanos = oneWay.toNanos();
  }

  private void accept() {
    while (!closed) {
      try {
        Socket client = listener.accept();
        Socket server = new Socket();
        server.connect(target, 5000);
        sockets.add(client);
        sockets.add(server);
        pump(client, server, Direction.TO_SERVER);
        pump(server, client, Direction.TO_CLIENT);
      } catch (IOException e) {
        if (closed) {
          return;
        }
      }
    }
  }

  /** One chunk on its way, and when it may go on. */
  private static final class Chunk {
    final byte[] bytes;
    final long dueNanos;

    Chunk(byte[] bytes, long dueNanos) {
      this.bytes = bytes;
      this.dueNanos = dueNanos;
    }
  }

  private static final Chunk END = new Chunk(new byte[0], 0);

  /**
   * Reads one side into a queue and writes the queue to the other side, each chunk when it is due.
   */
  private void pump(Socket from, Socket to, Direction direction) {
    BlockingQueue<Chunk> queue = new LinkedBlockingQueue<>();
    Thread reader =
        new Thread(
            () -> {
              byte[] buf = new byte[16 * 1024];
              try {
                InputStream in = from.getInputStream();
                for (int n; (n = in.read(buf)) >= 0; ) {
                  synchronized (gate) {
                    while ((direction == Direction.TO_SERVER ? silentToServer : silentToClient)
                        && !closed) {
                      gate.wait();
                    }
                  }
                  byte[] chunk = new byte[n];
                  System.arraycopy(buf, 0, chunk, 0, n);
                  queue.add(new Chunk(chunk, System.nanoTime() + delayNanos));
                }
              } catch (IOException e) {
                // this side closed
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              } finally {
                queue.add(END);
              }
            },
            "tcp-proxy-read");
    Thread writer =
        new Thread(
            () -> {
              try {
                OutputStream out = to.getOutputStream();
                for (Chunk c; (c = queue.take()) != END; ) {
                  long wait = c.dueNanos - System.nanoTime();
                  if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                  }
                  out.write(c.bytes);
                  out.flush();
                }
              } catch (IOException e) {
                // the other side closed
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              } finally {
                try {
                  from.close();
                  to.close();
                } catch (IOException e) {
                  // closing anyway
                }
              }
            },
            "tcp-proxy-write");
    reader.setDaemon(true);
    writer.setDaemon(true);
    reader.start();
    writer.start();
  }

  @Override
  public void close() throws IOException {
    closed = true;
    blackhole(false);
    listener.close();
    for (Socket s : sockets) {
      s.close();
    }
  }
}
