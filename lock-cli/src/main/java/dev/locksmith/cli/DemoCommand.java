package dev.locksmith.cli;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockOptions;
import dev.locksmith.spi.Durations;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * {@code lockctl demo}: several workers, each with a client of its own, take turns on one lock
 * and write through a fenced store; one of them pauses past its lease, as a long GC pause would,
 * and then writes with its stale token. The timeline shows the lock passing on, each fencing
 * token, and the store refusing the stale write.
 */
final class DemoCommand {
  static final String USAGE = String.join("\n",
      "usage: lockctl demo [--backend URI | --config FILE] [--workers N] [--rounds N] [--lease D] [--pause D]",
      "",
      "Workers take turns on one lock and write through a store that refuses fencing tokens lower",
      "than it has seen. One worker pauses longer than its lease while holding the lock: the lock",
      "passes to another worker, and the paused worker's late write is refused by the fence.",
      "",
      "  --backend URI   the lock backend (default: LOCKSMITH_URI, else local:demo, in-process)",
      "  --config FILE   a properties file with locksmith.uri and other settings",
      "  --workers N     workers, 2 to 16 (default 3)",
      "  --rounds N      turns per worker, 1 to 100 (default 3)",
      "  --lease D       lease of each turn; renewal is off, as in a frozen process (default 1s)",
      "  --pause D       how long the second worker freezes while holding the lock (default 2 x lease)",
      "",
      "Exit status: 0 when the fence refused the stale write and no update was lost, 1 otherwise.");

  private final PrintStream out;
  private long start;

  DemoCommand(PrintStream out) {
    this.out = out;
  }

  /** One holding as the demo saw it. */
  private static final class Hold {
    final String worker;
    final long token;
    final long from;
    final long to;

    Hold(String worker, long token, long from, long to) {
      this.worker = worker;
      this.token = token;
      this.from = from;
      this.to = to;
    }
  }

  int run(List<String> argv) throws InterruptedException {
    Args args = Args.parse(argv, Set.of("backend", "config", "workers", "rounds", "lease", "pause"), Set.of("help"));
    if (args.flag("help")) {
      out.println(USAGE);
      return 0;
    }
    if (!args.positional().isEmpty()) {
      throw new Args.UsageException("unexpected argument '" + args.positional().get(0) + "'");
    }
    LockConfig config = Backends.config(args, "local:demo");
    int workers = args.integer("workers", 3, 2, 16);
    int rounds = args.integer("rounds", 3, 1, 100);
    Duration lease = args.duration("lease", Duration.ofSeconds(1));
    Duration pause = args.duration("pause", lease.multipliedBy(2));
    LockOptions options = LockOptions.builder().lease(lease).autoRenew(false).reentrant(false).build();
    String lockName = "lockctl-demo/inventory";
    FencedStore store = new FencedStore();
    List<Hold> holds = new CopyOnWriteArrayList<>();

    out.printf(Locale.ROOT, "Locksmith demo on %s: %d workers, %d turns each, lock '%s', lease %s without renewal.%n",
        config.uri(), workers, rounds, lockName, Durations.format(lease));
    out.printf(Locale.ROOT, "worker-2 will freeze for %s while holding the lock, like a long GC pause.%n%n", Durations.format(pause));
    out.println("    time  worker     event");

    List<LockClient> clients = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    start = System.nanoTime();
    try {
      for (int w = 1; w <= workers; w++) {
        clients.add(Backends.connect(config));
      }
      for (int w = 1; w <= workers; w++) {
        String me = "worker-" + w;
        DistributedLock lock = clients.get(w - 1).lock(lockName, options);
        boolean pauses = w == 2;
        Thread t = new Thread(() -> {
          try {
            for (int r = 1; r <= rounds; r++) {
              turn(me, lock, store, holds, pauses && r == 1, pause);
            }
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          } catch (Throwable e) {
            failures.add(e);
            log(me, "failed: " + e);
          }
        }, me);
        threads.add(t);
        t.start();
      }
      for (Thread t : threads) {
        t.join();
      }
    } finally {
      for (LockClient c : clients) {
        c.close();
      }
    }
    return summarize(store, holds, failures, workers * rounds);
  }

  private void turn(String me, DistributedLock lock, FencedStore store, List<Hold> holds, boolean freeze, Duration pause)
      throws InterruptedException {
    Lease lease = lock.acquire(Duration.ofSeconds(60));
    long from = System.nanoTime();
    long token = lease.fencingToken();
    log(me, "acquired the lock, fencing token " + token);
    lease.lost().thenAccept(loss -> log(me, "lease lost (" + loss.reason() + "): the library's loss signal fired"));
    long seen = store.read();
    Thread.sleep(20); // the work
    if (freeze) {
      log(me, "freezes for " + Durations.format(pause) + " holding token " + token + " (its lease is " + Durations.format(lock.options().lease()) + ")");
      Thread.sleep(pause.toMillis());
      log(me, "wakes up; its lease is " + (lease.isValid() ? "still valid" : "no longer valid, but it does not check") + "; it writes anyway");
    }
    Long refusedBy = store.write(token, seen + 1);
    if (refusedBy == null) {
      log(me, "wrote counter = " + (seen + 1) + " with token " + token + ": accepted");
    } else {
      log(me, "wrote counter = " + (seen + 1) + " with token " + token + ": REFUSED, the store has seen token " + refusedBy
          + " (without fencing this write would have set the counter back: a lost update)");
    }
    boolean stillHeld = lease.release();
    long to = System.nanoTime();
    holds.add(new Hold(me, token, from, to));
    log(me, stillHeld ? "released the lock" : "released: the lease had already expired, nothing of the new holder's was freed");
  }

  private int summarize(FencedStore store, List<Hold> holds, List<Throwable> failures, int turns) {
    List<Hold> sorted = new ArrayList<>(holds);
    sorted.sort((a, b) -> Long.compare(a.from, b.from));
    boolean increasing = true;
    int overlaps = 0;
    for (int i = 1; i < sorted.size(); i++) {
      increasing &= sorted.get(i).token > sorted.get(i - 1).token;
      for (int j = 0; j < i; j++) {
        if (sorted.get(j).to - sorted.get(i).from > 0) {
          overlaps++;
        }
      }
    }
    out.println();
    out.printf(Locale.ROOT, "turns: %d of %d; fencing tokens increased with every new holder: %s%n", holds.size(), turns,
        increasing ? "yes" : "NO");
    out.printf(Locale.ROOT, "pairs of turns that overlapped (the frozen worker still believed it held the lock): %d%n", overlaps);
    out.printf(Locale.ROOT, "writes accepted: %d; stale writes refused by the fence: %d; counter = %d (no update lost: %s)%n",
        store.accepted(), store.rejected(), store.value(), store.value() == store.accepted() ? "yes" : "NO");
    boolean ok = failures.isEmpty() && increasing && store.rejected() >= 1 && store.value() == store.accepted();
    out.println(ok ? "The lease expired under the frozen worker and the lock moved on; its fencing token let the store refuse its late write."
        : "The demo did not go as expected: see the timeline above.");
    return ok ? 0 : 1;
  }

  private void log(String worker, String event) {
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    synchronized (out) {
      out.printf(Locale.ROOT, "%6d ms  %-9s  %s%n", ms, worker, event);
    }
  }
}
