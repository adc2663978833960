package dev.locksmith.tck.compare;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.Locks;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;

/**
 * One contender of a comparison scenario, in a JVM of its own so that it can be paused (SIGSTOP)
 * and killed (SIGKILL) for real. It takes the lock again and again, and in each turn reads both
 * counters of the {@link ResourceServer}, says {@code HELD}, works for the hold time, then writes
 * both back plus one (the fenced one with its token) and releases. It reports on stdout, one event
 * a line, timed with {@link System#nanoTime()} (one clock for every process of a Linux machine):
 * {@code HELD <token> <nanos> <nanos the acquire began>}, {@code WROTE <OK|REJECTED> <token>},
 * {@code RELEASING <token> <nanos>} (as the release starts: the turn's use of the resource is over,
 * even if the release never returns), {@code RELEASED <stillHeld> <nanos>}, {@code LOST <reason>
 * <nanos>}, {@code ERROR acquire <millis the failed acquire took> <exception>: <message>}, {@code
 * ERROR release <exception>: <message>}. It stops when its stdin closes. The URI comes from {@code
 * LOCKSMITH_URI}.
 *
 * <p>Given a fifth argument above 0, it contends for one permit of a semaphore of that many
 * instead, and its turn tells the resource server {@code ENTER <token> <permits>} as it starts and
 * {@code LEAVE <token>} (its write, answered {@code OK} or {@code REJECTED}) as it ends. Given a
 * sixth above 0, it takes a set of that many names ({@code <name>/0} ...) with {@code
 * client.locks(names)}, as a lock's turn, fencing its write with the first name's token (every
 * contender's set holds that name). Given a seventh, {@code election}, it campaigns in the election
 * of that name instead ({@code client.election(name).candidate(...)}, under an identity naming its
 * pid): each turn is one leadership, its token the term, and its release a resignation.
 */
public final class ContenderProcess {
  private ContenderProcess() {}

  /**
   * @param args lock name, lease millis, resource server port, hold millis, and optionally a
   *     semaphore's permits (0 or absent: the exclusive lock) and a set's names (0 or absent: one
   *     lock)
   * @throws Exception on a broken setup
   */
  public static void main(String[] args) throws Exception {
    String name = args[0];
    Duration lease = Duration.ofMillis(Long.parseLong(args[1]));
    int port = Integer.parseInt(args[2]);
    long holdMillis = Long.parseLong(args[3]);
    int permits = args.length > 4 ? Integer.parseInt(args[4]) : 0;
    int setNames = args.length > 5 ? Integer.parseInt(args[5]) : 0;
    boolean election = args.length > 6 && args[6].equals("election");
    java.util.List<String> names = new java.util.ArrayList<>();
    for (int i = 0; i < setNames; i++) {
      names.add(name + "/" + i);
    }
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    Thread stdinWatcher =
        new Thread(
            () -> {
              try {
                while (System.in.read() >= 0) {
                  // wait for the parent to close our stdin
                }
              } catch (Exception e) {
                // parent gone
              }
              Runtime.getRuntime().halt(0);
            },
            "stdin-watcher");
    stdinWatcher.setDaemon(true);
    stdinWatcher.start();

    LockConfig config =
        LockConfig.builder()
            .uri(System.getenv("LOCKSMITH_URI"))
            .lease(lease)
            .autoRenew(true)
            .build();
    try (LockClient client = Locks.connect(config);
        Socket socket = new Socket(InetAddress.getLoopbackAddress(), port);
        BufferedReader res =
            new BufferedReader(
                new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
        PrintWriter req =
            new PrintWriter(
                new OutputStreamWriter(socket.getOutputStream(), StandardCharsets.UTF_8), true)) {
      DistributedLock resource =
          election
              ? client.election(name).candidate("contender-" + ProcessHandle.current().pid())
              : permits > 0
                  ? client.semaphore(name, permits)
                  : setNames > 0 ? client.locks(names) : client.lock(name);
      out.println("READY");
      while (true) {
        Optional<Lease> got;
        long asked = System.nanoTime();
        try {
          got = resource.tryAcquire(Duration.ofSeconds(5));
        } catch (RuntimeException e) {
          out.println(
              "ERROR acquire "
                  + (System.nanoTime() - asked) / 1_000_000
                  + " "
                  + e.getClass().getSimpleName()
                  + ": "
                  + oneLine(e.getMessage()));
          Thread.sleep(100);
          continue;
        }
        if (got.isEmpty()) {
          continue;
        }
        Lease lease0 = got.get();
        long token = setNames > 0 ? lease0.fencingToken(names.get(0)) : lease0.fencingToken();
        lease0
            .lost()
            .thenAccept(loss -> out.println("LOST " + loss.reason() + " " + System.nanoTime()));
        if (permits > 0) {
          req.println("ENTER " + token + " " + permits);
          res.readLine();
          out.println("HELD " + token + " " + System.nanoTime() + " " + asked);
          Thread.sleep(holdMillis);
          req.println("LEAVE " + token);
          String verdict = res.readLine();
          out.println("WROTE " + (verdict.startsWith("OK") ? "OK" : "REJECTED") + " " + token);
          release(out, lease0, token);
          continue;
        }
        req.println("GET");
        String[] values = res.readLine().split(" ");
        out.println("HELD " + token + " " + System.nanoTime() + " " + asked);
        Thread.sleep(holdMillis);
        req.println("PUT " + (Long.parseLong(values[0]) + 1));
        res.readLine();
        req.println("FENCED " + token + " " + (Long.parseLong(values[1]) + 1));
        String verdict = res.readLine();
        out.println("WROTE " + (verdict.startsWith("OK") ? "OK" : "REJECTED") + " " + token);
        release(out, lease0, token);
      }
    }
  }

  /**
   * Says {@code RELEASING}, releases, then says {@code RELEASED <stillHeld> <nanos>}, both timed
   * before the release.
   */
  private static void release(PrintStream out, Lease lease, long token) {
    long end = System.nanoTime();
    out.println("RELEASING " + token + " " + end);
    boolean stillHeld;
    try {
      stillHeld = lease.release();
    } catch (RuntimeException e) {
      out.println("ERROR release " + e.getClass().getSimpleName() + ": " + oneLine(e.getMessage()));
      stillHeld = false;
    }
    out.println("RELEASED " + stillHeld + " " + end);
  }

  private static String oneLine(String s) {
    return s == null ? "" : s.replace('\n', ' ');
  }
}
