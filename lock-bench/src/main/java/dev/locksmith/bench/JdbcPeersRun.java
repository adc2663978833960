package dev.locksmith.bench;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code jdbc-peers} section of RESULTS.md (issue 21), written through {@link ResultSections}:
 * Locksmith's JDBC backend on MariaDB and on PostgreSQL against Spring Integration's {@code
 * JdbcLockRegistry}, ShedLock's {@code JdbcTemplateLockProvider} and the raw JDBC floor on the same
 * server, in one run. Contended: the waiting locks only (ShedLock skips a held lock instead of
 * waiting), with the Redis sleep loop ({@code blogloop-redis}) as the reference for the waiter p99
 * target. Uncontended: all four per database.
 */
final class JdbcPeersRun {
  static final String SECTION = "jdbc-peers";
  private static final Logger LOG = LoggerFactory.getLogger(JdbcPeersRun.class);
  private static final String SLEEP_LOOP = "blogloop-redis";

  /** One database's implementations: Locksmith, the raw floor, JdbcLockRegistry, ShedLock. */
  private static final class Db {
    final String label;
    final String locksmith;
    final String raw;
    final String registry;
    final String shedlock;

    Db(String label, String suffix) {
      this.label = label;
      this.locksmith = "locksmith-" + suffix;
      this.raw = "raw-" + suffix;
      this.registry = "jdbclockregistry-" + suffix;
      this.shedlock = "shedlock-" + suffix;
    }

    List<String> uncontended() {
      return List.of(locksmith, raw, registry, shedlock);
    }
  }

  private JdbcPeersRun() {}

  /**
   * Measures, then replaces the section in {@code out/RESULTS.md}.
   *
   * @param out the directory of RESULTS.md
   * @param quick short runs (a smoke test)
   * @throws Exception if the section cannot be written
   */
  static void run(Path out, boolean quick) throws Exception {
    List<Db> dbs = new ArrayList<>();
    if (Endpoints.get("jdbc") != null) {
      dbs.add(new Db("MariaDB", "jdbc"));
    }
    if (Endpoints.get("pg") != null) {
      dbs.add(new Db("PostgreSQL", "pg"));
    }
    if (dbs.isEmpty()) {
      throw new IllegalStateException(
          "jdbc-peers needs BENCH_JDBC (MariaDB) and/or BENCH_PG (PostgreSQL) as host:port; "
              + "run-bench.sh --only jdbc-peers starts both");
    }
    Instant started = Instant.now();
    String loadBefore = Machine.loadAverage();
    Map<String, double[]> rounds = new LinkedHashMap<>();
    Map<String, Properties> contended = new LinkedHashMap<>();

    // contended: the waiting locks and the sleep loop, in interleaved rounds (order reversed every
    // other round)
    List<String> waiting = new ArrayList<>();
    for (Db db : dbs) {
      waiting.add(db.locksmith);
      waiting.add(db.registry);
    }
    if (Endpoints.redis() != null) {
      waiting.add(SLEEP_LOOP);
    }
    int cRounds = quick ? 2 : 5;
    long cWarmupMs = quick ? 500 : 1_500;
    long cMeasureMs = quick ? 1_500 : 3_000;
    Map<String, List<Properties>> byImpl =
        BenchMain.contendedRounds(
            "jdbc-peers contended on one name", waiting, cRounds, cWarmupMs, cMeasureMs);
    for (Map.Entry<String, List<Properties>> e : byImpl.entrySet()) {
      contended.put(e.getKey(), BenchMain.mergeRounds(e.getValue()));
    }
    BenchMain.perRoundValues(byImpl, List.of("handoffsPerSec", "waiterP99Us"), rounds);

    // uncontended, 1 thread: one JVM per database, its four implementations in interleaved rounds
    int uRounds = quick ? 3 : 6;
    long uWarmupMs = quick ? 1_000 : 8_000;
    long uRoundMs = quick ? 500 : 1_500;
    for (Db db : dbs) {
      LOG.info(
          "jdbc-peers uncontended, 1 thread, {} interleaved rounds: {}", uRounds, db.uncontended());
      Properties p =
          BenchMain.childOrError(
              RoundsRun.class,
              "1",
              Long.toString(uWarmupMs),
              Long.toString(uRoundMs),
              Integer.toString(uRounds),
              String.join(",", db.uncontended()));
      for (String impl : db.uncontended()) {
        for (String key : List.of("p50Us", "p99Us")) {
          rounds.put(impl + "/" + key, BenchMain.perRound(p, impl, key, uRounds));
        }
      }
    }

    StringBuilder md = new StringBuilder();
    md.append("## JDBC peers (issue 21)\n\n")
        .append("Measured ")
        .append(started)
        .append(" – ")
        .append(Instant.now())
        .append(" (")
        .append(Duration.between(started, Instant.now()).toSeconds())
        .append(" s) by `JdbcPeersRun`, with `")
        .append(
            System.getenv()
                .getOrDefault("BENCH_COMMAND", "lock-bench/run-bench.sh --only jdbc-peers"))
        .append("`")
        .append(quick ? " (**quick**: indicative only)" : "")
        .append(", git ")
        .append(env("BENCH_GIT"))
        .append(". Load average ")
        .append(loadBefore)
        .append(" before, ")
        .append(Machine.loadAverage())
        .append(" after (2 shared cores; others build).\n\n")
        .append("Servers: ")
        .append(env("BENCH_MARIADB_VERSION"))
        .append("; ")
        .append(env("BENCH_PG_VERSION"))
        .append(". Peers: ")
        .append("Spring Integration `JdbcLockRegistry` ")
        .append(
            version(
                org.springframework.integration.jdbc.lock.JdbcLockRegistry.class,
                "org.springframework.integration/spring-integration-jdbc"))
        .append(
            " (defaults: 10 s TTL, polls every 100 ms; `INT_LOCK` from the jar's schema SQL),"
                + " ShedLock `JdbcTemplateLockProvider` ")
        .append(
            version(
                net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider.class,
                "net.javacrumbs.shedlock/shedlock-provider-jdbc-template"))
        .append(
            " (default configuration, lockAtMostFor 30 s), each with a Hikari pool of its own per"
                + " client. ")
        .append(
            "**ShedLock is not a waiting lock** (a held lock is skipped, not waited for): it is"
                + " measured uncontended only.\n\n")
        .append("Contended: ")
        .append(BenchMain.CONTENDED_CLIENTS)
        .append(" clients (each its own client and connections) on one name, ")
        .append("1 ms of work per hold, ")
        .append(cRounds)
        .append(" interleaved rounds of ")
        .append(cMeasureMs)
        .append(" ms after ")
        .append(cWarmupMs)
        .append(" ms of warm-up (`ContendedRun`); the sleep loop is `")
        .append(SLEEP_LOOP)
        .append(
            "` (SET NX, sleep 50-150 ms after a failure) on Redis in the same run. Uncontended: 1"
                + " thread, acquire + release of a ")
        .append("name no one else uses, ")
        .append(uRounds)
        .append(" interleaved rounds of ")
        .append(uRoundMs)
        .append(" ms after ")
        .append(uWarmupMs)
        .append(
            " ms of warm-up each (`RoundsRun`, one JVM per database). Ratios are medians of the"
                + " per-round ")
        .append(
            "ratios, spread their min–max; met only when the whole spread is on the right side of"
                + " the bound.\n\n");

    md.append(
        "| database | target | figures | ratio | spread | bound | verdict |\n"
            + "|---|---|---|---|---|---|---|\n");
    for (Db db : dbs) {
      List<Report.Target> targets = new ArrayList<>();
      targets.add(
          new Report.Target(
                  "contended hand-offs/s, Locksmith / JdbcLockRegistry",
                  num(contended, db.locksmith, "handoffsPerSec"),
                  num(contended, db.registry, "handoffsPerSec"),
                  false,
                  3,
                  Report.fmt(num(contended, db.locksmith, "handoffsPerSec"))
                      + " / "
                      + Report.fmt(num(contended, db.registry, "handoffsPerSec")))
              .rounds(
                  Rounds.ratios(
                      rounds.get(db.locksmith + "/handoffsPerSec"),
                      rounds.get(db.registry + "/handoffsPerSec"))));
      targets.add(
          new Report.Target(
                  "waiter p99, Locksmith / sleep loop (" + SLEEP_LOOP + ")",
                  num(contended, db.locksmith, "waiterP99Us"),
                  num(contended, SLEEP_LOOP, "waiterP99Us"),
                  true,
                  0.1,
                  Report.fmt(ms(num(contended, db.locksmith, "waiterP99Us")))
                      + " ms / "
                      + Report.fmt(ms(num(contended, SLEEP_LOOP, "waiterP99Us")))
                      + " ms")
              .rounds(
                  Rounds.ratios(
                      rounds.get(db.locksmith + "/waiterP99Us"),
                      rounds.get(SLEEP_LOOP + "/waiterP99Us"))));
      double[] lsP50 = rounds.get(db.locksmith + "/p50Us");
      double[] rawP50 = rounds.get(db.raw + "/p50Us");
      targets.add(
          new Report.Target(
                  "uncontended p50, Locksmith / raw floor",
                  median(lsP50),
                  median(rawP50),
                  true,
                  1.15,
                  Report.fmt(median(lsP50)) + " µs / " + Report.fmt(median(rawP50)) + " µs")
              .rounds(Rounds.ratios(lsP50, rawP50)));
      for (Report.Target t : targets) {
        md.append("| ")
            .append(db.label)
            .append(" | ")
            .append(t.what)
            .append(" | ")
            .append(t.figures)
            .append(" | ")
            .append(Report.fmt2(t.ratio()))
            .append(" | ")
            .append(t.spread())
            .append(" | ")
            .append(t.atMost ? "≤ " : "≥ ")
            .append(Report.fmtBound(t.bound))
            .append(" | ")
            .append(t.verdict())
            .append(" |\n");
      }
    }

    md.append(
            "\n"
                + "Contended (medians over the rounds; waits in ms; errors and overlaps summed over"
                + " the rounds):\n\n")
        .append(
            "| implementation | hand-offs/s | acquisitions/s | waiter p50 | waiter p99 | waiter max"
                + " | per client | overlaps | errors |\n")
        .append("|---|---|---|---|---|---|---|---|---|\n");
    for (String impl : waiting) {
      Properties p = contended.get(impl);
      md.append("| `")
          .append(impl)
          .append("` | ")
          .append(Report.fmt(num(contended, impl, "handoffsPerSec")))
          .append(" | ")
          .append(Report.fmt(num(contended, impl, "acquisitionsPerSec")))
          .append(" | ")
          .append(Report.fmt(ms(num(contended, impl, "waiterP50Us"))))
          .append(" | ")
          .append(Report.fmt(ms(num(contended, impl, "waiterP99Us"))))
          .append(" | ")
          .append(Report.fmt(ms(num(contended, impl, "waiterMaxUs"))))
          .append(" | ")
          .append(p == null ? "–" : p.getProperty("perClient", "–"))
          .append(" | ")
          .append(p == null ? "–" : p.getProperty("overlaps", "–"))
          .append(" | ")
          .append(p == null ? "–" : p.getProperty("errors", "–"))
          .append(
              p != null && p.getProperty("firstError") != null
                  ? " (" + p.getProperty("firstError").replace("|", "/") + ")"
                  : "")
          .append(" |\n");
    }
    md.append(
            "\n"
                + "Uncontended, 1 thread (µs; median over the rounds, min–max in brackets; ratio ="
                + " median of the per-round ratios to ")
        .append(
            "the raw floor):\n\n"
                + "| database | implementation | p50 | p99 | p50 / raw floor |\n"
                + "|---|---|---|---|---|\n");
    for (Db db : dbs) {
      for (String impl : db.uncontended()) {
        double[] p50 = rounds.get(impl + "/p50Us");
        double[] p99 = rounds.get(impl + "/p99Us");
        md.append("| ")
            .append(db.label)
            .append(" | `")
            .append(impl)
            .append("` | ")
            .append(withSpread(p50))
            .append(" | ")
            .append(withSpread(p99))
            .append(" | ")
            .append(
                impl.equals(db.raw)
                    ? "floor"
                    : Report.fmt2(
                        nullIfNaN(
                            Rounds.median(Rounds.ratios(p50, rounds.get(db.raw + "/p50Us"))))))
            .append(" |\n");
      }
    }
    md.append(
            "\n"
                + "Implementations: `locksmith-jdbc` / `locksmith-pg` are Locksmith's public API on"
                + " `jdbc:mariadb://` / ")
        .append(
            "`jdbc:postgresql://` (default options); `raw-jdbc` / `raw-pg` the raw floor (one"
                + " connection, `SELECT ... FOR UPDATE` + ")
        .append(
            "`UPDATE` transaction, then the release `UPDATE`); `jdbclockregistry-*` and"
                + " `shedlock-*` as above. ")
        .append("Rerun: `lock-bench/run-bench.sh --only jdbc-peers` (about 6 minutes).\n");
    Path results = out.resolve("RESULTS.md");
    ResultSections.write(results, SECTION, md.toString());
    LOG.info("wrote the {} section of {}", SECTION, results);
  }

  static String env(String name) {
    String v = System.getenv(name);
    return v == null || v.isBlank() ? "(" + name + " not set)" : v;
  }

  /**
   * @return the version in the jar's manifest, else in its Maven pom.properties ({@code
   *     group/artifact} given)
   */
  static String version(Class<?> type, String groupArtifact) {
    String v = type.getPackage().getImplementationVersion();
    if (v != null) {
      return v;
    }
    try (java.io.InputStream in =
        type.getClassLoader()
            .getResourceAsStream("META-INF/maven/" + groupArtifact + "/pom.properties")) {
      if (in != null) {
        Properties p = new Properties();
        p.load(in);
        v = p.getProperty("version");
      }
    } catch (java.io.IOException e) {
      LOG.debug("no pom.properties for {}", groupArtifact, e);
    }
    return v == null ? "(version unknown)" : v;
  }

  private static Double num(Map<String, Properties> m, String impl, String key) {
    Properties p = m.get(impl);
    if (p == null || p.getProperty(key) == null) {
      return null;
    }
    return Double.parseDouble(p.getProperty(key));
  }

  private static Double ms(Double us) {
    return us == null ? null : us / 1e3;
  }

  private static Double median(double[] v) {
    return v == null ? null : nullIfNaN(Rounds.median(v));
  }

  private static Double nullIfNaN(double d) {
    return Double.isNaN(d) ? null : d;
  }

  private static String withSpread(double[] v) {
    if (v == null) {
      return "not measured";
    }
    return Report.fmt(median(v))
        + " ("
        + Report.fmt(Rounds.min(v))
        + "–"
        + Report.fmt(Rounds.max(v))
        + ")";
  }
}
