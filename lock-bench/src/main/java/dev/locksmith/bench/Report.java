package dev.locksmith.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/**
 * Writes RESULTS.md: the targets as ratios from this one run, then every figure, then the facts.
 */
final class Report {
  private Report() {}

  /** One target: a ratio of two figures of this run, and the bound it must meet. */
  static final class Target {
    final String what;
    final Double numerator;
    final Double denominator;
    final boolean atMost;
    final double bound;
    final String figures;

    /**
     * The per-round ratios when both figures were measured in interleaved rounds; null for a single
     * figure.
     */
    double[] rounds;

    /**
     * For a comparison with a peer (bound 1): how far on the wrong side of the bound the interval
     * may reach and still be called level with it; 0 for a target that has no "level".
     */
    double levelMargin;

    Target(
        String what,
        Double numerator,
        Double denominator,
        boolean atMost,
        double bound,
        String figures) {
      this.what = what;
      this.numerator = numerator;
      this.denominator = denominator;
      this.atMost = atMost;
      this.bound = bound;
      this.figures = figures;
    }

    /**
     * Makes a target against a peer say "level" when its interval straddles the bound but stays
     * within {@code margin} of it on the wrong side: not shown ahead, and not shown behind by more
     * than the margin.
     */
    Target levelWithin(double margin) {
      this.levelMargin = margin;
      return this;
    }

    /** Sets the per-round ratios (null leaves the target a ratio of two single figures). */
    Target rounds(double[] perRound) {
      this.rounds = perRound;
      return this;
    }

    /**
     * @return the median of the per-round ratios when there are rounds, else the ratio of the two
     *     figures
     */
    Double ratio() {
      if (rounds != null) {
        return Rounds.median(rounds);
      }
      if (numerator == null || denominator == null || denominator == 0) {
        return null;
      }
      return numerator / denominator;
    }

    String verdict() {
      Double r = ratio();
      if (r == null) {
        return "not measured";
      }
      if (rounds != null) {
        // met only when the median's whole interval is on the right side of the bound
        String v = Rounds.verdict(rounds, atMost, bound);
        if (v.equals("undecided")
            && levelMargin > 0
            && (atMost
                ? Rounds.high(rounds) <= bound * (1 + levelMargin)
                : Rounds.low(rounds) >= bound * (1 - levelMargin))) {
          return "level (within "
              + Math.round(100 * levelMargin)
              + " %: not shown ahead, nor behind by more)";
        }
        return v.equals("met")
            ? "met"
            : v.equals("missed") ? "**missed**" : "**undecided** (spread straddles the bound)";
      }
      boolean met = atMost ? r <= bound : r >= bound;
      return met ? "met" : "**missed**";
    }

    /**
     * @return the median's confidence interval of the per-round ratios with the number of rounds,
     *     and the min–max too when the interval leaves rounds out; or "one figure each"
     */
    String spread() {
      if (rounds == null) {
        return "one figure each";
      }
      boolean absolute = figures.startsWith("absolute");
      String interval = range(absolute, Rounds.low(rounds), Rounds.high(rounds));
      int k = Rounds.intervalRank(rounds.length);
      if (k == 1) {
        return interval + " (" + rounds.length + " rounds)";
      }
      return interval
          + " ("
          + rounds.length
          + " rounds, "
          + (int) Math.floor(100 * Rounds.coverage(rounds.length, k))
          + " % interval of the median; min–max "
          + range(absolute, Rounds.min(rounds), Rounds.max(rounds))
          + ")";
    }

    private static String range(boolean absolute, double lo, double hi) {
      return absolute ? fmt(lo) + "–" + fmt(hi) : fmt2(lo).replace("×", "") + "–" + fmt2(hi);
    }
  }

  /**
   * Against a peer, "level" (issue 22: "ahead of or level with its peer"): the median's interval
   * straddles 1 and reaches at most 5 % to the wrong side. A bound of exactly 1 alone could only
   * ever say "ahead": two implementations that are truly equal straddle it in every run, however
   * many rounds.
   */
  static final double LEVEL = 0.05;

  static List<Target> targets(BenchMain.Results r) {
    List<Target> t = new ArrayList<>();
    for (String server : List.of("redis", "etcd", "zookeeper", "jdbc")) {
      String ls = "locksmith-" + server;
      String raw = "raw-" + server;
      if (r.uncontended.containsKey(ls)) {
        t.add(
            new Target(
                    server + ": uncontended p50, Locksmith / raw floor",
                    r.un(ls, "p50Us"),
                    r.un(raw, "p50Us"),
                    true,
                    1.15,
                    fmt(r.un(ls, "p50Us")) + " µs / " + fmt(r.un(raw, "p50Us")) + " µs")
                .rounds(r.ratios(ls, raw, "p50Us")));
        t.add(
            new Target(
                    server + ": 8-thread throughput, Locksmith / raw floor",
                    r.un(ls, "opsPerSec8"),
                    r.un(raw, "opsPerSec8"),
                    false,
                    0.8,
                    fmt(r.un(ls, "opsPerSec8")) + " / " + fmt(r.un(raw, "opsPerSec8")) + " ops/s")
                .rounds(r.ratios(ls, raw, "opsPerSec8")));
      }
    }
    for (String[] pair :
        new String[][] {
          {"locksmith-redis", "redisson-lock"},
          {"locksmith-redis", "redisson-trylock"},
          {"locksmith-etcd", "jetcd-lock"},
          {"locksmith-zookeeper", "curator-mutex"}
        }) {
      if (r.uncontended.containsKey(pair[0]) && r.uncontended.containsKey(pair[1])) {
        // issue 22: ahead of (or level with) the peer on every row, latency as well as throughput
        t.add(
            new Target(
                    Impls.serverOf(pair[0]) + ": uncontended p50, Locksmith / " + pair[1],
                    r.un(pair[0], "p50Us"),
                    r.un(pair[1], "p50Us"),
                    true,
                    1.0,
                    fmt(r.un(pair[0], "p50Us")) + " µs / " + fmt(r.un(pair[1], "p50Us")) + " µs")
                .rounds(r.ratios(pair[0], pair[1], "p50Us"))
                .levelWithin(LEVEL));
        t.add(
            new Target(
                    Impls.serverOf(pair[0]) + ": 8-thread throughput, Locksmith / " + pair[1],
                    r.un(pair[0], "opsPerSec8"),
                    r.un(pair[1], "opsPerSec8"),
                    false,
                    1.0,
                    fmt(r.un(pair[0], "opsPerSec8"))
                        + " / "
                        + fmt(r.un(pair[1], "opsPerSec8"))
                        + " ops/s")
                .rounds(r.ratios(pair[0], pair[1], "opsPerSec8"))
                .levelWithin(LEVEL));
      }
    }
    for (String[] pair :
        new String[][] {
          {"locksmith-redis", "redisson-lock"},
          {"locksmith-etcd", "jetcd-lock"},
          {"locksmith-zookeeper", "curator-mutex"}
        }) {
      if (r.contended.containsKey(pair[0]) && r.contended.containsKey(pair[1])) {
        t.add(
            new Target(
                    Impls.serverOf(pair[0]) + ": contended hand-offs/s, Locksmith / " + pair[1],
                    r.con(pair[0], "handoffsPerSec"),
                    r.con(pair[1], "handoffsPerSec"),
                    false,
                    1.0,
                    fmt(r.con(pair[0], "handoffsPerSec"))
                        + " / "
                        + fmt(r.con(pair[1], "handoffsPerSec"))
                        + " per s")
                .rounds(r.ratios(pair[0], pair[1], "handoffsPerSec"))
                .levelWithin(LEVEL));
      }
    }
    for (String ls :
        List.of("locksmith-redis", "locksmith-etcd", "locksmith-zookeeper", "locksmith-jdbc")) {
      if (r.contended.containsKey(ls) && r.contended.containsKey("blogloop-redis")) {
        t.add(
            new Target(
                    Impls.serverOf(ls)
                        + ": contended waiter p99, Locksmith / hand-written sleep loop (redis)",
                    r.con(ls, "waiterP99Us"),
                    r.con("blogloop-redis", "waiterP99Us"),
                    true,
                    0.1,
                    fmt(ms(r.con(ls, "waiterP99Us")))
                        + " ms / "
                        + fmt(ms(r.con("blogloop-redis", "waiterP99Us")))
                        + " ms")
                .rounds(r.ratios(ls, "blogloop-redis", "waiterP99Us")));
      }
    }
    if (r.contended.containsKey("locksmith-etcd")) {
      // issue 22: the waiter's tail follows the hand-off, not etcd's 100 ms loop that catches up
      // old-revision watches
      double[] perRound = r.rounds.get("locksmith-etcd/waiterP99Us");
      t.add(
          new Target(
                  "etcd: contended waiter p99 (ms)",
                  ms(r.con("locksmith-etcd", "waiterP99Us")),
                  1.0,
                  true,
                  50,
                  "absolute: " + fmt(ms(r.con("locksmith-etcd", "waiterP99Us"))) + " ms")
              .rounds(
                  perRound == null
                      ? null
                      : java.util.Arrays.stream(perRound).map(v -> v / 1000).toArray()));
    }
    if (r.scale.containsKey("locksmith-redis")) {
      Double rt = roundTrips(r, "locksmith-redis");
      t.add(
          new Target(
              "redis: round trips per renewal period, 10,000 leases held",
              rt,
              1.0,
              true,
              100,
              "absolute: " + fmt(rt) + " round trips"));
    }
    for (String impl : r.sessionScale.keySet()) {
      Properties p = r.sessionScale.get(impl);
      // Growth per 1,000 extra locks, not a ratio: the rates are a few keep-alives per window, so
      // one message more
      // would double a ratio. Per-lock renewal would add about 1,000 / period requests/s per 1,000
      // locks.
      Double many = r.ss(impl, "manyRequestsPerSec");
      Double few = r.ss(impl, "fewRequestsPerSec");
      Double extra =
          p.getProperty("many") == null
              ? null
              : Double.parseDouble(p.getProperty("many"))
                  - Double.parseDouble(p.getProperty("few"));
      Double growth =
          many == null || few == null || extra == null || extra <= 0
              ? null
              : (many - few) / (extra / 1000.0);
      t.add(
          new Target(
              Impls.serverOf(impl)
                  + ": renewal traffic growth, server requests/s per 1,000 more locks held",
              growth,
              1.0,
              true,
              1.0,
              "absolute: "
                  + fmt(few)
                  + " requests/s with "
                  + p.getProperty("few")
                  + " locks, "
                  + fmt(many)
                  + " with "
                  + p.getProperty("many")));
    }
    return t;
  }

  /**
   * Round trips per renewal period: the client's own count where it has one, else one per renewal
   * pipeline.
   */
  static Double roundTrips(BenchMain.Results r, String impl) {
    Double client = r.sc(impl, "clientRoundTripsPerPeriod");
    if (client != null && client >= 0) {
      return client;
    }
    if (impl.startsWith("redisson")) {
      return r.sc(impl, "requestsPerPeriod");
    }
    return r.sc(impl, "scriptLoadsPerPeriod");
  }

  static String markdown(BenchMain.Results r, String command) {
    StringBuilder md = new StringBuilder();
    Properties v = Machine.libraryVersions();
    md.append("# lock-bench results\n\n");
    md.append("Generated by `lock-bench/run-bench.sh`")
        .append(r.quick ? " in **--quick** mode (short runs: indicative only)" : "")
        .append(" on ")
        .append(r.started)
        .append(", taking ")
        .append(Duration.between(r.started, r.finished).toSeconds())
        .append(" s. Every ratio compares two figures of this one run.\n\n");
    md.append("Rerun: `").append(command).append("`\n\n");

    md.append("## Targets (issues 9 and 22)\n\n");
    md.append(
        "Where both figures were measured in interleaved rounds, the ratio is the median of the"
            + " per-round ratios and the spread the median's confidence interval of at least 95 %,"
            + " distribution-free: from the k-th lowest to the k-th highest per-round ratio, with"
            + " the largest k for which a true median outside it has a chance of under 5 % (k = 1,"
            + " the min–max, up to 8 rounds; k = 2 from 9 rounds, 3 from 12). A target is met only"
            + " when the whole interval is on the right side of the bound (\"undecided\": it"
            + " straddles it). Against a peer, an interval that straddles 1 but reaches at most 5 %"
            + " to the wrong side is \"level\": not shown ahead, nor behind by more. Where the"
            + " interval leaves rounds out, the min–max is shown too. Figures are the medians of"
            + " the rounds.\n\n");
    md.append(
        "| target | figures | ratio | spread | bound | verdict |\n|---|---|---|---|---|---|\n");
    for (Target t : targets(r)) {
      md.append("| ")
          .append(t.what)
          .append(" | ")
          .append(t.figures)
          .append(" | ")
          .append(t.figures.startsWith("absolute") ? fmt(t.ratio()) : fmt2(t.ratio()))
          .append(" | ")
          .append(t.spread())
          .append(" | ")
          .append(t.atMost ? "≤ " : "≥ ")
          .append(fmtBound(t.bound))
          .append(" | ")
          .append(t.verdict())
          .append(" |\n");
    }

    md.append("\n## Uncontended acquire + release\n\n");
    md.append(
        "Each server's implementations run side by side in one JVM (`RoundsRun`), in interleaved"
            + " rounds: after a warm-up of each (in slices, interleaved), every implementation gets"
            + " one measured round in turn, the order reversed every other round, so that the rest"
            + " of the machine's load falls on all of them alike. 1 thread: the latency of every"
            + " acquire + release in the round (p50, p99); 8 threads: each thread on a name of its"
            + " own, operations per second over the round. Figures are the medians over the rounds,"
            + " with their min–max; ratios against the floor are the medians of the per-round"
            + " ratios. "
            + r.roundsNote
            + "\n");
    md.append(
        "Locksmith is called through its public API with default options (30 s lease, auto-renew"
            + " on, reentrant).\n\n");
    md.append(
        "| implementation | server | p50 µs (min–max) | p99 µs | ops/s, 8 threads (min–max) | p50 /"
            + " floor | ops/s / floor |\n"
            + "|---|---|---|---|---|---|---|\n");
    for (Map.Entry<String, Map<String, Double>> e : r.uncontended.entrySet()) {
      String impl = e.getKey();
      String server = Impls.serverOf(impl);
      String floor = "raw-" + server;
      md.append("| ")
          .append(impl)
          .append(" | ")
          .append(server)
          .append(" | ")
          .append(fmt(r.un(impl, "p50Us")))
          .append(range(r.rounds.get(impl + "/p50Us")))
          .append(" | ")
          .append(fmt(r.un(impl, "p99Us")))
          .append(" | ")
          .append(fmt(r.un(impl, "opsPerSec8")))
          .append(range(r.rounds.get(impl + "/opsPerSec8")));
      if (r.uncontended.containsKey(floor) && !impl.equals(floor)) {
        double[] p50 = r.ratios(impl, floor, "p50Us");
        double[] ops = r.ratios(impl, floor, "opsPerSec8");
        md.append(" | ")
            .append(
                p50 == null
                    ? fmt2(div(r.un(impl, "p50Us"), r.un(floor, "p50Us")))
                    : fmt2(Rounds.median(p50)) + range2(p50))
            .append(" | ")
            .append(
                ops == null
                    ? fmt2(div(r.un(impl, "opsPerSec8"), r.un(floor, "opsPerSec8")))
                    : fmt2(Rounds.median(ops)) + range2(ops))
            .append(" |\n");
      } else {
        md.append(" | | |\n");
      }
    }

    md.append("\n## Contended: ")
        .append(BenchMain.CONTENDED_CLIENTS)
        .append(" clients on one name, ~1 ms of work per hold\n\n");
    md.append(
        "Each client has its own connection or session and loops: acquire, park 1 ms, release."
            + " Hand-off: an acquisition by a different client than the previous holder. Wait: from"
            + " calling acquire until it returned. *Waiter* waits are those of the hand-offs (the"
            + " client found the lock held by another and had to wait for it), plus, for a client"
            + " still waiting when the window closed, its wait so far: a starved client completes"
            + " few waits, so without these its starvation would not show. *All* waits include a"
            + " releasing client's immediate re-acquisitions (barging). Overlaps: holdings that"
            + " began while another was open (must be 0). Each implementation runs in interleaved"
            + " rounds, a JVM of its own per round (every implementation once per round, the order"
            + " reversed every other round); rates and percentiles are the medians over the rounds"
            + " (hand-offs/s and waiter p99 with their min–max), acquisitions per client, still"
            + " waiting, overlaps and errors are summed over them. "
            + r.contendedNote
            + "\n\n");
    md.append(
        "| implementation | hand-offs/s | acquisitions/s | waiter wait p50 ms | waiter p99 ms |"
            + " waiter max ms | all waits p50 ms | all waits p99 ms | acquisitions per client |"
            + " still waiting at end | overlaps | errors |\n");
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (Map.Entry<String, Properties> e : r.contended.entrySet()) {
      String impl = e.getKey();
      Properties p = e.getValue();
      double[] p99 = r.rounds.get(impl + "/waiterP99Us");
      md.append("| ")
          .append(impl)
          .append(" | ")
          .append(fmt(r.con(impl, "handoffsPerSec")))
          .append(range(r.rounds.get(impl + "/handoffsPerSec")))
          .append(" | ")
          .append(fmt(r.con(impl, "acquisitionsPerSec")))
          .append(" | ")
          .append(fmt(ms(r.con(impl, "waiterP50Us"))))
          .append(" | ")
          .append(fmt(ms(r.con(impl, "waiterP99Us"))))
          .append(
              p99 == null ? "" : range(java.util.Arrays.stream(p99).map(x -> x / 1000).toArray()))
          .append(" | ")
          .append(fmt(ms(r.con(impl, "waiterMaxUs"))))
          .append(" | ")
          .append(fmt(ms(r.con(impl, "waitP50Us"))))
          .append(" | ")
          .append(fmt(ms(r.con(impl, "waitP99Us"))))
          .append(" | ")
          .append(p.getProperty("perClient"))
          .append(" | ")
          .append(p.getProperty("stillWaitingAtEnd"))
          .append(" | ")
          .append(p.getProperty("overlaps"))
          .append(" | ")
          .append(p.getProperty("errors"))
          .append(
              p.getProperty("firstError") == null ? "" : " (" + p.getProperty("firstError") + ")")
          .append(" |\n");
    }

    md.append("\n## Scale: ")
        .append(String.format(Locale.ROOT, "%,d", BenchMain.SCALE_LOCKS))
        .append(" locks held by one client with auto-renew\n\n");
    md.append("Lease ")
        .append(BenchMain.SCALE_LEASE_MS)
        .append(" ms, so both libraries renew every ")
        .append(BenchMain.SCALE_LEASE_MS / 3)
        .append(
            " ms (a third of the lease). Requests: the script calls and SCRIPT LOADs the client"
                + " sent, from Redis INFO commandstats deltas over the window (the last column"
                + " lists every command counted, including those the scripts call). Round trips:"
                + " for Locksmith, the backend's own counter (one per command, one per pipeline),"
                + " cross-checked by the SCRIPT LOAD that starts each renewal pipeline; for"
                + " Redisson, every command is a request of its own. CPU: the client process's CPU"
                + " time over the window, while it did nothing but renew. Heap: used heap after"
                + " full GCs, before and after taking the locks.\n\n");
    md.append(
        "| implementation | requests / period | round trips / period | pipelines (SCRIPT LOAD) /"
            + " period | client CPU, % of a core | CPU ms / period | heap per held lock, bytes |"
            + " time to take all, ms | still held after | commands seen |\n");
    md.append("|---|---|---|---|---|---|---|---|---|---|\n");
    for (Map.Entry<String, Properties> e : r.scale.entrySet()) {
      String impl = e.getKey();
      Properties p = e.getValue();
      md.append("| ")
          .append(impl)
          .append(" | ")
          .append(fmt(r.sc(impl, "requestsPerPeriod")))
          .append(" | ")
          .append(fmt(roundTrips(r, impl)))
          .append(" | ")
          .append(fmt(r.sc(impl, "scriptLoadsPerPeriod")))
          .append(" | ")
          .append(fmt(r.sc(impl, "cpuPercentOfOneCore")))
          .append(" | ")
          .append(fmt(r.sc(impl, "cpuMsPerPeriod")))
          .append(" | ")
          .append(p.getProperty("heapPerLockBytes"))
          .append(" | ")
          .append(p.getProperty("acquireAllMs"))
          .append(" | ")
          .append(p.getProperty("stillValid", "error: " + p.getProperty("firstError")))
          .append(" | ")
          .append(p.getProperty("commands"))
          .append(" |\n");
    }

    if (!r.sessionScale.isEmpty()) {
      md.append("\n### Session-held locks (etcd lease, ZooKeeper session)\n\n");
      md.append(
          "One client holds 10 locks, then many, and stays idle; the server's count of requests"
              + " received is read over the same window in both states (etcd:"
              + " `grpc_server_msg_received_total`, all methods, from /metrics; ZooKeeper:"
              + " `Received` from `srvr`). A lease or session kept alive for the whole client makes"
              + " the rate independent of the number of locks.\n\n");
      md.append(
          "| implementation | locks | requests/s | client CPU, % of a core | locks | requests/s |"
              + " client CPU, % of a core | time to take them, ms | still held after |\n");
      md.append("|---|---|---|---|---|---|---|---|---|\n");
      for (Map.Entry<String, Properties> e : r.sessionScale.entrySet()) {
        String impl = e.getKey();
        Properties p = e.getValue();
        md.append("| ")
            .append(impl)
            .append(" | ")
            .append(p.getProperty("few"))
            .append(" | ")
            .append(fmt(r.ss(impl, "fewRequestsPerSec")))
            .append(" | ")
            .append(fmt(r.ss(impl, "fewCpuPercentOfOneCore")))
            .append(" | ")
            .append(p.getProperty("many"))
            .append(" | ")
            .append(fmt(r.ss(impl, "manyRequestsPerSec")))
            .append(" | ")
            .append(fmt(r.ss(impl, "manyCpuPercentOfOneCore")))
            .append(" | ")
            .append(p.getProperty("acquireManyMs"))
            .append(" | ")
            .append(p.getProperty("stillValid", "error: " + p.getProperty("firstError")))
            .append(" |\n");
      }
    }

    md.append("\n![the same figures as a chart](results.svg)\n");

    Path findings =
        Path.of(System.getenv().getOrDefault("BENCH_FINDINGS", "lock-bench/FINDINGS.md"));
    if (Files.isRegularFile(findings)) {
      try {
        md.append("\n## Findings: why targets were missed, and the proposed fixes\n\n")
            .append(Files.readString(findings).trim())
            .append("\n(From ")
            .append(findings.getFileName())
            .append(
                ", written by hand after looking at the profiles; the figures "
                    + "above are this run's.)\n");
      } catch (IOException e) {
        // leave the section out
      }
    }

    md.append("\n## Machine and versions\n\n");
    md.append("- CPU: ").append(Machine.cpu()).append("\n");
    md.append("- Memory: ").append(Machine.memory()).append("\n");
    md.append("- System: ").append(Machine.system()).append("\n");
    md.append("- Load average at start: ")
        .append(r.loadBefore)
        .append("; at the end: ")
        .append(r.loadAfter)
        .append("\n");
    md.append("- Other builds running (Maven / Surefire / Failsafe JVMs of other engineers): ")
        .append(r.buildsBefore)
        .append(" at the start, ")
        .append(Machine.otherBuilds())
        .append(" at the end\n");
    String load = System.getenv("BENCH_LOAD_NOTE");
    if (load != null) {
      md.append("- Load seen by run-bench.sh: ").append(load).append("\n");
    }
    md.append("- Servers (loopback, started by run-bench.sh): ")
        .append(Machine.serverVersions())
        .append("\n");
    md.append("- Libraries: Locksmith ").append(v.getProperty("locksmith", "?"));
    String git = System.getenv("BENCH_GIT");
    if (git != null) {
      md.append(" (git ").append(git).append(")");
    }
    md.append(", JMH ")
        .append(v.getProperty("jmh", "?"))
        .append(", Redisson ")
        .append(v.getProperty("redisson", "?"))
        .append(", Jedis ")
        .append(v.getProperty("jedis", "?"))
        .append(", jetcd ")
        .append(v.getProperty("jetcd", "?"))
        .append("\n");
    return md.toString();
  }

  /**
   * @return " (min–max)" of per-round figures, or "" without rounds
   */
  static String range(double[] v) {
    return v == null || v.length == 0
        ? ""
        : " (" + fmt(Rounds.min(v)) + "–" + fmt(Rounds.max(v)) + ")";
  }

  /**
   * @return " (min–max)" of per-round ratios, or "" without rounds
   */
  static String range2(double[] v) {
    return v == null || v.length == 0
        ? ""
        : " (" + fmt2(Rounds.min(v)).replace("×", "") + "–" + fmt2(Rounds.max(v)) + ")";
  }

  static Double div(Double a, Double b) {
    return a == null || b == null || b == 0 ? null : a / b;
  }

  static Double ms(Double us) {
    return us == null ? null : us / 1000;
  }

  static String fmtBound(double b) {
    return b == Math.rint(b) ? Long.toString((long) b) : Double.toString(b);
  }

  static String fmt(Double d) {
    if (d == null) {
      return "–";
    }
    double a = Math.abs(d);
    if (a >= 100) {
      return String.format(Locale.ROOT, "%,.0f", d);
    }
    if (a >= 10) {
      return String.format(Locale.ROOT, "%.1f", d);
    }
    if (a > 0 && a < 0.01) {
      return String.format(Locale.ROOT, "%.4f", d);
    }
    return String.format(Locale.ROOT, "%.2f", d);
  }

  static String fmt2(Double d) {
    return d == null
        ? "–"
        : String.format(Locale.ROOT, Math.abs(d) > 0 && Math.abs(d) < 0.01 ? "%.4f×" : "%.2f×", d);
  }
}
