package dev.locksmith.bench;

import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Redis Cluster rows of RESULTS.md (issue 19), a section of their own (see {@link
 * ResultSections}): uncontended 1-thread p50/p99 and 8-thread throughput of Locksmith and Redisson
 * on the Cluster that run-bench.sh starts ({@code BENCH_REDIS_CLUSTER}) next to the same on the
 * single server ({@code BENCH_REDIS}), all from one run. {@code BenchMain --only cluster} runs it.
 */
final class ClusterSection {
  private static final Logger LOG = LoggerFactory.getLogger(ClusterSection.class);

  static final String SECTION = "redis-cluster";

  /** Single server and Cluster alternate, so a burst of load from other builds hits both sides. */
  static final List<String> IMPLS =
      List.of(
          "locksmith-redis", "locksmith-redis-cluster", "redisson-lock", "redisson-lock-cluster");

  private ClusterSection() {}

  /**
   * Measures and replaces the section in {@code results}.
   *
   * @param results the RESULTS.md to update
   * @param quick short trials (a smoke test)
   * @throws Exception if JMH cannot run at all
   */
  static void run(Path results, boolean quick) throws Exception {
    Endpoints.require("redis");
    Endpoints.require("redis_cluster");
    String[] params = IMPLS.toArray(new String[0]);
    Map<String, Map<String, Double>> figures = new LinkedHashMap<>();
    Instant started = Instant.now();
    String loadBefore = Machine.loadAverage();
    LOG.info("cluster section, 1 thread, SampleTime: {}", IMPLS);
    for (RunResult r :
        new Runner(options(quick, 1, Mode.SampleTime, TimeUnit.MICROSECONDS, params).build())
            .run()) {
      Map<String, Double> m =
          figures.computeIfAbsent(r.getParams().getParam("impl"), k -> new LinkedHashMap<>());
      m.put("p50Us", r.getPrimaryResult().getStatistics().getPercentile(50));
      m.put("p99Us", r.getPrimaryResult().getStatistics().getPercentile(99));
    }
    LOG.info("cluster section, 8 threads on distinct names, Throughput: {}", IMPLS);
    for (RunResult r :
        new Runner(options(quick, 8, Mode.Throughput, TimeUnit.SECONDS, params).build()).run()) {
      Map<String, Double> m =
          figures.computeIfAbsent(r.getParams().getParam("impl"), k -> new LinkedHashMap<>());
      m.put("opsPerSec8", r.getPrimaryResult().getScore());
      m.put("opsPerSec8Error", r.getPrimaryResult().getScoreError());
    }
    String header =
        "Measured "
            + started
            + " to "
            + Instant.now()
            + (quick ? " (**--quick**: figures indicative only)" : "")
            + ", load average "
            + loadBefore
            + " before and "
            + Machine.loadAverage()
            + " after, on "
            + System.getenv().getOrDefault("BENCH_REDIS_VERSION", "redis-server")
            + "; commit "
            + System.getenv().getOrDefault("BENCH_GIT", "unknown")
            + ".";
    String command =
        System.getenv().getOrDefault("BENCH_COMMAND", "lock-bench/run-bench.sh --only cluster");
    ResultSections.write(results, SECTION, markdown(figures, header, command, quick));
  }

  private static ChainedOptionsBuilder options(
      boolean quick, int threads, Mode mode, TimeUnit unit, String[] impls) {
    ChainedOptionsBuilder o =
        new OptionsBuilder()
            .include(UncontendedBench.class.getName() + ".acquireRelease")
            .param("impl", impls)
            .mode(mode)
            .timeUnit(unit)
            .threads(threads)
            .forks(1)
            .jvmArgsAppend("-Xmx1g", "-XX:+UseParallelGC")
            .shouldFailOnError(false);
    if (quick) {
      return o.warmupIterations(1)
          .warmupTime(TimeValue.seconds(2))
          .measurementIterations(2)
          .measurementTime(TimeValue.seconds(1));
    }
    // Shorter than BenchMain's trials (the section must run in about 5 minutes): Redis clients
    // reach
    // their steady rate sooner than the etcd and ZooKeeper ones those warm-ups were sized for.
    return threads == 1
        ? o.warmupIterations(6)
            .warmupTime(TimeValue.seconds(2))
            .measurementIterations(3)
            .measurementTime(TimeValue.seconds(2))
        : o.warmupIterations(6)
            .warmupTime(TimeValue.seconds(2))
            .measurementIterations(4)
            .measurementTime(TimeValue.seconds(2));
  }

  /**
   * @param figures per implementation id: {@code p50Us}, {@code p99Us}, {@code opsPerSec8}, {@code
   *     opsPerSec8Error}
   * @param header the line saying when and on what it was measured
   * @param command the command that reruns it
   * @param quick whether the trials were the short ones
   * @return the section's markdown
   */
  static String markdown(
      Map<String, Map<String, Double>> figures, String header, String command, boolean quick) {
    StringBuilder md = new StringBuilder();
    md.append("## Redis Cluster next to the single server (issue 19)\n\n")
        .append(header)
        .append(" Uncontended acquire + release (`UncontendedBench`, JMH, 1 fork per trial, ")
        .append(
            quick
                ? "1 × 2 s warm-up, 2 × 1 s measured"
                : "6 × 2 s warm-up, 3 (1 thread) or 4 (8 threads) × 2 s measured")
        .append(
            "): 1 thread in SampleTime mode, 8 threads on distinct names in Throughput mode. The"
                + " Cluster is 6 ")
        .append(
            "`redis-server` nodes on loopback (3 primaries, 3 replicas, `redis-cli --cluster create"
                + " --cluster-replicas 1`); ")
        .append(
            "the single server is run-bench.sh's own. Both Locksmith rows use default options; both"
                + " Redisson rows ")
        .append(
            "`RLock.lock()` with its default watchdog (`useSingleServer()` /"
                + " `useClusterServers()`).\n\n")
        .append(
            "| impl | servers | p50 µs | p99 µs | ops/s, 8 threads | ± (99.9 %) |\n"
                + "|---|---|---|---|---|---|\n");
    for (String impl : IMPLS) {
      md.append("| ")
          .append(impl)
          .append(" | ")
          .append(impl.endsWith("-cluster") ? "Cluster (6 nodes)" : "single server")
          .append(" | ")
          .append(fmt(get(figures, impl, "p50Us"), "%,.0f"))
          .append(" | ")
          .append(fmt(get(figures, impl, "p99Us"), "%,.0f"))
          .append(" | ")
          .append(fmt(get(figures, impl, "opsPerSec8"), "%,.0f"))
          .append(" | ")
          .append(fmt(get(figures, impl, "opsPerSec8Error"), "%,.0f"))
          .append(" |\n");
    }
    Double tput =
        ratio(
            get(figures, "locksmith-redis-cluster", "opsPerSec8"),
            get(figures, "redisson-lock-cluster", "opsPerSec8"));
    md.append("\n| ratio (one run) | value | target |\n|---|---|---|\n")
        .append("| Locksmith p50, Cluster / single server | ")
        .append(
            fmt(
                ratio(
                    get(figures, "locksmith-redis-cluster", "p50Us"),
                    get(figures, "locksmith-redis", "p50Us")),
                "%.2f"))
        .append(" | (information) |\n")
        .append("| Locksmith 8-thread throughput, Cluster / single server | ")
        .append(
            fmt(
                ratio(
                    get(figures, "locksmith-redis-cluster", "opsPerSec8"),
                    get(figures, "locksmith-redis", "opsPerSec8")),
                "%.2f"))
        .append(" | (information) |\n")
        .append("| p50 on the Cluster, Locksmith / Redisson | ")
        .append(
            fmt(
                ratio(
                    get(figures, "locksmith-redis-cluster", "p50Us"),
                    get(figures, "redisson-lock-cluster", "p50Us")),
                "%.2f"))
        .append(" | (information; lower is faster) |\n")
        .append("| 8-thread throughput on the Cluster, Locksmith / Redisson | ")
        .append(fmt(tput, "%.2f"))
        .append(" | ≥ 1: ")
        .append(tput == null ? "not measured" : tput >= 1 ? "met" : "**missed**")
        .append(" |\n")
        .append(
            "\nA row with \"–\" failed to run; `lock-bench/target/bench.log` says why. Rerun: `")
        .append(command)
        .append("`.\n");
    return md.toString();
  }

  private static Double get(Map<String, Map<String, Double>> figures, String impl, String key) {
    Map<String, Double> m = figures.get(impl);
    Double v = m == null ? null : m.get(key);
    return v == null || v.isNaN() ? null : v;
  }

  private static Double ratio(Double a, Double b) {
    return a == null || b == null || b == 0 ? null : a / b;
  }

  private static String fmt(Double v, String format) {
    return v == null ? "–" : String.format(java.util.Locale.ROOT, format, v);
  }
}
