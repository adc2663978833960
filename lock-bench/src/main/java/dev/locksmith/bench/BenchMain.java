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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs every measurement against the servers run-bench.sh started (their endpoints in {@code
 * BENCH_REDIS}, {@code BENCH_ETCD}, ...), then writes RESULTS.md and results.svg.
 *
 * <p>Usage: {@code BenchMain [--quick] [--out DIR] [--only
 * uncontended,contended,scale,cluster,jdbc-peers,semaphores]}; {@code cluster} (the Redis Cluster
 * rows, {@link ClusterSection}), {@code jdbc-peers} ({@link JdbcPeersRun}) and {@code semaphores}
 * ({@link SemaphoresRun}) are sections of their own, run only when asked for.
 */
public final class BenchMain {
  private static final Logger LOG = LoggerFactory.getLogger(BenchMain.class);

  /** Uncontended: Locksmith on each server, its raw floor, and the off-the-shelf locks. */
  static final List<String> UNCONTENDED =
      List.of(
          "locksmith-local",
          "locksmith-redis",
          "raw-redis",
          "redisson-lock",
          "redisson-trylock",
          "locksmith-etcd",
          "raw-etcd",
          "jetcd-lock",
          "locksmith-zookeeper",
          "raw-zookeeper",
          "curator-mutex",
          "locksmith-jdbc",
          "raw-jdbc");

  /**
   * Contended: Locksmith on each server, the off-the-shelf locks, and the seed articles' sleep
   * loop.
   */
  static final List<String> CONTENDED =
      List.of(
          "locksmith-local",
          "locksmith-redis",
          "redisson-lock",
          "blogloop-redis",
          "locksmith-etcd",
          "jetcd-lock",
          "locksmith-zookeeper",
          "curator-mutex",
          "locksmith-jdbc");

  static final List<String> SCALE = List.of("locksmith-redis", "redisson-lock");

  /**
   * Backends whose locks live by one session: their renewal traffic must not grow with the locks
   * held.
   */
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
          throw new IllegalArgumentException(
              "unknown argument '"
                  + args[i]
                  + "'; use --quick, --out DIR, --only "
                  + "uncontended,contended,scale,cluster,jdbc-peers,semaphores,reactive,sets,elections");
      }
    }
    // sections of their own (ResultSections): each replaces only its part of RESULTS.md
    if (only.contains("semaphores")) {
      SemaphoresRun.run(out, quick);
    }
    if (only.contains("reactive")) {
      ReactiveRun.run(out, quick);
    }
    if (only.contains("elections")) {
      ElectionsRun.run(out, quick);
    }
    if (only.contains("sets")) {
      SetsRun.run(out, quick);
    }
    if (only.contains("jdbc-peers")) {
      JdbcPeersRun.run(out, quick);
    }
    if (only.contains("cluster")) {
      ClusterSection.run(out.resolve("RESULTS.md"), quick);
    }
    if (only.stream().noneMatch(List.of("uncontended", "contended", "scale")::contains)) {
      return; // nothing else asked for: the rest of RESULTS.md and results.svg stay as they are
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
    results.loadAfter = Machine.loadAverage();
    results.finished = Instant.now();
    Files.createDirectories(out);
    Files.writeString(out.resolve("results.svg"), Chart.svg(results), StandardCharsets.UTF_8);
    String report =
        Report.markdown(
            results,
            System.getenv()
                .getOrDefault(
                    "BENCH_COMMAND", "lock-bench/run-bench.sh" + (quick ? " --quick" : "")));
    // sections that runs of their own write (ResultSections) are kept
    Files.writeString(
        out.resolve("RESULTS.md"),
        ResultSections.keepAll(out.resolve("RESULTS.md"), report),
        StandardCharsets.UTF_8);
    LOG.info("wrote {} and {}", out.resolve("RESULTS.md"), out.resolve("results.svg"));
  }

  // ---------------------------------------------------------------- uncontended (JMH)

  /**
   * Measured rounds per comparison in a child JVM per round (contended), after the warm-up (issue
   * 22: at least 5 of each): 6 rounds make the min–max a 97 % confidence interval of the median
   * (Rounds.intervalRank).
   */
  static final int ROUNDS = 6;

  /**
   * Measured rounds of the uncontended comparisons, which run side by side in one JVM: 12 short
   * rounds rather than 6 long ones, for the same measured time. The two figures of a ratio are then
   * measured closer together, and the median's 96 % interval leaves out the two lowest and two
   * highest rounds instead of resting on the single most disturbed one.
   */
  static final int UNCONTENDED_ROUNDS = 12;

  private static void uncontended(Results results, boolean quick) throws Exception {
    List<String> impls = Impls.available(UNCONTENDED);
    // One JVM per server (RoundsRun): Locksmith, its floor and its peers side by side, in
    // interleaved rounds.
    Map<String, List<String>> byServer = new LinkedHashMap<>();
    for (String impl : impls) {
      byServer.computeIfAbsent(Impls.serverOf(impl), k -> new ArrayList<>()).add(impl);
    }
    // Warm-up per implementation: at about 1,000 ops/s (etcd) the hot code takes 20-30 s to reach
    // the optimising
    // compiler (FINDINGS 8); the rounds that follow keep warming all of them alike.
    long warmupMs = quick ? 2_000 : 16_000;
    long roundMs = quick ? 500 : 1_000;
    int rounds = quick ? 5 : UNCONTENDED_ROUNDS;
    results.roundsNote =
        rounds
            + " rounds of "
            + roundMs
            + " ms per implementation after "
            + warmupMs
            + " ms of warm-up each.";
    for (int threads : new int[] {1, 8}) {
      for (List<String> group : byServer.values()) {
        LOG.info("uncontended, {} thread(s), {} interleaved rounds: {}", threads, rounds, group);
        Properties p =
            childOrError(
                RoundsRun.class,
                Integer.toString(threads),
                Long.toString(warmupMs),
                Long.toString(roundMs),
                Integer.toString(rounds),
                String.join(",", group));
        for (String impl : group) {
          Map<String, Double> m =
              results.uncontended.computeIfAbsent(impl, k -> new LinkedHashMap<>());
          if (threads == 1) {
            for (String key : List.of("p50Us", "p99Us", "meanUs")) {
              double[] v = perRound(p, impl, key, rounds);
              results.rounds.put(impl + "/" + key, v);
              m.put(key, v == null ? null : Rounds.median(v));
            }
          } else {
            double[] v = perRound(p, impl, "opsPerSec", rounds);
            results.rounds.put(impl + "/opsPerSec8", v);
            m.put("opsPerSec8", v == null ? null : Rounds.median(v));
          }
        }
      }
    }
  }

  /**
   * @return {@code <impl>.<round>.<key>} of every round, or null if the run failed
   */
  static double[] perRound(Properties p, String impl, String key, int rounds) {
    double[] v = new double[rounds];
    for (int i = 0; i < rounds; i++) {
      String s = p.getProperty(impl + "." + i + "." + key);
      if (s == null) {
        return null;
      }
      v[i] = Double.parseDouble(s);
    }
    return v;
  }

  // ---------------------------------------------------------------- contended and scale (child
  // JVMs)

  private static void contended(Results results, boolean quick) throws Exception {
    long warmupMs = quick ? 500 : 2000;
    long measureMs = quick ? 1500 : 4000;
    int rounds = quick ? 5 : ROUNDS;
    results.contendedNote =
        rounds + " rounds of " + measureMs + " ms measured after " + warmupMs + " ms of warm-up.";
    List<String> impls = Impls.available(CONTENDED);
    Map<String, List<Properties>> byImpl =
        contendedRounds("contended on one name", impls, rounds, warmupMs, measureMs);
    for (String impl : impls) {
      List<Properties> perRound = byImpl.get(impl);
      results.contended.put(impl, mergeRounds(perRound));
      for (String key : List.of("handoffsPerSec", "waiterP99Us")) {
        double[] v = new double[perRound.size()];
        for (int i = 0; i < v.length; i++) {
          String s = perRound.get(i).getProperty(key);
          v[i] = s == null ? Double.NaN : Double.parseDouble(s);
        }
        results.rounds.put(impl + "/" + key, v);
      }
    }
  }

  /**
   * One row from the rounds of one implementation: medians of rates and percentiles, sums of
   * counts.
   */
  static Properties mergeRounds(List<Properties> rounds) {
    Properties out = new Properties();
    for (String key :
        List.of(
            "handoffsPerSec",
            "acquisitionsPerSec",
            "waitP50Us",
            "waitP99Us",
            "waiterP50Us",
            "waiterP99Us")) {
      List<Double> v = new ArrayList<>();
      for (Properties p : rounds) {
        if (p.getProperty(key) != null) {
          v.add(Double.parseDouble(p.getProperty(key)));
        }
      }
      if (!v.isEmpty()) {
        out.setProperty(
            key,
            Double.toString(Rounds.median(v.stream().mapToDouble(Double::doubleValue).toArray())));
      }
    }
    double waitMax = 0;
    double waiterMax = 0;
    long overlaps = 0;
    int mostHolders = 0;
    long errors = 0;
    long stillWaiting = 0;
    long[] perClient = null;
    for (Properties p : rounds) {
      waitMax = Math.max(waitMax, Double.parseDouble(p.getProperty("waitMaxUs", "0")));
      waiterMax = Math.max(waiterMax, Double.parseDouble(p.getProperty("waiterMaxUs", "0")));
      overlaps += Long.parseLong(p.getProperty("overlaps", "0"));
      mostHolders = Math.max(mostHolders, Integer.parseInt(p.getProperty("mostHolders", "0")));
      errors +=
          p.getProperty("errors", "0").equals("failed")
              ? 1
              : Long.parseLong(p.getProperty("errors", "0"));
      stillWaiting += Long.parseLong(p.getProperty("stillWaitingAtEnd", "0"));
      if (p.getProperty("firstError") != null && out.getProperty("firstError") == null) {
        out.setProperty("firstError", p.getProperty("firstError"));
      }
      if (p.getProperty("perClient") != null) {
        String[] parts = p.getProperty("perClient").split("/");
        perClient = perClient == null ? new long[parts.length] : perClient;
        for (int i = 0; i < parts.length && i < perClient.length; i++) {
          perClient[i] += Long.parseLong(parts[i]);
        }
      }
    }
    out.setProperty("waitMaxUs", Double.toString(waitMax));
    out.setProperty("waiterMaxUs", Double.toString(waiterMax));
    out.setProperty("overlaps", Long.toString(overlaps));
    out.setProperty("mostHolders", Integer.toString(mostHolders));
    out.setProperty("errors", Long.toString(errors));
    out.setProperty("stillWaitingAtEnd", Long.toString(stillWaiting));
    if (perClient != null) {
      StringBuilder sb = new StringBuilder();
      for (long n : perClient) {
        sb.append(sb.length() == 0 ? "" : "/").append(n);
      }
      out.setProperty("perClient", sb.toString());
    }
    return out;
  }

  private static void scale(Results results, boolean quick) throws Exception {
    int many = quick ? 2_000 : SCALE_LOCKS;
    // several keep-alive periods per window, so one message more or less hardly moves the rate
    long window = quick ? 6_000 : 20_000;
    for (String impl : Impls.available(SESSION_SCALE)) {
      LOG.info(
          "scale: {} then {} locks held by one client, server requests over {} ms idle: {}",
          10,
          many,
          window,
          impl);
      results.sessionScale.put(
          impl,
          childOrError(
              SessionScaleRun.class, impl, "10", Integer.toString(many), Long.toString(window)));
    }
    if (Endpoints.redis() == null) {
      return;
    }
    int periods = quick ? 3 : 6;
    for (String impl : SCALE) {
      LOG.info(
          "scale: {} locks held by one client with auto-renew, {} renewal periods: {}",
          SCALE_LOCKS,
          periods,
          impl);
      results.scale.put(
          impl,
          childOrError(
              ScaleRun.class,
              impl,
              Integer.toString(SCALE_LOCKS),
              Long.toString(SCALE_LEASE_MS),
              Integer.toString(periods)));
    }
  }

  /**
   * Runs {@link ContendedRun} ({@link #CONTENDED_CLIENTS} clients, 1 ms of work per hold) for each
   * implementation in interleaved rounds, the order reversed every other round, each in a JVM of
   * its own; a failed run becomes an {@code error} property ({@link #childOrError}).
   *
   * @param what what the log lines say is measured, such as "sets contended on Redis"
   * @return each implementation's rounds, in the order given
   */
  static Map<String, List<Properties>> contendedRounds(
      String what, List<String> impls, int rounds, long warmupMs, long measureMs) {
    Map<String, List<Properties>> byImpl = new LinkedHashMap<>();
    for (int round = 0; round < rounds; round++) {
      for (int k = 0; k < impls.size(); k++) {
        String impl = impls.get(round % 2 == 0 ? k : impls.size() - 1 - k);
        LOG.info(
            "{}, round {} of {}: {} clients, 1 ms of work per hold, {} ms: {}",
            what,
            round + 1,
            rounds,
            CONTENDED_CLIENTS,
            measureMs,
            impl);
        byImpl
            .computeIfAbsent(impl, x -> new ArrayList<>())
            .add(
                childOrError(
                    ContendedRun.class,
                    impl,
                    Integer.toString(CONTENDED_CLIENTS),
                    Long.toString(warmupMs),
                    Long.toString(measureMs),
                    "1000"));
      }
    }
    return byImpl;
  }

  /**
   * Puts the per-round values of each key of each implementation's rounds into {@code into}, as
   * {@code <impl>/<key>} (NaN for a round without it).
   */
  static void perRoundValues(
      Map<String, List<Properties>> byImpl, List<String> keys, Map<String, double[]> into) {
    for (Map.Entry<String, List<Properties>> e : byImpl.entrySet()) {
      for (String key : keys) {
        double[] v = new double[e.getValue().size()];
        for (int i = 0; i < v.length; i++) {
          String got = e.getValue().get(i).getProperty(key);
          v[i] = got == null ? Double.NaN : Double.parseDouble(got);
        }
        into.put(e.getKey() + "/" + key, v);
      }
    }
  }

  /**
   * As {@link #child}, but a failure becomes an {@code error} property, so one broken case does not
   * lose the others.
   */
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

  /**
   * Runs {@code main} of a class in a JVM of its own and reads the properties it prints after
   * {@code #RESULT}.
   */
  static Properties child(Class<?> main, String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx1g");
    cmd.add("-XX:+UseParallelGC");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(main.getName());
    cmd.addAll(List.of(args));
    Process process =
        new ProcessBuilder(cmd)
            .redirectErrorStream(false)
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    StringBuilder result = new StringBuilder();
    boolean inResult = false;
    try (InputStream in = process.getInputStream();
        BufferedReader reader =
            new BufferedReader(new InputStreamReader(in, StandardCharsets.ISO_8859_1))) {
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
      throw new IllegalStateException(
          main.getSimpleName() + " " + String.join(" ", args) + " did not finish in 10 minutes");
    }
    if (process.exitValue() != 0 || !inResult) {
      throw new IllegalStateException(
          main.getSimpleName()
              + " "
              + String.join(" ", args)
              + " failed with status "
              + process.exitValue());
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

    /**
     * Per-round figures of the interleaved comparisons, by {@code <impl>/<key>} (p50Us, opsPerSec8,
     * handoffsPerSec, ...).
     */
    final Map<String, double[]> rounds = new LinkedHashMap<>();

    String roundsNote = "";
    String contendedNote = "";

    /**
     * @return the per-round ratios of {@code a} to {@code b} for {@code key}, or null if either was
     *     not measured in rounds
     */
    double[] ratios(String a, String b, String key) {
      return Rounds.ratios(rounds.get(a + "/" + key), rounds.get(b + "/" + key));
    }

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
