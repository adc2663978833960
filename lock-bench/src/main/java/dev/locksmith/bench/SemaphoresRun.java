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
 * The {@code semaphores} section of RESULTS.md (issue 20), written through {@link ResultSections}:
 * one permit of a semaphore, Locksmith against its peers on the same servers in one run. On Redis:
 * Redisson's {@code RSemaphore} (a counter, no lease) and {@code RPermitExpirableSemaphore} (leased
 * permits, the fairer peer); on ZooKeeper: Curator's {@code InterProcessSemaphoreV2}; on {@code
 * local:} Locksmith alone, the core's own cost. Uncontended: acquire + release of one permit of a
 * semaphore of {@value #PERMITS} that no one else uses, 1 thread, in interleaved rounds ({@link
 * RoundsRun}, one JVM per server). Contended: {@value #CONTENDED_CLIENTS} clients on one semaphore
 * of {@value #CONTENDED_PERMITS}, 1 ms of work per hold ({@link ContendedRun}, a JVM per
 * implementation and round, rounds interleaved). A Locksmith row whose backend does not declare
 * SEMAPHORES is skipped with the reason printed and written; its peers still run.
 */
final class SemaphoresRun {
  static final String SECTION = "semaphores";
  static final int PERMITS = 5;
  static final int CONTENDED_PERMITS = 2;
  static final int CONTENDED_CLIENTS = 8;
  private static final Logger LOG = LoggerFactory.getLogger(SemaphoresRun.class);

  /** One server's semaphores: Locksmith's and its peers'. */
  static final class Group {
    final String label;
    final String server;
    final String uriScheme;
    final String locksmith;
    final List<String> peers;

    Group(String label, String server, String uriScheme, String locksmith, List<String> peers) {
      this.label = label;
      this.server = server;
      this.uriScheme = uriScheme;
      this.locksmith = locksmith;
      this.peers = peers;
    }

    List<String> all() {
      List<String> out = new ArrayList<>();
      out.add(locksmith);
      out.addAll(peers);
      return out;
    }

    String locksmithUri() {
      return server.equals("local") ? "local:bench" : uriScheme + "://" + Endpoints.require(server);
    }
  }

  static final List<Group> GROUPS =
      List.of(
          new Group("local:", "local", "local", "locksmith-semaphore-local", List.of()),
          new Group(
              "Redis",
              "redis",
              "redis",
              "locksmith-semaphore-redis",
              List.of("redisson-semaphore", "redisson-expirable-semaphore")),
          new Group(
              "ZooKeeper",
              "zookeeper",
              "zookeeper",
              "locksmith-semaphore-zookeeper",
              List.of("curator-semaphore")));

  private SemaphoresRun() {}

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
    // why a row is not measured: no server, or Locksmith's backend does not declare semaphores yet
    Map<String, String> skipped = new LinkedHashMap<>();
    List<Group> groups = new ArrayList<>();
    for (Group g : GROUPS) {
      if (!g.server.equals("local") && Endpoints.get(g.server) == null) {
        for (String id : g.all()) {
          skipped.put(
              id,
              "no "
                  + g.server
                  + " server (BENCH_"
                  + g.server.toUpperCase(java.util.Locale.ROOT)
                  + " not set)");
        }
        continue;
      }
      String reason;
      try {
        reason = LocksmithSemaphoreImpl.skipReason(g.locksmithUri());
      } catch (RuntimeException e) {
        reason = "could not connect: " + e;
      }
      if (reason != null) {
        skipped.put(g.locksmith, reason);
      }
      groups.add(g);
    }
    for (Map.Entry<String, String> e : skipped.entrySet()) {
      LOG.warn("semaphores: skipping {}: {}", e.getKey(), e.getValue());
      System.out.println("semaphores: skipping " + e.getKey() + ": " + e.getValue());
    }

    // uncontended, 1 thread: one JVM per server, its implementations in interleaved rounds
    Map<String, double[]> rounds = new LinkedHashMap<>();
    int uRounds = quick ? 3 : 6;
    long uWarmupMs = quick ? 1_000 : 8_000;
    long uRoundMs = quick ? 500 : 1_500;
    for (Group g : groups) {
      List<String> ids = measured(g.all(), skipped, PERMITS);
      if (ids.isEmpty()) {
        continue;
      }
      LOG.info("semaphores uncontended, 1 thread, {} interleaved rounds: {}", uRounds, ids);
      Properties p =
          BenchMain.childOrError(
              RoundsRun.class,
              "1",
              Long.toString(uWarmupMs),
              Long.toString(uRoundMs),
              Integer.toString(uRounds),
              String.join(",", ids));
      if (p.getProperty("firstError") != null) {
        LOG.error("semaphores uncontended on {} failed: {}", g.label, p.getProperty("firstError"));
      }
      for (String id : ids) {
        for (String key : List.of("p50Us", "p99Us")) {
          rounds.put(base(id) + "/" + key, BenchMain.perRound(p, id, key, uRounds));
        }
      }
    }

    // contended: every server's implementations in one interleaved sequence of rounds (order
    // reversed every other round)
    List<String> contendedIds = new ArrayList<>();
    for (Group g : groups) {
      if (!g.server.equals("local")) {
        contendedIds.addAll(measured(g.all(), skipped, CONTENDED_PERMITS));
      }
    }
    int cRounds = quick ? 2 : 5;
    long cWarmupMs = quick ? 500 : 1_500;
    long cMeasureMs = quick ? 1_500 : 3_000;
    Map<String, List<Properties>> byImpl = new LinkedHashMap<>();
    for (int round = 0; round < cRounds; round++) {
      for (int k = 0; k < contendedIds.size(); k++) {
        String id = contendedIds.get(round % 2 == 0 ? k : contendedIds.size() - 1 - k);
        LOG.info(
            "semaphores contended, round {} of {}: {} clients on one semaphore of {}, 1 ms of work"
                + " per hold, {} ms: {}",
            round + 1,
            cRounds,
            CONTENDED_CLIENTS,
            CONTENDED_PERMITS,
            cMeasureMs,
            id);
        byImpl
            .computeIfAbsent(base(id), x -> new ArrayList<>())
            .add(
                BenchMain.childOrError(
                    ContendedRun.class,
                    id,
                    Integer.toString(CONTENDED_CLIENTS),
                    Long.toString(cWarmupMs),
                    Long.toString(cMeasureMs),
                    "1000"));
      }
    }
    Map<String, Properties> contended = new LinkedHashMap<>();
    for (Map.Entry<String, List<Properties>> e : byImpl.entrySet()) {
      contended.put(e.getKey(), BenchMain.mergeRounds(e.getValue()));
      for (String key : List.of("acquisitionsPerSec", "waitP99Us")) {
        double[] v = new double[e.getValue().size()];
        for (int i = 0; i < v.length; i++) {
          String s = e.getValue().get(i).getProperty(key);
          v[i] = s == null ? Double.NaN : Double.parseDouble(s);
        }
        rounds.put(e.getKey() + "/" + key, v);
      }
    }

    String header =
        ResultSections.measured("SemaphoresRun", "semaphores", started, loadBefore, quick);
    String versions =
        "Servers: "
            + JdbcPeersRun.env("BENCH_REDIS_VERSION")
            + "; "
            + JdbcPeersRun.env("BENCH_ZOOKEEPER_VERSION")
            + ". Peers: Redisson "
            + JdbcPeersRun.version(org.redisson.Redisson.class, "org.redisson/redisson")
            + ", Curator "
            + JdbcPeersRun.version(
                org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2.class,
                "org.apache.curator/curator-recipes")
            + ".";
    String md =
        markdown(
            header,
            versions,
            rounds,
            contended,
            skipped,
            new int[] {uRounds, (int) uWarmupMs, (int) uRoundMs},
            new int[] {cRounds, (int) cWarmupMs, (int) cMeasureMs});
    Path results = out.resolve("RESULTS.md");
    ResultSections.write(results, SECTION, md);
    LOG.info("wrote the {} section of {}", SECTION, results);
  }

  /**
   * @return the ids of {@code bases} that are not skipped, as semaphores of {@code permits}
   */
  private static List<String> measured(
      List<String> bases, Map<String, String> skipped, int permits) {
    List<String> ids = new ArrayList<>();
    for (String b : bases) {
      if (!skipped.containsKey(b)) {
        ids.add(Impls.semaphore(b, permits));
      }
    }
    return ids;
  }

  private static String base(String id) {
    return id.replaceFirst("@.*", "");
  }

  /**
   * @param rounds per-round figures by {@code <base id>/<key>}: p50Us, p99Us (uncontended),
   *     acquisitionsPerSec, waitP99Us (contended)
   * @param contended merged contended figures by base id
   * @param skipped why a base id was not measured
   * @param u uncontended rounds, warm-up ms, round ms
   * @param c contended rounds, warm-up ms, measured ms
   * @return the section's markdown
   */
  static String markdown(
      String header,
      String versions,
      Map<String, double[]> rounds,
      Map<String, Properties> contended,
      Map<String, String> skipped,
      int[] u,
      int[] c) {
    StringBuilder md = new StringBuilder();
    md.append("## Semaphores (issue 20)\n\n")
        .append(header)
        .append("\n\n")
        .append(versions)
        .append(" Every implementation takes ")
        .append(
            "one permit per acquire and gives it back: Locksmith's `LockClient.semaphore(name, N)`"
                + " with default options (30 s ")
        .append(
            "lease, auto-renew, fenced); Redisson `RSemaphore` (`trySetPermits(N)` once,"
                + " `acquire()` / `tryAcquire(wait)`, ")
        .append(
            "`release()`: a counter without a lease, so a dead holder's permit never comes back);"
                + " Redisson ")
        .append(
            "`RPermitExpirableSemaphore` (`trySetPermits(N)` once, `acquire(30 s lease)` /"
                + " `tryAcquire(wait, 30 s lease)`, ")
        .append(
            "`release(id)`: leased permits, the fairer peer); Curator `InterProcessSemaphoreV2` (30"
                + " s session, one instance ")
        .append(
            "per name). One client per JVM shared by its threads (uncontended), one client each"
                + " (contended).\n\n")
        .append("Uncontended: 1 thread, acquire + release of one permit of a semaphore of ")
        .append(PERMITS)
        .append(" that no one else uses, ")
        .append(u[0])
        .append(" interleaved rounds of ")
        .append(u[2])
        .append(" ms after ")
        .append(u[1])
        .append(" ms of warm-up each (`RoundsRun`, one JVM per server). Contended: ")
        .append(CONTENDED_CLIENTS)
        .append(" clients on one semaphore of ")
        .append(CONTENDED_PERMITS)
        .append(", 1 ms of work per hold, ")
        .append(c[0])
        .append(" interleaved rounds of ")
        .append(c[2])
        .append(" ms after ")
        .append(c[1])
        .append(
            " ms of warm-up (`ContendedRun`, a JVM per implementation and round). Ratios are"
                + " medians of the per-round ratios, ")
        .append("spread their min–max; there is no target for them yet (information).\n\n");

    md.append("| server | ratio | figures | median | spread |\n|---|---|---|---|---|\n");
    for (Group g : GROUPS) {
      for (String peer : g.peers) {
        ratioRow(
            md,
            g,
            "uncontended p50, Locksmith / " + name(peer),
            rounds.get(g.locksmith + "/p50Us"),
            rounds.get(peer + "/p50Us"),
            " µs",
            g.locksmith,
            peer,
            skipped);
        ratioRow(
            md,
            g,
            "contended permits/s, Locksmith / " + name(peer),
            rounds.get(g.locksmith + "/acquisitionsPerSec"),
            rounds.get(peer + "/acquisitionsPerSec"),
            "/s",
            g.locksmith,
            peer,
            skipped);
        ratioRow(
            md,
            g,
            "contended wait p99, Locksmith / " + name(peer),
            ms(rounds.get(g.locksmith + "/waitP99Us")),
            ms(rounds.get(peer + "/waitP99Us")),
            " ms",
            g.locksmith,
            peer,
            skipped);
      }
    }

    md.append("\nUncontended, 1 thread, semaphore of ")
        .append(PERMITS)
        .append(
            " (µs; median over the rounds, min–max in brackets):\n\n"
                + "| server | implementation | p50 | p99 |\n"
                + "|---|---|---|---|\n");
    for (Group g : GROUPS) {
      for (String id : g.all()) {
        md.append("| ").append(g.label).append(" | `").append(id).append("` | ");
        if (skipped.containsKey(id)) {
          md.append("skipped: ").append(skipped.get(id).replace("|", "/")).append(" | |\n");
        } else {
          md.append(withSpread(rounds.get(id + "/p50Us")))
              .append(" | ")
              .append(withSpread(rounds.get(id + "/p99Us")))
              .append(" |\n");
        }
      }
    }

    md.append("\nContended, ")
        .append(CONTENDED_CLIENTS)
        .append(" clients on a semaphore of ")
        .append(CONTENDED_PERMITS)
        .append(
            " (medians over the rounds; waits in ms; most holders, overlaps and errors over all"
                + " rounds; an overlap is a hold ")
        .append("that began while ")
        .append(CONTENDED_PERMITS)
        .append(" were held, and must be 0):\n\n")
        .append(
            "| server | implementation | permits/s | wait p50 | wait p99 | wait max | most holders"
                + " at once | per client | overlaps | errors |\n")
        .append("|---|---|---|---|---|---|---|---|---|---|\n");
    for (Group g : GROUPS) {
      if (g.server.equals("local")) {
        continue;
      }
      for (String id : g.all()) {
        md.append("| ").append(g.label).append(" | `").append(id).append("` | ");
        Properties p = contended.get(id);
        if (skipped.containsKey(id) || p == null) {
          md.append("skipped: ")
              .append(skipped.getOrDefault(id, "not measured").replace("|", "/"))
              .append(" | | | | | | | |\n");
          continue;
        }
        md.append(Report.fmt(num(p, "acquisitionsPerSec")))
            .append(" | ")
            .append(Report.fmt(ms(num(p, "waitP50Us"))))
            .append(" | ")
            .append(Report.fmt(ms(num(p, "waitP99Us"))))
            .append(" | ")
            .append(Report.fmt(ms(num(p, "waitMaxUs"))))
            .append(" | ")
            .append(p.getProperty("mostHolders", "–"))
            .append(" | ")
            .append(p.getProperty("perClient", "–"))
            .append(" | ")
            .append(p.getProperty("overlaps", "–"))
            .append(" | ")
            .append(p.getProperty("errors", "–"))
            .append(
                p.getProperty("firstError") != null
                    ? " (" + p.getProperty("firstError").replace("|", "/") + ")"
                    : "")
            .append(" |\n");
      }
    }
    md.append(
            "\n"
                + "Rerun: `lock-bench/run-bench.sh --only semaphores` (about 5 minutes). A skipped"
                + " Locksmith row says why; its peers ")
        .append("are measured all the same.\n");
    return md.toString();
  }

  private static void ratioRow(
      StringBuilder md,
      Group g,
      String what,
      double[] a,
      double[] b,
      String unit,
      String aId,
      String bId,
      Map<String, String> skipped) {
    md.append("| ").append(g.label).append(" | ").append(what).append(" | ");
    if (skipped.containsKey(aId) || skipped.containsKey(bId)) {
      md.append("skipped: `")
          .append(skipped.containsKey(aId) ? aId : bId)
          .append("` not measured (its row below says why) | | |\n");
      return;
    }
    double[] r = Rounds.ratios(a, b);
    md.append(Report.fmt(median(a)))
        .append(unit)
        .append(" / ")
        .append(Report.fmt(median(b)))
        .append(unit)
        .append(" | ")
        .append(r == null ? "–" : Report.fmt2(Rounds.median(r)))
        .append(" | ")
        .append(
            r == null
                ? "not measured"
                : Report.fmt2(Rounds.min(r)).replace("×", "")
                    + "–"
                    + Report.fmt2(Rounds.max(r))
                    + " ("
                    + r.length
                    + " rounds)")
        .append(" |\n");
  }

  private static String name(String peer) {
    switch (peer) {
      case "redisson-semaphore":
        return "Redisson RSemaphore";
      case "redisson-expirable-semaphore":
        return "Redisson RPermitExpirableSemaphore";
      case "curator-semaphore":
        return "Curator InterProcessSemaphoreV2";
      default:
        return peer;
    }
  }

  private static Double num(Properties p, String key) {
    return p == null || p.getProperty(key) == null ? null : Double.parseDouble(p.getProperty(key));
  }

  private static Double ms(Double us) {
    return us == null ? null : us / 1e3;
  }

  private static double[] ms(double[] us) {
    if (us == null) {
      return null;
    }
    double[] out = new double[us.length];
    for (int i = 0; i < us.length; i++) {
      out[i] = us[i] / 1e3;
    }
    return out;
  }

  private static Double median(double[] v) {
    if (v == null) {
      return null;
    }
    double m = Rounds.median(v);
    return Double.isNaN(m) ? null : m;
  }

  private static String withSpread(double[] v) {
    if (v == null) {
      return "not measured (its run failed: lock-bench/target/bench.log says why)";
    }
    return Report.fmt(median(v))
        + " ("
        + Report.fmt(Rounds.min(v))
        + "–"
        + Report.fmt(Rounds.max(v))
        + ")";
  }
}
