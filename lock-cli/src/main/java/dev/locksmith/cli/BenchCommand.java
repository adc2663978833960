package dev.locksmith.cli;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockException;
import dev.locksmith.LockOptions;
import dev.locksmith.spi.Durations;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code lockctl bench}: the workloads of lock-bench (uncontended latency, throughput on distinct
 * names, contended hand-offs) against any backend URI, each measured in the same run on {@code
 * local:} too, so that the ratio shows what the backend's round trips cost on top of the library.
 * The side-by-side with raw protocol floors and other lock libraries is lock-bench's.
 */
final class BenchCommand {
  static final String USAGE =
      String.join(
          "\n",
          "usage: lockctl bench [--backend URI | --config FILE] [--duration D] [--threads N]"
              + " [--clients N] [--hold D]",
          "",
          "Measures a backend with the workloads of lock-bench, and measures the same on local:"
              + " (the library",
          "with no network or server) in the same run, as the baseline of each ratio:",
          "  uncontended   1 thread acquires and releases a lock nobody else wants: latency p50,"
              + " p99",
          "  throughput    --threads threads of one client, each on its own lock: acquire + release"
              + " per second",
          "  contended     --clients clients (a connection or session each) on one lock, each"
              + " holding it for",
          "                --hold: hand-offs per second (acquisitions by another client than the"
              + " last holder),",
          "                wait p50, p99 and max, and the share of acquisitions of the busiest and"
              + " idlest client",
          "",
          "  --backend URI   the backend (default: LOCKSMITH_URI)",
          "  --config FILE   a properties file with locksmith.uri and other settings",
          "  --duration D    how long each workload runs, after a warm-up of a third of it (default"
              + " 3s; 500ms to 10m)",
          "  --threads N     threads of the throughput workload, 1 to 64 (default 8)",
          "  --clients N     clients of the contended workload, 2 to 32 (default 4)",
          "  --hold D        how long a contended holder keeps the lock, as simulated work (default"
              + " 1ms; 1ms to 1s)",
          "",
          "The last column says how many times slower or faster than local: the backend is, the"
              + " same way on",
          "every row: a longer time and a lower rate are both slower.",
          "Figures from one machine at one time: compare the ratios of one run, not figures across"
              + " runs.",
          "The side-by-side with the raw protocol, Redisson, Curator and jetcd:"
              + " lock-bench/run-bench.sh in",
          "the source tree.",
          "",
          "Exit status: 0 when every workload ran, 1 if one failed, 69 if the backend cannot be"
              + " reached.");

  /** The ratio column's heading: every row reads the same way. */
  static final String RATIO_COLUMN = "backend vs local:";

  private static final boolean LOWER_IS_BETTER = false;
  private static final boolean HIGHER_IS_BETTER = true;

  private final PrintStream out;
  private final PrintStream err;

  BenchCommand(PrintStream out, PrintStream err) {
    this.out = out;
    this.err = err;
  }

  /** The figures of one backend. */
  private static final class Figures {
    double p50Micros;
    double p99Micros;
    double opsPerSecond;
    double handoffsPerSecond;
    double waitP50Micros;
    double waitP99Micros;
    double waitMaxMicros;
    double busiestShare;
    double idlestShare;
    long acquisitions;
  }

  int run(List<String> argv) throws InterruptedException {
    Args args =
        Args.parse(
            argv,
            Set.of("backend", "config", "duration", "threads", "clients", "hold"),
            Set.of("help", "verbose"));
    if (args.flag("help")) {
      out.println(USAGE);
      return Main.OK;
    }
    if (!args.positional().isEmpty()) {
      throw new Args.UsageException("unexpected argument '" + args.positional().get(0) + "'");
    }
    Duration duration =
        args.duration(
            "duration", Duration.ofSeconds(3), Duration.ofMillis(500), Duration.ofMinutes(10));
    int threads = args.integer("threads", 8, 1, 64);
    int clients = args.integer("clients", 4, 2, 32);
    Duration hold =
        args.duration("hold", Duration.ofMillis(1), Duration.ofMillis(1), Duration.ofSeconds(1));
    Backends.Backend backend = Backends.resolve(args, null);
    Backends.Backend baseline =
        Backends.fromUri("the baseline", "local:lockctl-bench-" + ProcessHandle.current().pid());
    String name = backend.display();
    out.printf(
        Locale.ROOT,
        "lockctl bench: %s against local: in the same run; each workload %s after %s of warm-up.%n",
        name,
        Durations.format(duration),
        Durations.format(duration.dividedBy(3)));
    Figures measured = measure(backend, name, duration, threads, clients, hold);
    Figures base = measure(baseline, "local: (baseline)", duration, threads, clients, hold);
    out.println();
    out.printf(
        Locale.ROOT, "| figure | %s | local: | %s |%n|---|---:|---:|---:|%n", name, RATIO_COLUMN);
    row(
        "uncontended acquire + release, p50 (µs)",
        measured.p50Micros,
        base.p50Micros,
        LOWER_IS_BETTER);
    row(
        "uncontended acquire + release, p99 (µs)",
        measured.p99Micros,
        base.p99Micros,
        LOWER_IS_BETTER);
    row(
        threads + " threads on distinct locks (ops/s)",
        measured.opsPerSecond,
        base.opsPerSecond,
        HIGHER_IS_BETTER);
    row(
        clients + " clients on one lock: hand-offs/s",
        measured.handoffsPerSecond,
        base.handoffsPerSecond,
        HIGHER_IS_BETTER);
    row(
        clients + " clients on one lock: wait p50 (µs)",
        measured.waitP50Micros,
        base.waitP50Micros,
        LOWER_IS_BETTER);
    row(
        clients + " clients on one lock: wait p99 (µs)",
        measured.waitP99Micros,
        base.waitP99Micros,
        LOWER_IS_BETTER);
    row(
        clients + " clients on one lock: wait max (µs)",
        measured.waitMaxMicros,
        base.waitMaxMicros,
        LOWER_IS_BETTER);
    out.printf(
        Locale.ROOT,
        "| %d clients on one lock: busiest / idlest client's share of %d acquisitions | %.0f%% /"
            + " %.0f%% | %.0f%% / %.0f%% | |%n",
        clients,
        measured.acquisitions,
        measured.busiestShare * 100,
        measured.idlestShare * 100,
        base.busiestShare * 100,
        base.idlestShare * 100);
    out.println();
    out.println(
        "The last column reads the same on every row: how many times slower or faster than local:"
            + " the backend is; a longer time and a lower rate are both slower.");
    out.println(
        "A fair lock gives each client about 1/"
            + clients
            + " of the acquisitions; a lock that barges lets the releasing"
            + " client take it again, with few hand-offs and long waits.");
    return Main.OK;
  }

  private void row(String figure, double value, double baseline, boolean higherIsBetter) {
    out.printf(
        Locale.ROOT,
        "| %s | %s | %s | %s |%n",
        figure,
        number(value),
        number(baseline),
        ratio(value, baseline, higherIsBetter));
  }

  /**
   * @return how many times slower or faster than the baseline the backend is, in words, so that a
   *     time and a rate read the same way: "250x slower" is worse on either kind of row
   */
  static String ratio(double value, double baseline, boolean higherIsBetter) {
    if (value <= 0 || baseline <= 0) {
      return "-";
    }
    double slower = higherIsBetter ? baseline / value : value / baseline;
    if (slower >= 0.995 && slower < 1.005) {
      return "as fast";
    }
    double factor = slower >= 1 ? slower : 1 / slower;
    return String.format(
        Locale.ROOT,
        factor >= 10 ? "%.0fx %s" : "%.1fx %s",
        factor,
        slower >= 1 ? "slower" : "faster");
  }

  private static String number(double v) {
    return v >= 100
        ? String.format(Locale.ROOT, "%,.0f", v)
        : String.format(Locale.ROOT, "%.1f", v);
  }

  private Figures measure(
      Backends.Backend backend,
      String label,
      Duration duration,
      int threads,
      int clients,
      Duration hold)
      throws InterruptedException {
    Figures f = new Figures();
    LockOptions options = LockOptions.builder().reentrant(false).build();
    String run = Long.toHexString(System.nanoTime());
    try (LockClient client = backend.connect()) {
      progress(label, "uncontended, 1 thread");
      long[] latencies = loop(client, options, 1, "lockctl-bench/" + run + "/u", duration)[0];
      Arrays.sort(latencies);
      f.p50Micros = percentile(latencies, 0.50) / 1e3;
      f.p99Micros = percentile(latencies, 0.99) / 1e3;
      progress(label, threads + " threads on distinct locks");
      long[][] perThread = loop(client, options, threads, "lockctl-bench/" + run + "/t", duration);
      long ops = 0;
      for (long[] t : perThread) {
        ops += t.length;
      }
      f.opsPerSecond = ops / (duration.toNanos() / 1e9);
    }
    progress(label, clients + " clients on one lock, holding " + Durations.format(hold));
    contended(backend, options, clients, hold, "lockctl-bench/" + run + "/c", duration, f);
    return f;
  }

  private void progress(String label, String what) {
    err.printf(Locale.ROOT, "  measuring %s: %s%n", label, what);
  }

  /**
   * @return per thread, the latency of each acquire + release in the measured part
   */
  private static long[][] loop(
      LockClient client, LockOptions options, int threads, String prefix, Duration duration)
      throws InterruptedException {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      long warmEnd = System.nanoTime() + duration.toNanos() / 3;
      long end = warmEnd + duration.toNanos();
      List<Future<long[]>> results = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        DistributedLock lock = client.lock(prefix + "/" + t, options);
        results.add(
            pool.submit(
                () -> {
                  LongBuffer samples = new LongBuffer();
                  while (true) {
                    long t0 = System.nanoTime();
                    if (t0 - end >= 0) {
                      return samples.toArray();
                    }
                    Lease lease = lock.acquire(Duration.ofSeconds(30));
                    lease.release();
                    long t1 = System.nanoTime();
                    if (t0 - warmEnd >= 0) {
                      samples.add(t1 - t0);
                    }
                  }
                }));
      }
      return collect(results);
    } finally {
      pool.shutdownNow();
    }
  }

  private static void contended(
      Backends.Backend backend,
      LockOptions options,
      int clients,
      Duration hold,
      String name,
      Duration duration,
      Figures f)
      throws InterruptedException {
    List<LockClient> opened = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(clients);
    try {
      for (int c = 0; c < clients; c++) {
        opened.add(backend.connect());
      }
      long warmEnd = System.nanoTime() + duration.toNanos() / 3;
      long end = warmEnd + duration.toNanos();
      AtomicInteger lastHolder = new AtomicInteger(-1);
      AtomicInteger handoffs = new AtomicInteger();
      List<Future<long[]>> results = new ArrayList<>();
      for (int c = 0; c < clients; c++) {
        int me = c;
        DistributedLock lock = opened.get(c).lock(name, options);
        results.add(
            pool.submit(
                () -> {
                  LongBuffer waits = new LongBuffer();
                  while (true) {
                    long t0 = System.nanoTime();
                    if (t0 - end >= 0) {
                      return waits.toArray();
                    }
                    Lease lease = lock.acquire(Duration.ofSeconds(60));
                    long t1 = System.nanoTime();
                    boolean measured = t0 - warmEnd >= 0;
                    if (lastHolder.getAndSet(me) != me && measured) {
                      handoffs.incrementAndGet();
                    }
                    if (measured) {
                      waits.add(t1 - t0);
                    }
                    LockSupport.parkNanos(hold.toNanos()); // the work
                    lease.release();
                  }
                }));
      }
      long[][] perClient = collect(results);
      long total = 0;
      long most = 0;
      long least = Long.MAX_VALUE;
      for (long[] w : perClient) {
        total += w.length;
        most = Math.max(most, w.length);
        least = Math.min(least, w.length);
      }
      long[] all = new long[(int) total];
      int i = 0;
      for (long[] w : perClient) {
        System.arraycopy(w, 0, all, i, w.length);
        i += w.length;
      }
      Arrays.sort(all);
      f.acquisitions = total;
      f.handoffsPerSecond = handoffs.get() / (duration.toNanos() / 1e9);
      f.waitP50Micros = percentile(all, 0.50) / 1e3;
      f.waitP99Micros = percentile(all, 0.99) / 1e3;
      f.waitMaxMicros = percentile(all, 1.0) / 1e3;
      f.busiestShare = total == 0 ? 0 : most / (double) total;
      f.idlestShare = total == 0 ? 0 : least / (double) total;
    } finally {
      pool.shutdownNow();
      for (LockClient c : opened) {
        c.close();
      }
    }
  }

  private static long[][] collect(List<Future<long[]>> results) throws InterruptedException {
    long[][] out = new long[results.size()][];
    for (int i = 0; i < out.length; i++) {
      try {
        out[i] = results.get(i).get();
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        if (cause instanceof LockException) {
          throw (LockException) cause;
        }
        throw new LockException("a benchmark thread failed: " + cause, cause);
      }
    }
    return out;
  }

  /**
   * @return the value at quantile q of sorted samples (nearest rank), 0 if there are none
   */
  static double percentile(long[] sorted, double q) {
    if (sorted.length == 0) {
      return 0;
    }
    int rank = (int) Math.ceil(q * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank))];
  }

  /** A growable array of longs, so that samples are not boxed while measuring. */
  private static final class LongBuffer {
    private long[] values = new long[1024];
    private int size;

    void add(long v) {
      if (size == values.length) {
        values = Arrays.copyOf(values, size * 2);
      }
      values[size++] = v;
    }

    long[] toArray() {
      return Arrays.copyOf(values, size);
    }
  }
}
