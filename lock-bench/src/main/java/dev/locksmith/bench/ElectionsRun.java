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
 * The {@code elections} section of RESULTS.md (issue 32), written through {@link ResultSections}:
 * hand-overs of one election between two contenders, watched by an observer ({@link
 * ElectionRounds}), Locksmith's {@code client.election(name)} against Curator's {@code LeaderLatch}
 * (ZooKeeper) and jetcd's {@code Election} (etcd) on the same servers, and Locksmith on Redis for
 * information. One JVM per server, implementations in interleaved rounds.
 */
final class ElectionsRun {
  static final String SECTION = "elections";
  private static final Logger LOG = LoggerFactory.getLogger(ElectionsRun.class);

  /** One server: Locksmith's election and the peer's (null: none). */
  record Pair(String label, String server, String locksmith, String peer, String peerName) {
    List<String> ids() {
      return peer == null ? List.of(locksmith) : List.of(locksmith, peer);
    }
  }

  static final List<Pair> PAIRS =
      List.of(
          new Pair(
              "ZooKeeper",
              "zookeeper",
              "locksmith-election-zookeeper",
              "curator-leaderlatch",
              "Curator LeaderLatch"),
          new Pair("etcd", "etcd", "locksmith-election-etcd", "jetcd-election", "jetcd Election"),
          new Pair("Redis", "redis", "locksmith-election-redis", null, null));

  private ElectionsRun() {}

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
    int perRound = quick ? 10 : 40;
    for (Pair pair : PAIRS) {
      if (Endpoints.get(pair.server) == null) {
        skipped.put(pair.label, "no " + pair.server + " server");
        continue;
      }
      LOG.info("elections on {}, {} interleaved rounds: {}", pair.label, n, pair.ids());
      Properties p =
          BenchMain.childOrError(
              ElectionRounds.class,
              Integer.toString(n),
              Integer.toString(perRound),
              String.join(",", pair.ids()));
      if (p.getProperty("firstError") != null) {
        LOG.error("elections on {} failed: {}", pair.label, p.getProperty("firstError"));
        skipped.put(pair.label, p.getProperty("firstError"));
      }
      for (String id : pair.ids()) {
        for (String key :
            List.of("handoverP50Us", "handoverP99Us", "observeP50Us", "observeP99Us")) {
          rounds.put(id + "/" + key, BenchMain.perRound(p, id, key, n));
        }
      }
    }
    String header = ResultSections.measured("ElectionsRun", SECTION, started, loadBefore, quick);
    String versions =
        "Servers: "
            + JdbcPeersRun.env("BENCH_ZOOKEEPER_VERSION")
            + "; "
            + JdbcPeersRun.env("BENCH_ETCD_VERSION")
            + "; "
            + JdbcPeersRun.env("BENCH_REDIS_VERSION")
            + ". Peers: Curator "
            + JdbcPeersRun.version(
                org.apache.curator.framework.recipes.leader.LeaderLatch.class,
                "org.apache.curator/curator-recipes")
            + ", jetcd "
            + JdbcPeersRun.version(io.etcd.jetcd.Client.class, "io.etcd/jetcd-core")
            + ".";
    Path results = out.resolve("RESULTS.md");
    ResultSections.write(
        results, SECTION, markdown(header, versions, rounds, skipped, n, perRound));
    LOG.info("wrote the {} section of {}", SECTION, results);
  }

  static String markdown(
      String header,
      String versions,
      Map<String, double[]> rounds,
      Map<String, String> skipped,
      int n,
      int perRound) {
    StringBuilder md = new StringBuilder();
    md.append("## Leader election (issue 32)\n\n")
        .append(header)
        .append("\n\n")
        .append(versions)
        .append(" Two contenders, each with a client of its own (connection or session), hand")
        .append(" one election back and forth; a third client observes it. A hand-over: the")
        .append(" leader resigns at t0 while the other campaigns; *hand-over* is t0 until the")
        .append(" other's campaign returns leading, *observe* is t0 until the observer is told")
        .append(" the other leads. Locksmith: `election(name).campaign(id, timeout)`,")
        .append(" `Leadership.resign()`, `election(name).observe(listener)` (default options).")
        .append(" Curator: a `LeaderLatch` per campaign (`start()`, `await()`, `close()` to")
        .append(" resign); its observer is a `CuratorCache` of the latch's path reading")
        .append(" `getLeader()` on every event (Curator has no observer of its own). jetcd:")
        .append(" `Election.campaign` under a 10 s lease kept alive, `resign`, `observe`. ")
        .append(n)
        .append(" interleaved rounds of ")
        .append(perRound)
        .append(" hand-overs after a warm-up round each (`ElectionRounds`, one JVM per server).")
        .append(" Ratios are medians of the per-round ratios of the p50s, spread their min–max.")
        .append(" Goal (issue 32): ahead of the peer on both rows (ratio < 1).\n\n");
    md.append("| server | ratio | figures | median | spread | goal |\n|---|---|---|---|---|---|\n");
    for (Pair pair : PAIRS) {
      if (pair.peer == null) {
        continue;
      }
      for (String what : List.of("handover", "observe")) {
        SetsRun.row(
            md,
            pair.label,
            what + " p50, Locksmith / " + pair.peerName,
            rounds.get(pair.locksmith + "/" + what + "P50Us"),
            rounds.get(pair.peer + "/" + what + "P50Us"),
            " µs",
            "< 1.00",
            1.0,
            false);
      }
    }
    md.append("\nEvery implementation (µs; median over the rounds, min–max in brackets):\n\n")
        .append("| server | implementation | hand-over p50 | hand-over p99 | observe p50 |")
        .append(" observe p99 |\n|---|---|---|---|---|---|\n");
    for (Pair pair : PAIRS) {
      for (String id : pair.ids()) {
        md.append("| ").append(pair.label).append(" | `").append(id).append("` | ");
        for (String key :
            List.of("handoverP50Us", "handoverP99Us", "observeP50Us", "observeP99Us")) {
          md.append(SetsRun.withSpread(rounds.get(id + "/" + key))).append(" | ");
        }
        md.setLength(md.length() - 1);
        md.append("\n");
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
        "\nA leader that crashes is replaced one lease (Redis, databases) or one session timeout"
            + " (etcd, ZooKeeper) later: measured under real faults in the fault comparison"
            + " (lock-compare/RESULTS.md, leader election rows), not here. Rerun:"
            + " `lock-bench/run-bench.sh --only elections`.\n");
    return md.toString();
  }
}
