package dev.locksmith.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Properties;
import org.junit.jupiter.api.Test;

/** The harness's own arithmetic; no timing, no servers. */
class HarnessTest {

  @Test
  void handOffsCountOnlyChangesOfHolderInsideTheWindow() {
    HandoffCounter c = new HandoffCounter(3);
    assertThat(c.acquired(0, false)).isFalse(); // warm-up: tracked, not counted
    c.releasing();
    assertThat(c.acquired(1, true))
        .isTrue(); // 0 -> 1 is a hand-off even though 0 held it in warm-up
    c.releasing();
    assertThat(c.acquired(1, true)).isFalse(); // barging: the releaser took it straight back
    c.releasing();
    assertThat(c.acquired(2, true)).isTrue();
    c.releasing();
    assertThat(c.acquired(0, false)).isTrue(); // after the window: not counted
    c.releasing();

    assertThat(c.handoffs()).isEqualTo(2);
    assertThat(c.total()).isEqualTo(3);
    assertThat(c.perClient()).containsExactly(0, 2, 1);
    assertThat(c.overlaps()).isZero();
  }

  @Test
  void aHoldingThatStartsWhileAnotherIsOpenIsAnOverlap() {
    HandoffCounter c = new HandoffCounter(2);
    c.acquired(0, true);
    c.acquired(1, true); // 0 never released: mutual exclusion broken
    assertThat(c.overlaps()).isEqualTo(1);
  }

  @Test
  void percentilesAreNearestRank() {
    long[] samples = new long[100];
    for (int i = 0; i < 100; i++) {
      samples[i] = 100 - i; // unsorted on purpose
    }
    Percentiles p = new Percentiles(samples);
    assertThat(p.at(50)).isEqualTo(50);
    assertThat(p.at(99)).isEqualTo(99);
    assertThat(p.at(100)).isEqualTo(100);
    assertThat(p.max()).isEqualTo(100);
    assertThat(new Percentiles(new long[0]).at(99)).isZero();
  }

  @Test
  void longListGrowsPastItsFirstArray() {
    LongList l = new LongList();
    for (int i = 0; i < 5000; i++) {
      l.add(i);
    }
    assertThat(l.toArray()).hasSize(5000).startsWith(0, 1).endsWith(4999);
  }

  @Test
  void implementationsAreFiledUnderTheirServer() {
    assertThat(Impls.serverOf("locksmith-redis")).isEqualTo("redis");
    assertThat(Impls.serverOf("redisson-trylock")).isEqualTo("redis");
    assertThat(Impls.serverOf("blogloop-redis")).isEqualTo("redis");
    assertThat(Impls.serverOf("jetcd-lock")).isEqualTo("etcd");
    assertThat(Impls.serverOf("raw-etcd")).isEqualTo("etcd");
    assertThat(Impls.serverOf("locksmith-local")).isEqualTo("local");
    // the Cluster rows need BENCH_REDIS_CLUSTER, not the single server's BENCH_REDIS
    assertThat(Impls.serverOf("locksmith-redis-cluster")).isEqualTo("redis_cluster");
    assertThat(Impls.serverOf("redisson-lock-cluster")).isEqualTo("redis_cluster");
    assertThat(Impls.all()).containsAll(ClusterSection.IMPLS);
  }

  @Test
  void theClusterSectionReportsItsRatiosAndSaysWhenRedissonIsFaster() {
    java.util.Map<String, java.util.Map<String, Double>> f = new java.util.LinkedHashMap<>();
    f.put(
        "locksmith-redis",
        new java.util.LinkedHashMap<>(java.util.Map.of("p50Us", 100.0, "opsPerSec8", 8000.0)));
    f.put(
        "locksmith-redis-cluster",
        new java.util.LinkedHashMap<>(java.util.Map.of("p50Us", 150.0, "opsPerSec8", 6000.0)));
    f.put(
        "redisson-lock-cluster",
        new java.util.LinkedHashMap<>(java.util.Map.of("p50Us", 300.0, "opsPerSec8", 4000.0)));
    String md =
        ClusterSection.markdown(f, "header.", "lock-bench/run-bench.sh --only cluster", false);
    assertThat(md)
        .contains("| Locksmith p50, Cluster / single server | 1.50 |")
        .contains("| Locksmith 8-thread throughput, Cluster / single server | 0.75 |")
        .contains("| p50 on the Cluster, Locksmith / Redisson | 0.50 |")
        .contains("| 8-thread throughput on the Cluster, Locksmith / Redisson | 1.50 | ≥ 1: met |")
        .contains("| locksmith-redis-cluster | Cluster (6 nodes) | 150 | – | 6,000 | – |")
        .contains(
            "| redisson-lock | single server | – | – | – | – |") // not measured: a dash, not a zero
        .contains("Rerun: `lock-bench/run-bench.sh --only cluster`");

    f.get("redisson-lock-cluster").put("opsPerSec8", 7500.0);
    assertThat(ClusterSection.markdown(f, "", "", false)).contains("| 0.80 | ≥ 1: **missed** |");
    f.remove("redisson-lock-cluster");
    assertThat(ClusterSection.markdown(f, "", "", false)).contains("| – | ≥ 1: not measured |");
  }

  @Test
  void targetsAreRatiosOfOneRunAndSayWhenTheyAreMissed() {
    BenchMain.Results r = new BenchMain.Results();
    r.uncontended
        .computeIfAbsent("locksmith-redis", k -> new java.util.LinkedHashMap<>())
        .put("p50Us", 120.0);
    r.uncontended
        .computeIfAbsent("raw-redis", k -> new java.util.LinkedHashMap<>())
        .put("p50Us", 100.0);
    Properties scale = new Properties();
    scale.setProperty("clientRoundTripsPerPeriod", "10");
    r.scale.put("locksmith-redis", scale);

    Report.Target latency =
        Report.targets(r).stream().filter(t -> t.what.contains("p50")).findFirst().orElseThrow();
    assertThat(latency.ratio()).isEqualTo(1.2);
    assertThat(latency.verdict()).contains("missed");
    Report.Target trips =
        Report.targets(r).stream()
            .filter(t -> t.what.contains("round trips"))
            .findFirst()
            .orElseThrow();
    assertThat(trips.ratio()).isEqualTo(10.0);
    assertThat(trips.verdict()).isEqualTo("met");
  }

  @Test
  void theChartIsWellFormedSvgWithTheTargetsFirst() throws Exception {
    BenchMain.Results r = new BenchMain.Results();
    r.uncontended
        .computeIfAbsent("locksmith-redis", k -> new java.util.LinkedHashMap<>())
        .put("p50Us", 120.0);
    r.uncontended
        .computeIfAbsent("raw-redis", k -> new java.util.LinkedHashMap<>())
        .put("p50Us", 100.0);
    r.uncontended.get("locksmith-redis").put("opsPerSec8", 9000.0);
    r.uncontended.get("raw-redis").put("opsPerSec8", 10000.0);
    Properties contended = new Properties();
    contended.setProperty("handoffsPerSec", "250");
    contended.setProperty("waiterP99Us", "5000");
    r.contended.put("locksmith-redis", contended);
    Properties session =
        new Properties(); // the same requests/s with 10 and 10,000 locks: growth 0, met
    session.setProperty("few", "10");
    session.setProperty("many", "10000");
    session.setProperty("fewRequestsPerSec", "0.6");
    session.setProperty("manyRequestsPerSec", "0.6");
    r.sessionScale.put("locksmith-etcd", session);

    String svg = Chart.svg(r);
    java.nio.file.Files.createDirectories(java.nio.file.Path.of("target"));
    java.nio.file.Files.writeString(java.nio.file.Path.of("target", "chart-test.svg"), svg);
    javax.xml.parsers.DocumentBuilderFactory.newInstance()
        .newDocumentBuilder()
        .parse(
            new java.io.ByteArrayInputStream(
                svg.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    assertThat(svg.indexOf("Targets")).isLessThan(svg.indexOf("Uncontended"));
    assertThat(svg).contains("#c0392b").contains("#2e8b57"); // p50 1.2x missed, throughput 0.9x met
    // every target with a figure has a row, a growth of 0 (which no log scale can place) included
    for (Report.Target t : Report.targets(r)) {
      if (t.ratio() != null) {
        assertThat(svg)
            .as("a row for " + t.what)
            .contains("(" + (t.atMost ? "≤ " : "≥ ") + Report.fmtBound(t.bound) + ")");
      }
    }
    assertThat(svg).contains("etcd: renewal traffic growth");
  }

  @Test
  void sessionTrafficIsJudgedByGrowthPerThousandLocksNotByARatioOfTinyCounts() {
    BenchMain.Results r = new BenchMain.Results();
    Properties p = new Properties();
    p.setProperty("few", "10");
    p.setProperty("many", "10000");
    p.setProperty("fewRequestsPerSec", "0.33"); // 2 keep-alives in 6 s
    p.setProperty("manyRequestsPerSec", "0.67"); // 4: one window phase, not per-lock traffic
    r.sessionScale.put("locksmith-etcd", p);
    Report.Target t = Report.targets(r).get(0);
    assertThat(t.ratio()).isLessThan(0.1);
    assertThat(t.verdict()).isEqualTo("met");

    p.setProperty("manyRequestsPerSec", "3333"); // a renewal per lock every 3 s
    assertThat(Report.targets(r).get(0).verdict()).contains("missed");
  }

  @Test
  void aFullRunKeepsTheSectionsOtherRunsWroteAndASectionRunReplacesOnlyItsOwn() throws Exception {
    String old =
        "# old report\n\n"
            + ResultSections.replace("", "cluster", "## Cluster\nold cluster rows\n")
            + ResultSections.replace("", "annotation-overhead", "## Annotation\n42 ns\n");
    java.nio.file.Path file = java.nio.file.Files.createTempFile("results", ".md");
    java.nio.file.Files.writeString(file, old);

    String kept = ResultSections.keepAll(file, "# new report\n");
    assertThat(kept)
        .startsWith("# new report\n")
        .doesNotContain("old report")
        .contains("<!-- cluster:start -->\n## Cluster\nold cluster rows\n<!-- cluster:end -->")
        .contains(
            "<!-- annotation-overhead:start -->\n"
                + "## Annotation\n"
                + "42 ns\n"
                + "<!-- annotation-overhead:end -->");
    // a report that measured a section itself keeps its own figures
    assertThat(
            ResultSections.keepAll(file, ResultSections.replace("# new\n", "cluster", "new rows")))
        .contains("new rows")
        .doesNotContain("old cluster rows")
        .contains("42 ns");

    ResultSections.write(file, "cluster", "## Cluster\nnew rows\n");
    assertThat(java.nio.file.Files.readString(file))
        .startsWith("# old report")
        .contains("new rows")
        .doesNotContain("old cluster rows")
        .contains("42 ns");
    java.nio.file.Files.delete(file);
  }

  @Test
  void perRoundRatiosPairRoundsAndDropRoundsWithoutAFigure() {
    double[] r =
        Rounds.ratios(new double[] {110, 120, Double.NaN, 90}, new double[] {100, 100, 100, 0});
    assertThat(r).containsExactly(1.1, 1.2); // NaN and a zero denominator drop their round
    assertThat(Rounds.ratios(null, new double[] {1})).isNull();
    assertThat(Rounds.ratios(new double[] {Double.NaN}, new double[] {1})).isNull();
    assertThat(Rounds.median(new double[] {3, 1, 2})).isEqualTo(2.0);
    assertThat(Rounds.median(new double[] {4, 1, 3, 2})).isEqualTo(2.5);
    assertThat(Rounds.median(new double[0])).isNaN();
    assertThat(Rounds.min(new double[] {3, 1, 2})).isEqualTo(1.0);
    assertThat(Rounds.max(new double[] {3, 1, 2})).isEqualTo(3.0);
  }

  @Test
  void aTargetInRoundsIsMetOnlyWhenItsWholeSpreadIsOnTheRightSide() {
    BenchMain.Results r = new BenchMain.Results();
    // median 1.10 <= 1.15, but one round at 1.30: the spread straddles the bound, so not met
    r.rounds.put("locksmith-zookeeper/p50Us", new double[] {110, 130, 105, 112, 108});
    r.rounds.put("raw-zookeeper/p50Us", new double[] {100, 100, 100, 100, 100});
    r.uncontended
        .computeIfAbsent("locksmith-zookeeper", k -> new java.util.LinkedHashMap<>())
        .put("p50Us", 110.0);
    r.uncontended
        .computeIfAbsent("raw-zookeeper", k -> new java.util.LinkedHashMap<>())
        .put("p50Us", 100.0);
    Report.Target p50 =
        Report.targets(r).stream()
            .filter(t -> t.what.startsWith("zookeeper: uncontended p50, Locksmith / raw"))
            .findFirst()
            .orElseThrow();
    assertThat(p50.ratio())
        .isEqualTo(1.1); // the median of the per-round ratios, not the ratio of the medians
    assertThat(p50.verdict()).contains("undecided").doesNotStartWith("met");
    assertThat(p50.spread()).isEqualTo("1.05–1.30× (5 rounds)");

    r.rounds.put("locksmith-zookeeper/p50Us", new double[] {110, 114, 105, 112, 108});
    assertThat(Report.targets(r).get(0).verdict()).isEqualTo("met");
    r.rounds.put("locksmith-zookeeper/p50Us", new double[] {120, 130, 116, 125, 140});
    assertThat(Report.targets(r).get(0).verdict()).isEqualTo("**missed**");

    // an at-least target: throughput against the peer, every round must be >= 1
    r.rounds.put("locksmith-zookeeper/opsPerSec8", new double[] {1000, 1100, 990});
    r.rounds.put("curator-mutex/opsPerSec8", new double[] {900, 1000, 1000});
    r.uncontended.get("locksmith-zookeeper").put("opsPerSec8", 1000.0);
    r.uncontended
        .computeIfAbsent("curator-mutex", k -> new java.util.LinkedHashMap<>())
        .put("opsPerSec8", 1000.0);
    Report.Target peer =
        Report.targets(r).stream()
            .filter(t -> t.what.equals("zookeeper: 8-thread throughput, Locksmith / curator-mutex"))
            .findFirst()
            .orElseThrow();
    // 0.99 in one round: not shown ahead, but not behind by more than 5 % either
    assertThat(peer.verdict()).startsWith("level (within 5 %").doesNotContain("undecided");
    r.rounds.put("locksmith-zookeeper/opsPerSec8", new double[] {1000, 1100, 940});
    assertThat(
            Report.targets(r).stream()
                .filter(t -> t.what.equals(peer.what))
                .findFirst()
                .orElseThrow()
                .verdict())
        .contains("undecided"); // 0.94 in one round: more than 5 % behind
    r.rounds.put("locksmith-zookeeper/opsPerSec8", new double[] {1000, 1100, 1000});
    assertThat(
            Report.targets(r).stream()
                .filter(t -> t.what.equals(peer.what))
                .findFirst()
                .orElseThrow()
                .verdict())
        .isEqualTo("met");
  }

  @Test
  void theMediansIntervalHasAtLeast95PercentCoverageAndLeavesOutRoundsOnlyWhenThatHolds() {
    // P(Binomial(6, 1/2) = 0) = 1/64 on each side: the min-max of 6 rounds covers 1 - 2/64
    assertThat(Rounds.coverage(6, 1))
        .isCloseTo(1 - 2.0 / 64, org.assertj.core.data.Offset.offset(1e-12));
    // 9 rounds: dropping one at each end leaves 1 - 2 * (1 + 9) / 512
    assertThat(Rounds.coverage(9, 2))
        .isCloseTo(1 - 20.0 / 512, org.assertj.core.data.Offset.offset(1e-12));
    assertThat(Rounds.intervalRank(5)).isEqualTo(1);
    assertThat(Rounds.intervalRank(8)).isEqualTo(1); // coverage(8, 2) = 0.93
    assertThat(Rounds.intervalRank(9)).isEqualTo(2);
    assertThat(Rounds.intervalRank(11)).isEqualTo(2); // coverage(11, 3) = 0.935
    assertThat(Rounds.intervalRank(12)).isEqualTo(3);
    for (int n = 1; n <= 30; n++) {
      int k = Rounds.intervalRank(n);
      assertThat(k == 1 || Rounds.coverage(n, k) >= Rounds.CONFIDENCE).as("n=%d", n).isTrue();
      assertThat(Rounds.coverage(n, k + 1)).as("n=%d", n).isLessThan(Rounds.CONFIDENCE);
    }
    double[] twelve = {1.30, 1.02, 1.05, 1.20, 1.08, 1.10, 1.04, 1.06, 1.12, 1.09, 0.80, 1.07};
    assertThat(Rounds.low(twelve)).isEqualTo(1.04); // sorted: 0.80 1.02 1.04 ...
    assertThat(Rounds.high(twelve)).isEqualTo(1.12); // ... 1.12 1.20 1.30
    assertThat(Rounds.verdict(twelve, true, 1.15))
        .isEqualTo("met"); // two rounds of twelve above: outside the interval
    double[] threeAbove = twelve.clone();
    threeAbove[5] = 1.16;
    assertThat(Rounds.verdict(threeAbove, true, 1.15))
        .isEqualTo("undecided"); // the third-highest is in the interval
    assertThat(Rounds.verdict(twelve, false, 1.10)).isEqualTo("undecided");
    assertThat(Rounds.verdict(twelve, false, 1.0)).isEqualTo("met");
    assertThat(Rounds.verdict(twelve, false, 1.13)).isEqualTo("missed");

    BenchMain.Results r = new BenchMain.Results();
    r.rounds.put(
        "locksmith-zookeeper/p50Us", java.util.Arrays.stream(twelve).map(x -> x * 100).toArray());
    r.rounds.put(
        "raw-zookeeper/p50Us",
        new double[] {100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100});
    r.uncontended
        .computeIfAbsent("locksmith-zookeeper", k -> new java.util.LinkedHashMap<>())
        .put("p50Us", 107.5);
    r.uncontended
        .computeIfAbsent("raw-zookeeper", k -> new java.util.LinkedHashMap<>())
        .put("p50Us", 100.0);
    Report.Target p50 = Report.targets(r).get(0);
    assertThat(p50.spread())
        .isEqualTo("1.04–1.12× (12 rounds, 96 % interval of the median; min–max 0.80–1.30×)");
    assertThat(p50.verdict()).isEqualTo("met");
  }

  @Test
  void contendedRoundsMergeIntoMediansAndSums() {
    Properties a = new Properties();
    a.setProperty("handoffsPerSec", "100");
    a.setProperty("waiterP99Us", "5000");
    a.setProperty("overlaps", "0");
    a.setProperty("errors", "1");
    a.setProperty("perClient", "1/2/3");
    a.setProperty("waiterMaxUs", "9000");
    Properties b = new Properties();
    b.setProperty("handoffsPerSec", "300");
    b.setProperty("waiterP99Us", "7000");
    b.setProperty("overlaps", "2");
    b.setProperty("errors", "0");
    b.setProperty("perClient", "10/20/30");
    b.setProperty("waiterMaxUs", "8000");
    Properties c = new Properties();
    c.setProperty("handoffsPerSec", "200");
    c.setProperty("waiterP99Us", "6000");
    Properties m = BenchMain.mergeRounds(java.util.List.of(a, b, c));
    assertThat(m.getProperty("handoffsPerSec")).isEqualTo("200.0");
    assertThat(m.getProperty("waiterP99Us")).isEqualTo("6000.0");
    assertThat(m.getProperty("overlaps")).isEqualTo("2"); // an overlap in any round shows
    assertThat(m.getProperty("errors")).isEqualTo("1");
    assertThat(m.getProperty("perClient")).isEqualTo("11/22/33");
    assertThat(m.getProperty("waiterMaxUs")).isEqualTo("9000.0");
  }

  @Test
  void theReactiveSectionJudgesEachRatioAgainstItsGoalAndSaysWhatWasNotMeasured() {
    java.util.Map<String, double[]> f = new java.util.LinkedHashMap<>();
    f.put("locksmith-redis/p50Us", new double[] {100, 100, 100});
    f.put("locksmith-reactive-redis/p50Us", new double[] {105, 108, 104});
    f.put("locksmith-redis/opsPerSec", new double[] {1000, 1000, 1000});
    f.put("locksmith-reactive-redis/opsPerSec", new double[] {800, 850, 820});
    String md = ReactiveRun.markdown("header", f, java.util.List.of("local"), 3, 1, 1);
    assertThat(md)
        .contains("| Redis | reactive / blocking, 1 thread p50 | 105 µs / 100 µs")
        .containsPattern("reactive / blocking, 1 thread p50 \\|[^\\n]*≤ 1.1 \\| met \\|")
        .containsPattern("reactive / blocking, 8 threads ops/s \\|[^\\n]*≥ 0.9 \\| missed \\|")
        .contains("| local: | reactive / blocking, 1 thread p50 | skipped: no server")
        .contains("Locksmith reactive / Redisson RLockReactive, 1 thread p50 | not measured");
  }
}
