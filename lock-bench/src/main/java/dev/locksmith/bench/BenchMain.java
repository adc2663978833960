package dev.locksmith.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.annotations.Mode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs every measurement against the servers run-bench.sh started (their endpoints in
 * {@code BENCH_REDIS}, {@code BENCH_ETCD}, ...), then writes RESULTS.md and results.svg.
 *
 * <p>Usage: {@code BenchMain [--quick] [--out DIR] [--only uncontended,contended,scale,cluster]}; {@code cluster}
 * (the Redis Cluster rows, {@link ClusterSection}) runs only when asked for.
 */
public final class BenchMain {
  private static final Logger LOG = LoggerFactory.getLogger(BenchMain.class);

  /** Uncontended: Locksmith on each server, its raw floor, and the off-the-shelf locks. */
  static final List<String> UNCONTENDED = List.of("locksmith-local", "locksmith-redis", "raw-redis", "redisson-lock",
      "redisson-trylock", "locksmith-etcd", "raw-etcd", "jetcd-lock", "locksmith-zookeeper", "raw-zookeeper", "curator-mutex",
      "locksmith-jdbc", "raw-jdbc");
  /** Contended: Locksmith on each server, the off-the-shelf locks, and the seed articles' sleep loop. */
  static final List<String> CONTENDED = List.of("locksmith-local", "locksmith-redis", "redisson-lock", "blogloop-redis",
      "locksmith-etcd", "jetcd-lock", "locksmith-zookeeper", "curator-mutex", "locksmith-jdbc");
  static final List<String> SCALE = List.of("locksmith-redis", "redisson-lock");
  /** Backends whose locks live by one session: their renewal traffic must not grow with the locks held. */
  static final List<String> SESSION_SCALE = List.of("locksmith-etcd", "locksmith-zookeeper");

  static final int CONTENDED_CLIENTS = 4;
  static final int SCALE_LOCKS = 10_000;
  static final long SCALE_LEASE_MS = 3_000;

  private BenchMain() {}

  /**
   * @param args {@code [--quick] [--out DIR] [--only uncontended,contended,scale]}
   * @throws Exception if a measurement cannot run at all
   */
  public static void main(String[] args) throws Exception {
    boolean quick = false;
    Path out = Path.of("lock-bench");
    List<String> only = List.of("uncontended", "contended", "scale");
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--quick":
          quick = true;
          break;
        case "--out":
          out = Path.of(args[++i]);
          break;
        case "--only":
          only = List.of(args[++i].split(","));
          break;
        default:
          throw new IllegalArgumentException("unknown argument '" + args[i] + "'; use --quick, --out DIR, --only uncontended,contended,scale,cluster");
      }
    }
    Results results = new Results();
    results.quick = quick;
    results.started = Instant.now();
    results.loadBefore = Machine.loadAverage();
    results.buildsBefore = Machine.otherBuilds();
    if (only.contains("uncontended")) {
      uncontended(results, quick);
    }
    if (only.contains("contended")) {
      contended(results, quick);
    }
    if (only.contains("scale")) {
      scale(results, quick);
    }
    if (only.contains("cluster")) {
      // a section of its own (ResultSections); alone, it leaves the rest of RESULTS.md as it was
      ClusterSection.run(out.resolve("RESULTS.md"), quick);
      if (only.size() == 1) {
        return;
      }
    }
    results.loadAfter = Machine.loadAverage();
    results.finished = Instant.now();
    Files.createDirectories(out);
    Files.writeString(out.resolve("results.svg"), Chart.svg(results), StandardCharsets.UTF_8);
    String report = Report.markdown(results, System.getenv().getOrDefault("BENCH_COMMAND",
        "lock-bench/run-bench.sh" + (quick ? " --quick" : "")));
    // sections that runs of their own write (ResultSections) are kept
    Files.writeString(out.resolve("RESULTS.md"), ResultSections.keepAll(out.resolve("RESULTS.md"), report),
        StandardCharsets.UTF_8);
    LOG.info("wrote {} and {}", out.resolve("RESULTS.md"), out.resolve("results.svg"));
  }

  // ---------------------------------------------------------------- uncontended (JMH)

  private static void uncontended(Results results, boolean quick) throws Exception {
    List<String> impls = Impls.available(UNCONTENDED);
    String[] params = impls.toArray(new String[0]);
    if (!quick) {
      // Every server starts cold, and ZooKeeper's is a JVM that compiles as it goes: without this
      // pass, whichever implementation runs first on a server pays for its warm-up (FINDINGS 8).
      LOG.info("uncontended, server warm-up pass (figures discarded): {}", impls);
      new Runner(options(8, Mode.Throughput, TimeUnit.SECONDS, params)
          .warmupIterations(0).measurementIterations(1).measurementTime(TimeValue.seconds(5)).build()).run();
    }
    LOG.info("uncontended, 1 thread, SampleTime: {}", impls);
    for (RunResult r : jmh(quick, 1, Mode.SampleTime, TimeUnit.MICROSECONDS, params)) {
      String impl = r.getParams().getParam("impl");
      Map<String, Double> m = results.uncontended.computeIfAbsent(impl, k -> new LinkedHashMap<>());
      m.put("p50Us", r.getPrimaryResult().getStatistics().getPercentile(50));
      m.put("p99Us", r.getPrimaryResult().getStatistics().getPercentile(99));
      m.put("meanUs", r.getPrimaryResult().getScore());
    }
    LOG.info("uncontended, 8 threads on distinct names, Throughput: {}", impls);
    for (RunResult r : jmh(quick, 8, Mode.Throughput, TimeUnit.SECONDS, params)) {
      String impl = r.getParams().getParam("impl");
      Map<String, Double> m = results.uncontended.computeIfAbsent(impl, k -> new LinkedHashMap<>());
      m.put("opsPerSec8", r.getPrimaryResult().getScore());
      m.put("opsPerSec8Error", r.getPrimaryResult().getScoreError());
    }
  }

  private static Collection<RunResult> jmh(boolean quick, int threads, Mode mode, TimeUnit unit, String[] impls) throws Exception {
    ChainedOptionsBuilder o = options(threads, mode, unit, impls);
    if (quick) {
      o.warmupIterations(1).warmupTime(TimeValue.seconds(2)).measurementIterations(2).measurementTime(TimeValue.seconds(1));
    } else if (threads == 1) {
      // One thread leaves the JIT a core, but at about 1,000 ops/s (etcd) the hot code takes
      // 20-30 s to reach the optimising compiler's call counts (FINDINGS 8).
      o.warmupIterations(15).warmupTime(TimeValue.seconds(2)).measurementIterations(4).measurementTime(TimeValue.seconds(2));
    } else {
      // Eight busy threads starve the JIT compiler of CPU: the network clients took 20-30 s to
      // reach a steady rate on 2 cores, the bigger client code the longer (FINDINGS 8).
      o.warmupIterations(10).warmupTime(TimeValue.seconds(3)).measurementIterations(5).measurementTime(TimeValue.seconds(2));
    }
    return new Runner(o.build()).run();
  }

  /** The options every uncontended run shares; the caller adds warm-up and measurement. */
  private static ChainedOptionsBuilder options(int threads, Mode mode, TimeUnit unit, String[] impls) {
    return new OptionsBuilder()
        .include(UncontendedBench.class.getName() + ".acquireRelease")
        .param("impl", impls)
        .mode(mode)
        .timeUnit(unit)
        .threads(threads)
        .forks(1)
        .jvmArgsAppend("-Xmx1g", "-XX:+UseParallelGC")
        // one implementation failing must not lose the others' figures: its row shows "–" and bench.log says why
        .shouldFailOnError(false);
  }

  // ---------------------------------------------------------------- contended and scale (child JVMs)

  private static void contended(Results results, boolean quick) throws Exception {
    long warmupMs = quick ? 1000 : 2000;
    long measureMs = quick ? 4000 : 10_000;
    for (String impl : Impls.available(CONTENDED)) {
      LOG.info("contended: {} clients on one name, 1 ms of work per hold, {} ms: {}", CONTENDED_CLIENTS, measureMs, impl);
      results.contended.put(impl, childOrError(ContendedRun.class, impl, Integer.toString(CONTENDED_CLIENTS),
          Long.toString(warmupMs), Long.toString(measureMs), "1000"));
    }
  }

  private static void scale(Results results, boolean quick) throws Exception {
    int many = quick ? 2_000 : SCALE_LOCKS;
    // several keep-alive periods per window, so one message more or less hardly moves the rate
    long window = quick ? 6_000 : 20_000;
    for (String impl : Impls.available(SESSION_SCALE)) {
      LOG.info("scale: {} then {} locks held by one client, server requests over {} ms idle: {}", 10, many, window, impl);
      results.sessionScale.put(impl, childOrError(SessionScaleRun.class, impl, "10", Integer.toString(many), Long.toString(window)));
    }
    if (Endpoints.redis() == null) {
      return;
    }
    int periods = quick ? 3 : 6;
    for (String impl : SCALE) {
      LOG.info("scale: {} locks held by one client with auto-renew, {} renewal periods: {}", SCALE_LOCKS, periods, impl);
      results.scale.put(impl, childOrError(ScaleRun.class, impl, Integer.toString(SCALE_LOCKS), Long.toString(SCALE_LEASE_MS),
          Integer.toString(periods)));
    }
  }

  /** As {@link #child}, but a failure becomes an {@code error} property, so one broken case does not lose the others. */
  static Properties childOrError(Class<?> main, String... args) {
    try {
      return child(main, args);
    } catch (IOException | RuntimeException e) {
      LOG.error("{} {} failed", main.getSimpleName(), String.join(" ", args), e);
      Properties p = new Properties();
      p.setProperty("errors", "failed");
      p.setProperty("firstError", e.getMessage());
      return p;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** Runs {@code main} of a class in a JVM of its own and reads the properties it prints after {@code #RESULT}. */
  static Properties child(Class<?> main, String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx1g");
    cmd.add("-XX:+UseParallelGC");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(main.getName());
    cmd.addAll(List.of(args));
    Process process = new ProcessBuilder(cmd).redirectErrorStream(false).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    StringBuilder result = new StringBuilder();
    boolean inResult = false;
    try (InputStream in = process.getInputStream();
        BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.ISO_8859_1))) {
      for (String line; (line = reader.readLine()) != null; ) {
        if (line.equals("#RESULT")) {
          inResult = true;
        } else if (inResult) {
          result.append(line).append('\n');
        } else {
          System.out.println(line);
        }
      }
    }
    if (!process.waitFor(10, TimeUnit.MINUTES)) {
      process.destroyForcibly();
      throw new IllegalStateException(main.getSimpleName() + " " + String.join(" ", args) + " did not finish in 10 minutes");
    }
    if (process.exitValue() != 0 || !inResult) {
      throw new IllegalStateException(main.getSimpleName() + " " + String.join(" ", args) + " failed with status " + process.exitValue());
    }
    Properties p = new Properties();
    p.load(new StringReader(result.toString()));
    return p;
  }

  /** Every figure of one run. */
  static final class Results {
    boolean quick;
    Instant started;
    Instant finished;
    String loadBefore;
    String loadAfter;
    long buildsBefore;
    final Map<String, Map<String, Double>> uncontended = new LinkedHashMap<>();
    final Map<String, Properties> contended = new LinkedHashMap<>();
    final Map<String, Properties> scale = new LinkedHashMap<>();
    final Map<String, Properties> sessionScale = new LinkedHashMap<>();

    Double un(String impl, String key) {
      Map<String, Double> m = uncontended.get(impl);
      return m == null ? null : m.get(key);
    }

    Double con(String impl, String key) {
      return num(contended.get(impl), key);
    }

    Double sc(String impl, String key) {
      return num(scale.get(impl), key);
    }

    Double ss(String impl, String key) {
      return num(sessionScale.get(impl), key);
    }

    private static Double num(Properties p, String key) {
      if (p == null || p.getProperty(key) == null) {
        return null;
      }
      try {
        return Double.parseDouble(p.getProperty(key));
      } catch (NumberFormatException e) {
        return null;
      }
    }
  }
}
