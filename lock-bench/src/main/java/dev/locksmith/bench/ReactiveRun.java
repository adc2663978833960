package dev.locksmith.bench;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code reactive} section of RESULTS.md (issue 33), written through {@link ResultSections}:
 * acquire + release through lock-reactor's {@code ReactiveLocks.withLockMono} against the blocking
 * API on the same client and server, and against Redisson's {@code RLockReactive} on the same
 * Redis. Uncontended, in interleaved rounds ({@link RoundsRun}, one JVM per server): 1 thread
 * (latency of each operation) and 8 threads on names of their own (operations per second). Goals on
 * Redis: the reactive form costs at most 10% over the blocking one (p50 ratio at most 1.10,
 * throughput ratio at least 0.90), and it is ahead of {@code RLockReactive} on both rows.
 */
final class ReactiveRun {
  static final String SECTION = "reactive";
  private static final Logger LOG = LoggerFactory.getLogger(ReactiveRun.class);

  /** One server's implementations: Locksmith blocking, Locksmith reactive, then peers. */
  private static final Map<String, List<String>> GROUPS = new LinkedHashMap<>();

  static {
    GROUPS.put("local", List.of("locksmith-local", "locksmith-reactive-local"));
    GROUPS.put(
        "redis",
        List.of(
            "locksmith-redis", "locksmith-reactive-redis", "redisson-lock", "redisson-reactive"));
  }

  private ReactiveRun() {}

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
    int rounds = quick ? 3 : BenchMain.UNCONTENDED_ROUNDS;
    long warmupMs = quick ? 1_000 : 8_000;
    long roundMs = quick ? 300 : 1_000;
    // <id>/p50Us, <id>/p99Us (1 thread), <id>/opsPerSec (8 threads): one figure per round
    Map<String, double[]> figures = new LinkedHashMap<>();
    List<String> skipped = new ArrayList<>();
    for (int threads : new int[] {1, 8}) {
      for (Map.Entry<String, List<String>> g : GROUPS.entrySet()) {
        if (!g.getKey().equals("local") && Endpoints.get(g.getKey()) == null) {
          if (threads == 1) {
            skipped.add(g.getKey());
          }
          continue;
        }
        LOG.info(
            "reactive, {} thread(s), {} interleaved rounds: {}", threads, rounds, g.getValue());
        Properties p =
            BenchMain.childOrError(
                RoundsRun.class,
                Integer.toString(threads),
                Long.toString(warmupMs),
                Long.toString(roundMs),
                Integer.toString(rounds),
                String.join(",", g.getValue()));
        if (p.getProperty("firstError") != null) {
          LOG.error("reactive on {} failed: {}", g.getKey(), p.getProperty("firstError"));
        }
        for (String id : g.getValue()) {
          for (String key : threads == 1 ? List.of("p50Us", "p99Us") : List.of("opsPerSec")) {
            figures.put(id + "/" + key, BenchMain.perRound(p, id, key, rounds));
          }
        }
      }
    }
    String header =
        ResultSections.measured("ReactiveRun", "reactive", started, loadBefore, quick)
            + " Server: "
            + JdbcPeersRun.env("BENCH_REDIS_VERSION")
            + "; Redisson "
            + JdbcPeersRun.version(org.redisson.Redisson.class, "org.redisson/redisson")
            + ".";
    Path results = out.resolve("RESULTS.md");
    ResultSections.write(
        results, SECTION, markdown(header, figures, skipped, rounds, warmupMs, roundMs));
    LOG.info("wrote the {} section of {}", SECTION, results);
  }

  /** One ratio row: which, a / b per round, the bound and its direction (null: information). */
  private record Row(
      String server, String what, String a, String b, String key, Double bound, boolean atMost) {}

  private static final List<Row> ROWS =
      List.of(
          new Row(
              "local:",
              "reactive / blocking, 1 thread p50",
              "locksmith-reactive-local",
              "locksmith-local",
              "p50Us",
              null,
              true),
          new Row(
              "local:",
              "reactive / blocking, 8 threads ops/s",
              "locksmith-reactive-local",
              "locksmith-local",
              "opsPerSec",
              null,
              false),
          new Row(
              "Redis",
              "reactive / blocking, 1 thread p50",
              "locksmith-reactive-redis",
              "locksmith-redis",
              "p50Us",
              1.10,
              true),
          new Row(
              "Redis",
              "reactive / blocking, 8 threads ops/s",
              "locksmith-reactive-redis",
              "locksmith-redis",
              "opsPerSec",
              0.90,
              false),
          new Row(
              "Redis",
              "Locksmith reactive / Redisson RLockReactive, 1 thread p50",
              "locksmith-reactive-redis",
              "redisson-reactive",
              "p50Us",
              1.0,
              true),
          new Row(
              "Redis",
              "Locksmith reactive / Redisson RLockReactive, 8 threads ops/s",
              "locksmith-reactive-redis",
              "redisson-reactive",
              "opsPerSec",
              1.0,
              false),
          new Row(
              "Redis",
              "Redisson: RLockReactive / RLock, 1 thread p50 (its own overhead)",
              "redisson-reactive",
              "redisson-lock",
              "p50Us",
              null,
              true));

  static String markdown(
      String header,
      Map<String, double[]> figures,
      List<String> skipped,
      int rounds,
      long warmupMs,
      long roundMs) {
    StringBuilder md = new StringBuilder();
    md.append("## Reactive acquire + release (issue 33)\n\n")
        .append(header)
        .append("\n\n")
        .append(
            "Each operation is one pipeline, subscribed to and awaited by the benchmark thread:"
                + " Locksmith's `ReactiveLocks.withLockMono(name, 30 s, lease -> Mono.just(1))`"
                + " (acquire without blocking, the body, the release, then the value), against the"
                + " blocking `lock(name).acquire()` + `close()` on the same kind of client, and"
                + " Redisson's `RLockReactive.lock(id).then(unlock(id))` (watchdog on, as"
                + " Locksmith's default options renew) against its `RLock`. Uncontended: 1 thread"
                + " (latency of every operation) and 8 threads on names of their own (operations"
                + " per second), ")
        .append(rounds)
        .append(" interleaved rounds of ")
        .append(roundMs)
        .append(" ms after ")
        .append(warmupMs)
        .append(
            " ms of warm-up each (`RoundsRun`, one JVM per server). Ratios are medians of the"
                + " per-round ratios, spread their min–max; a verdict is met only when the"
                + " median's interval is on the right side of the bound.\n\n");
    md.append("| server | ratio | figures | median | spread | goal | verdict |\n")
        .append("|---|---|---|---|---|---|---|\n");
    for (Row row : ROWS) {
      double[] a = figures.get(row.a() + "/" + row.key());
      double[] b = figures.get(row.b() + "/" + row.key());
      String unit = row.key().equals("p50Us") ? " µs" : "/s";
      md.append("| ").append(row.server()).append(" | ").append(row.what()).append(" | ");
      double[] r = a == null || b == null ? null : Rounds.ratios(a, b);
      if (r == null) {
        md.append(
                skipped.contains(row.server().equals("Redis") ? "redis" : "local")
                    ? "skipped: no server"
                    : "not measured (lock-bench/target/bench.log says why)")
            .append(" | | | | |\n");
        continue;
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
          .append(" | ")
          .append(
              row.bound() == null
                  ? "information"
                  : (row.atMost() ? "≤ " : "≥ ") + Report.fmtBound(row.bound()))
          .append(" | ")
          .append(row.bound() == null ? "–" : Rounds.verdict(r, row.atMost(), row.bound()))
          .append(" |\n");
    }
    md.append("\n| implementation | 1 thread p50 µs | 1 thread p99 µs | 8 threads ops/s |\n")
        .append("|---|---|---|---|\n");
    for (List<String> ids : GROUPS.values()) {
      for (String id : ids) {
        md.append("| `")
            .append(id)
            .append("` | ")
            .append(spread(figures.get(id + "/p50Us")))
            .append(" | ")
            .append(spread(figures.get(id + "/p99Us")))
            .append(" | ")
            .append(spread(figures.get(id + "/opsPerSec")))
            .append(" |\n");
      }
    }
    md.append(
        "\nRerun: `lock-bench/run-bench.sh --only reactive` (about 4 minutes). Figures are"
            + " medians over the rounds, min–max in brackets.\n");
    return md.toString();
  }

  private static String spread(double[] v) {
    if (v == null) {
      return "not measured";
    }
    return Report.fmt(Rounds.median(v))
        + " ("
        + Report.fmt(Rounds.min(v))
        + "–"
        + Report.fmt(Rounds.max(v))
        + ")";
  }
}
