package dev.locksmith.bench;

import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code sets} section of RESULTS.md (issue 31), written through {@link ResultSections}: lock
 * sets of {@value #SMALL} and {@value #LARGE} names taken all or none and released, Locksmith's
 * {@code client.locks(names)} against Redisson's {@code RedissonMultiLock} (Redis) and Curator's
 * {@code InterProcessMultiLock} (ZooKeeper) on the same servers, beside each library's single lock.
 * Uncontended (1 thread: p50, p99) and 8 threads each on sets of their own (sets/s), in interleaved
 * rounds ({@link RoundsRun}, one JVM per server and thread count); and contended, {@link
 * BenchMain#CONTENDED_CLIENTS} clients all on one set of {@value #SMALL} names ({@link
 * ContendedRun}), hand-offs/s and waiter p99 in interleaved rounds.
 */
final class SetsRun {
  static final String SECTION = "sets";
  static final int SMALL = 2;
  static final int LARGE = 10;
  static final int THREADS = 8;
  private static final Logger LOG = LoggerFactory.getLogger(SetsRun.class);

  /** One server: Locksmith's single lock and sets, and the peer's. */
  record Group(
      String label,
      String server,
      String locksmithSingle,
      String locksmithSet,
      String peerSingle,
      String peerSet,
      String peerName) {
    List<String> ids() {
      return List.of(
          locksmithSingle,
          set(locksmithSet, SMALL),
          set(locksmithSet, LARGE),
          peerSingle,
          set(peerSet, SMALL),
          set(peerSet, LARGE));
    }
  }

  static final List<Group> GROUPS =
      List.of(
          new Group(
              "Redis",
              "redis",
              "locksmith-redis",
              "locksmith-set-redis",
              "redisson-lock",
              "redisson-multilock",
              "Redisson RedissonMultiLock"),
          new Group(
              "ZooKeeper",
              "zookeeper",
              "locksmith-zookeeper",
              "locksmith-set-zookeeper",
              "curator-mutex",
              "curator-multilock",
              "Curator InterProcessMultiLock"));

  private SetsRun() {}

  static String set(String base, int size) {
    return base + "#" + size;
  }

  /**
   * Measures, then replaces the section in {@code out/RESULTS.md}.
   *
   * @param out the directory of RESULTS.md
   * @param quick short runs (a smoke test)
   * @throws Exception if the section cannot be written
   */
  static void run(Path out, boolean quick) throws Exception {
    Instant started = Instant.now();
    String loadBefore = Machine.loadAverage();
    Map<String, String> skipped = new LinkedHashMap<>();
    Map<String, double[]> rounds = new LinkedHashMap<>();
    int n = quick ? 3 : 6;
    long warmupMs = quick ? 1_000 : 6_000;
    long roundMs = quick ? 500 : 1_500;
    for (Group g : GROUPS) {
      if (Endpoints.get(g.server) == null) {
        skipped.put(g.label, "no " + g.server + " server");
        continue;
      }
      for (int threads : new int[] {1, THREADS}) {
        LOG.info(
            "sets on {}, {} thread(s), {} interleaved rounds: {}", g.label, threads, n, g.ids());
        Properties p =
            BenchMain.childOrError(
                RoundsRun.class,
                Integer.toString(threads),
                Long.toString(warmupMs),
                Long.toString(roundMs),
                Integer.toString(n),
                String.join(",", g.ids()));
        if (p.getProperty("firstError") != null) {
          LOG.error("sets on {} failed: {}", g.label, p.getProperty("firstError"));
          skipped.put(g.label + "/" + threads, p.getProperty("firstError"));
        }
        for (String id : g.ids()) {
          if (threads == 1) {
            rounds.put(id + "/p50Us", BenchMain.perRound(p, id, "p50Us", n));
            rounds.put(id + "/p99Us", BenchMain.perRound(p, id, "p99Us", n));
          } else {
            rounds.put(id + "/opsPerSec", BenchMain.perRound(p, id, "opsPerSec", n));
          }
        }
      }
    }
    // contended: the clients of one JVM, each its own connection or session, all on one set of
    // SMALL names, Locksmith's and the peer's in interleaved rounds (order reversed every other)
    int cRounds = quick ? 2 : 5;
    long cWarmupMs = quick ? 500 : 1_500;
    long cMeasureMs = quick ? 1_500 : 3_000;
    for (Group g : GROUPS) {
      if (Endpoints.get(g.server) == null) {
        continue;
      }
      List<String> ids = List.of(set(g.locksmithSet, SMALL), set(g.peerSet, SMALL));
      Map<String, List<Properties>> byImpl =
          BenchMain.contendedRounds(
              "sets contended on " + g.label + " (one set)", ids, cRounds, cWarmupMs, cMeasureMs);
      for (Map.Entry<String, List<Properties>> e : byImpl.entrySet()) {
        for (Properties p : e.getValue()) {
          if (p.getProperty("firstError") != null) {
            skipped.put(e.getKey() + "/contended", p.getProperty("firstError"));
          }
        }
      }
      BenchMain.perRoundValues(
          byImpl, List.of("handoffsPerSec", "waiterP99Us", "overlaps"), rounds);
    }
    String header = ResultSections.measured("SetsRun", SECTION, started, loadBefore, quick);
    String versions =
        "Servers: "
            + JdbcPeersRun.env("BENCH_REDIS_VERSION")
            + "; "
            + JdbcPeersRun.env("BENCH_ZOOKEEPER_VERSION")
            + ". Peers: Redisson "
            + JdbcPeersRun.version(org.redisson.Redisson.class, "org.redisson/redisson")
            + ", Curator "
            + JdbcPeersRun.version(
                org.apache.curator.framework.recipes.locks.InterProcessMultiLock.class,
                "org.apache.curator/curator-recipes")
            + ".";
    Path results = out.resolve("RESULTS.md");
    ResultSections.write(
        results,
        SECTION,
        markdown(
            header,
            versions,
            rounds,
            skipped,
            new long[] {n, warmupMs, roundMs, cRounds, cWarmupMs, cMeasureMs}));
    LOG.info("wrote the {} section of {}", SECTION, results);
  }

  static String markdown(
      String header,
      String versions,
      Map<String, double[]> rounds,
      Map<String, String> skipped,
      long[] u) {
    StringBuilder md = new StringBuilder();
    md.append("## Lock sets (issue 31)\n\n")
        .append(header)
        .append("\n\n")
        .append(versions)
        .append(" A set of N names `name/0` … `name/N-1` taken all or none, then released:")
        .append(" Locksmith's `client.locks(names)` with default options (30 s lease, auto-renew,")
        .append(" a token per name); Redisson's `getMultiLock(RLock...)` (`lock()` / `unlock()`,")
        .append(" watchdog lease); Curator's `InterProcessMultiLock` over N mutex paths (30 s")
        .append(" session). Beside them each library's single lock. One client per JVM, shared by")
        .append(" its threads, each thread on sets of its own (uncontended). ")
        .append(u[0])
        .append(" interleaved rounds of ")
        .append(u[2])
        .append(" ms after ")
        .append(u[1])
        .append(" ms of warm-up (`RoundsRun`, one JVM per server and thread count). Ratios are")
        .append(" medians of the per-round ratios, spread their min–max. Goals (issue 31): ahead")
        .append(" of the peer on every row (p50 ratio < 1, sets/s ratio > 1), and on Redis a ")
        .append(LARGE)
        .append("-name set's p50 within 1.5x the single lock's.\n\n");
    md.append("| server | ratio | figures | median | spread | goal |\n|---|---|---|---|---|---|\n");
    for (Group g : GROUPS) {
      for (int size : new int[] {SMALL, LARGE}) {
        String mine = set(g.locksmithSet, size);
        String theirs = set(g.peerSet, size);
        row(
            md,
            g.label,
            size + "-name set, 1 thread p50, Locksmith / " + g.peerName,
            rounds.get(mine + "/p50Us"),
            rounds.get(theirs + "/p50Us"),
            " µs",
            "< 1.00",
            1.0,
            false);
        row(
            md,
            g.label,
            size + "-name set, " + THREADS + " threads sets/s, Locksmith / " + g.peerName,
            rounds.get(mine + "/opsPerSec"),
            rounds.get(theirs + "/opsPerSec"),
            "/s",
            "> 1.00",
            1.0,
            true);
      }
      String mine = set(g.locksmithSet, SMALL);
      String theirs = set(g.peerSet, SMALL);
      row(
          md,
          g.label,
          "contended " + SMALL + "-name set, hand-offs/s, Locksmith / " + g.peerName,
          rounds.get(mine + "/handoffsPerSec"),
          rounds.get(theirs + "/handoffsPerSec"),
          "/s",
          "> 1.00",
          1.0,
          true);
      row(
          md,
          g.label,
          "contended " + SMALL + "-name set, waiter p99, Locksmith / " + g.peerName,
          rounds.get(mine + "/waiterP99Us"),
          rounds.get(theirs + "/waiterP99Us"),
          " µs",
          "< 1.00",
          1.0,
          false);
      row(
          md,
          g.label,
          LARGE + "-name set p50 / single lock p50, Locksmith",
          rounds.get(set(g.locksmithSet, LARGE) + "/p50Us"),
          rounds.get(g.locksmithSingle + "/p50Us"),
          " µs",
          g.server.equals("redis") ? "≤ 1.50" : "information",
          g.server.equals("redis") ? 1.5 : Double.NaN,
          false);
      row(
          md,
          g.label,
          LARGE + "-name set p50 / single lock p50, " + g.peerName,
          rounds.get(set(g.peerSet, LARGE) + "/p50Us"),
          rounds.get(g.peerSingle + "/p50Us"),
          " µs",
          "information",
          Double.NaN,
          false);
    }
    md.append(
            "\nEvery implementation (µs for p50 and p99 at 1 thread, sets or locks per second at ")
        .append(THREADS)
        .append(" threads; median over the rounds, min–max in brackets):\n\n")
        .append("| server | implementation | p50 | p99 | ")
        .append(THREADS)
        .append(" threads /s |\n|---|---|---|---|---|\n");
    for (Group g : GROUPS) {
      for (String id : g.ids()) {
        md.append("| ")
            .append(g.label)
            .append(" | `")
            .append(id)
            .append("` | ")
            .append(withSpread(rounds.get(id + "/p50Us")))
            .append(" | ")
            .append(withSpread(rounds.get(id + "/p99Us")))
            .append(" | ")
            .append(withSpread(rounds.get(id + "/opsPerSec")))
            .append(" |\n");
      }
    }
    md.append("\nContended: ")
        .append(BenchMain.CONTENDED_CLIENTS)
        .append(" clients in one JVM (each its own connection or session) all take the same set")
        .append(" of ")
        .append(SMALL)
        .append(" names, hold it for 1 ms (parked), release and ask again (`ContendedRun`); ")
        .append(u[3])
        .append(" interleaved rounds of ")
        .append(u[5])
        .append(" ms after ")
        .append(u[4])
        .append(" ms of warm-up. A hand-off is a set passing from one client to another; the")
        .append(" waiter p99 is over the acquisitions that had to wait; an overlap would be two")
        .append(" clients holding the set at once.\n\n")
        .append("| server | implementation | hand-offs/s | waiter p99 µs | overlaps |\n")
        .append("|---|---|---|---|---|\n");
    for (Group g : GROUPS) {
      for (String id : List.of(set(g.locksmithSet, SMALL), set(g.peerSet, SMALL))) {
        double[] overlaps = rounds.get(id + "/overlaps");
        double total = 0;
        if (overlaps != null) {
          for (double o : overlaps) {
            total += Double.isNaN(o) ? 0 : o;
          }
        }
        md.append("| ")
            .append(g.label)
            .append(" | `")
            .append(id)
            .append("` | ")
            .append(withSpread(rounds.get(id + "/handoffsPerSec")))
            .append(" | ")
            .append(withSpread(rounds.get(id + "/waiterP99Us")))
            .append(" | ")
            .append(overlaps == null ? "–" : Long.toString(Math.round(total)))
            .append(" |\n");
      }
    }
    for (Map.Entry<String, String> e : skipped.entrySet()) {
      md.append("\nNot measured: ")
          .append(e.getKey())
          .append(": ")
          .append(e.getValue().replace("|", "/"))
          .append("\n");
    }
    md.append(
        "\nEvery client of the contended rows takes the same set: sets that overlap in part (some"
            + " names shared) are not measured. Rerun: `lock-bench/run-bench.sh --only sets` (about"
            + " 9 minutes).\n");
    return md.toString();
  }

  static void row(
      StringBuilder md,
      String label,
      String what,
      double[] a,
      double[] b,
      String unit,
      String goalText,
      double goal,
      boolean higherIsBetter) {
    md.append("| ").append(label).append(" | ").append(what).append(" | ");
    double[] r = a == null || b == null ? null : Rounds.ratios(a, b);
    if (r == null) {
      md.append("not measured | | | ").append(goalText).append(" |\n");
      return;
    }
    String verdict = "";
    if (!Double.isNaN(goal)) {
      boolean met = higherIsBetter ? Rounds.min(r) > goal : Rounds.max(r) < goal;
      boolean missed = higherIsBetter ? Rounds.max(r) < goal : Rounds.min(r) > goal;
      verdict = met ? ": met" : missed ? ": missed" : ": undecided";
    }
    md.append(Report.fmt(Rounds.median(a)))
        .append(unit)
        .append(" / ")
        .append(Report.fmt(Rounds.median(b)))
        .append(unit)
        .append(" | ")
        .append(Report.fmt2(Rounds.median(r)))
        .append(" | ")
        .append(Report.fmt2(Rounds.min(r)).replace("×", ""))
        .append("–")
        .append(Report.fmt2(Rounds.max(r)))
        .append(" (")
        .append(r.length)
        .append(" rounds) | ")
        .append(goalText)
        .append(verdict)
        .append(" |\n");
  }

  static String withSpread(double[] v) {
    if (v == null) {
      return "–";
    }
    return Report.fmt(Rounds.median(v))
        + " ("
        + Report.fmt(Rounds.min(v))
        + "–"
        + Report.fmt(Rounds.max(v))
        + ")";
  }
}
