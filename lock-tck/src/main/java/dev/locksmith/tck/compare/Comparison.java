package dev.locksmith.tck.compare;

import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Promise;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.Locks;
import dev.locksmith.spi.LockUri;
import dev.locksmith.tck.FaultHooks;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Measures what a backend guarantees under real faults, next to what it declares and what the
 * published analyses predict. For each scenario, several contenders (separate JVMs, so that a
 * holder can really be paused or killed) take one lock in turns and write through an unguarded and
 * a fenced counter; the fault is injected while a contender holds the lock; every hold is recorded
 * and checked.
 *
 * <pre>{@code
 * Comparison.Report report = Comparison.builder()
 *     .target(Comparison.Target.of("mystore", "mystore://127.0.0.1:" + port, myHooks, Duration.ofSeconds(1)))
 *     .quick(true)
 *     .build().run();
 * System.out.println(report.markdown());          // failing results first
 * Files.writeString(Path.of("faults.html"), report.html());
 * }</pre>
 *
 * A scenario whose fault hook the target does not offer is reported as not run, with the hook
 * named, never as passed; a semaphore scenario on a backend that does not declare {@link
 * Guarantees.Feature#SEMAPHORES} is reported as not declared. Observed outcomes: S no overlap and
 * no lost update; F holds overlapped (or unguarded updates were lost) but the fenced counter lost
 * nothing; U the fenced counter lost updates or tokens went backwards. A result disagrees with the
 * declaration when it observes worse than declared (F or U where SAFE or UNAVAILABLE was declared,
 * U where SAFE_WITH_FENCING was).
 */
public final class Comparison {

  /**
   * The fault scenarios that are injected; the other faults of {@link Fault} are derived or not
   * run.
   */
  public enum Scenario {
    /**
     * FAULTS.md 1: the holder is frozen with SIGSTOP past its lease, then resumed; it writes late.
     */
    HOLDER_PAUSE(Fault.HOLDER_PAUSE, "holder frozen (SIGSTOP) past its lease, then writes", true),
    /** FAULTS.md 2: the holder is killed with SIGKILL. */
    HOLDER_CRASH(Fault.HOLDER_CRASH, "holder killed (SIGKILL) while holding", true),
    /** FAULTS.md 4: the server is killed and restarted while the lock is held. */
    SERVER_RESTART(Fault.SERVER_RESTART, "lock server killed and restarted while held", false),
    /** FAULTS.md 5: the server is frozen with SIGSTOP past the lease, then resumed. */
    SERVER_PAUSE(Fault.SERVER_PAUSE, "lock server frozen (SIGSTOP) past the lease", true),
    /** FAULTS.md 6: the holder is cut off from the server by a TCP proxy that goes silent. */
    PARTITION(Fault.PARTITION, "holder cut off by a silent TCP proxy past its lease", false),
    /**
     * FAULTS.md 6, the slow kind: the holder's link, through a TCP proxy, is delayed one lease each
     * way, past its lease.
     */
    LINK_DELAY(
        Fault.PARTITION,
        "holder's link delayed by a TCP proxy (one lease each way) past its lease",
        false),
    /** FAULTS.md 7: the leader of a replicated server is killed during contention. */
    LEADER_FAILOVER(Fault.LEADER_FAILOVER, "leader killed during contention", false),
    /**
     * FAULTS.md 7, the other half: a majority of the servers are killed during contention and
     * restarted three leases later.
     */
    MAJORITY_DOWN(
        Fault.LEADER_FAILOVER,
        "majority of servers killed during contention, back 3 leases later",
        false),
    /** FAULTS.md 8: the server's clock jumps forward by twice the lease while held. */
    CLOCK_JUMP(Fault.CLOCK_JUMP, "lock server clock jumps forward 2 leases", false),
    /**
     * FAULTS.md 6, one way (issue 36): the holder's requests to the server are held back by a TCP
     * proxy past its lease while the server's replies still reach it: its renewals never arrive.
     */
    ONE_WAY_TO_SERVER(
        Fault.PARTITION,
        "holder's requests to the server cut off (replies still flow) past its lease",
        false),
    /**
     * FAULTS.md 6, the other way (issue 36): the server's replies to the holder are held back past
     * its lease while its requests still arrive: its renewals reach the server, it never hears.
     */
    ONE_WAY_TO_CLIENT(
        Fault.PARTITION,
        "holder's replies from the server cut off (requests still arrive) past its lease",
        false),
    /**
     * FAULTS.md 10 (issue 36): a waiter's replies are held back by a TCP proxy while it waits, so a
     * grant the server makes never reaches it and it gives up on the acquire with an error; does
     * the lock stay held for nobody, and for how long.
     */
    DROPPED_GRANT(
        Fault.AMBIGUOUS_ACQUIRE,
        "a waiter's replies cut off while it waits: it gives up on a grant the server made",
        false),
    /**
     * FAULTS.md 1 for a semaphore (issue 20): of {@link #SEMAPHORE_PERMITS} + 1 contenders, one
     * holding a permit is frozen past its lease, then writes late. Run only for a backend that
     * declares {@link Guarantees.Feature#SEMAPHORES}; the others get a "not declared" row.
     */
    SEMAPHORE_HOLDER_PAUSE(
        Fault.HOLDER_PAUSE,
        "semaphore (N="
            + SEMAPHORE_PERMITS
            + "): a permit holder frozen (SIGSTOP) past its lease, then writes",
        true,
        SEMAPHORE_PERMITS),
    /**
     * FAULTS.md 2 for a semaphore (issue 20): a permit holder is killed; when does its permit come
     * back, and are all N there after. Not in the quick set (CI's time): the lock's crash row is.
     */
    SEMAPHORE_HOLDER_CRASH(
        Fault.HOLDER_CRASH,
        "semaphore (N=" + SEMAPHORE_PERMITS + "): a permit holder killed (SIGKILL) while holding",
        false,
        SEMAPHORE_PERMITS),
    /**
     * FAULTS.md 1 for a lock set (issue 31): every contender takes the same {@link #SET_NAMES}
     * names with {@code client.locks(names)}; one holding them is frozen past its lease, then
     * writes late with the first name's token. Runs on every backend (the core takes a set on any
     * backend). Not in the quick set (CI's time): the lock's pause row is.
     */
    SET_HOLDER_PAUSE(
        Fault.HOLDER_PAUSE,
        "set of " + SET_NAMES + " names: holder frozen (SIGSTOP) past its lease, then writes",
        false,
        0,
        SET_NAMES),
    /** FAULTS.md 2 for a lock set (issue 31): a set's holder is killed while holding. */
    SET_HOLDER_CRASH(
        Fault.HOLDER_CRASH,
        "set of " + SET_NAMES + " names: holder killed (SIGKILL) while holding",
        false,
        0,
        SET_NAMES),
    /**
     * FAULTS.md 1 for leader election (issue 32): every contender campaigns with {@code
     * client.election(name)} and, while it leads, writes with its term as the token; the leader is
     * frozen past its lease, then writes late with its old term. When the next leader comes,
     * whether two led at once, and whether the stale term's write is refused. Not in the quick set.
     */
    ELECTION_LEADER_PAUSE(
        Fault.HOLDER_PAUSE,
        "election: leader frozen (SIGSTOP) past its lease, then writes with its term",
        false,
        0,
        0,
        true),
    /** FAULTS.md 2 for leader election (issue 32): the leader is killed while it leads. */
    ELECTION_LEADER_CRASH(
        Fault.HOLDER_CRASH, "election: leader killed (SIGKILL) while leading", false, 0, 0, true),
    /**
     * FAULTS.md 6 for leader election (issue 32): the leader is cut off from the server by a TCP
     * proxy that goes silent, and keeps acting past its lease.
     */
    ELECTION_LEADER_CUT_OFF(
        Fault.PARTITION,
        "election: leader cut off by a silent TCP proxy past its lease",
        false,
        0,
        0,
        true);

    final Fault fault;
    final String description;
    final boolean quick;

    /** 0 for a lock; the semaphore's permits for a semaphore scenario. */
    final int permits;

    /** 0 for a lock; the names of the set for a lock-set scenario. */
    final int setNames;

    Scenario(Fault fault, String description, boolean quick) {
      this(fault, description, quick, 0, 0);
    }

    Scenario(Fault fault, String description, boolean quick, int permits) {
      this(fault, description, quick, permits, 0);
    }

    /** Whether the contenders campaign in an election instead of taking a lock. */
    final boolean election;

    Scenario(Fault fault, String description, boolean quick, int permits, int setNames) {
      this(fault, description, quick, permits, setNames, false);
    }

    Scenario(
        Fault fault,
        String description,
        boolean quick,
        int permits,
        int setNames,
        boolean election) {
      this.fault = fault;
      this.description = description;
      this.quick = quick;
      this.permits = permits;
      this.setNames = setNames;
      this.election = election;
    }

    /**
     * @return whether the contenders campaign in an election ({@code client.election(name)}) and
     *     write with their term, instead of taking a lock
     */
    public boolean election() {
      return election;
    }

    /**
     * @return whether this scenario contends for a set of locks taken all at once
     */
    public boolean lockSet() {
      return setNames > 0;
    }

    /**
     * @return whether this scenario contends for a semaphore's permits rather than a lock
     */
    public boolean semaphore() {
      return permits > 0;
    }
  }

  /**
   * The permits of the semaphore scenarios: two, so that a stale holder's extra permit shows as
   * three holders at once, with one contender more than permits so that they contend.
   */
  public static final int SEMAPHORE_PERMITS = 2;

  /** The names of the lock-set scenarios: three, as issue 31 asks. */
  public static final int SET_NAMES = 3;

  /**
   * A backend to compare: its URI, its fault hooks, and how long after its lease its locks may
   * outlive a dead holder.
   */
  public static final class Target {
    final String label;
    final String uri;
    final FaultHooks hooks;
    final Duration expirySlack;
    final Map<Fault, String> predictions;
    final Set<Scenario> scenarios;
    final Map<Scenario, String> injections;

    /** Why a scenario left out of {@link #scenarios} is not run here: another target runs it. */
    final Map<Scenario, String> elsewhere;

    private Target(
        String label,
        String uri,
        FaultHooks hooks,
        Duration expirySlack,
        Map<Fault, String> predictions,
        Set<Scenario> scenarios,
        Map<Scenario, String> injections) {
      this(label, uri, hooks, expirySlack, predictions, scenarios, injections, Map.of());
    }

    private Target(
        String label,
        String uri,
        FaultHooks hooks,
        Duration expirySlack,
        Map<Fault, String> predictions,
        Set<Scenario> scenarios,
        Map<Scenario, String> injections,
        Map<Scenario, String> elsewhere) {
      this.label = label;
      this.uri = uri;
      this.hooks = hooks;
      this.expirySlack = expirySlack;
      this.predictions = predictions;
      this.scenarios = scenarios;
      this.injections = injections;
      this.elsewhere = elsewhere;
    }

    /**
     * Leaves scenarios to another target of the same backend, whose set-up can inject them (a
     * ZooKeeper ensemble kills a leader; one server cannot): the report says where they run.
     *
     * @param other the other target's label
     * @param covered the scenarios it runs instead of this one, at least one
     * @return a copy of this target without them
     */
    public Target coveredBy(String other, Scenario... covered) {
      if (other == null || other.isBlank() || covered.length == 0) {
        throw new IllegalArgumentException(
            "`other` was '"
                + other
                + "' with "
                + covered.length
                + " scenarios but it must be a target's label, with at least one scenario");
      }
      Set<Scenario> left = EnumSet.noneOf(Scenario.class);
      left.addAll(scenarios);
      Map<Scenario, String> why = new EnumMap<>(Scenario.class);
      why.putAll(elsewhere);
      for (Scenario sc : covered) {
        left.remove(Objects.requireNonNull(sc, "scenario"));
        why.put(
            sc,
            "run on target '" + other + "' instead: this set-up of the backend cannot inject it");
      }
      return new Target(
          label,
          uri,
          hooks,
          expirySlack,
          predictions,
          Collections.unmodifiableSet(left),
          injections,
          Collections.unmodifiableMap(why));
    }

    /**
     * Says how this target's hooks inject a scenario's fault, when it is not the way the scenario's
     * default description says (a server "paused" by a proxy that goes silent rather than by
     * SIGSTOP, say); the report shows this text instead.
     *
     * @param scenario the scenario
     * @param how what is done, such as "lock server cut off by a silent TCP proxy past the lease"
     * @return a copy of this target with that description
     */
    public Target injects(Scenario scenario, String how) {
      Objects.requireNonNull(scenario, "scenario");
      if (how == null || how.isBlank()) {
        throw new IllegalArgumentException(
            "`how` for " + scenario + " was '" + how + "' but it must be some text");
      }
      Map<Scenario, String> copy = new EnumMap<>(Scenario.class);
      copy.putAll(injections);
      copy.put(scenario, how);
      return new Target(
          label,
          uri,
          hooks,
          expirySlack,
          predictions,
          scenarios,
          Collections.unmodifiableMap(copy),
          elsewhere);
    }

    String description(Scenario scenario) {
      return injections.getOrDefault(scenario, scenario.description);
    }

    /**
     * Replaces the published prediction for one fault, for a target whose server is set up
     * differently from the one the prediction is about (Redis with {@code appendfsync always} under
     * a restart, for example). Say where the prediction comes from in the text.
     *
     * @param fault the fault
     * @param prediction what to print as predicted
     * @return a copy of this target with that prediction
     */
    public Target withPrediction(Fault fault, String prediction) {
      Objects.requireNonNull(fault, "fault");
      if (prediction == null || prediction.isBlank()) {
        throw new IllegalArgumentException(
            "`prediction` for " + fault + " was '" + prediction + "' but it must be some text");
      }
      Map<Fault, String> copy = new EnumMap<>(Fault.class);
      copy.putAll(predictions);
      copy.put(fault, prediction);
      return new Target(
          label,
          uri,
          hooks,
          expirySlack,
          Collections.unmodifiableMap(copy),
          scenarios,
          injections,
          elsewhere);
    }

    /**
     * Runs only some scenarios on this target, the others being reported as not run (for a second
     * set-up of a backend whose other scenarios another target already covers).
     *
     * @param only the scenarios to run, at least one
     * @return a copy of this target that runs only those
     */
    public Target only(Scenario... only) {
      if (only.length == 0) {
        throw new IllegalArgumentException(
            "`only` was empty but it must name at least one of " + List.of(Scenario.values()));
      }
      Set<Scenario> set = EnumSet.noneOf(Scenario.class);
      for (Scenario sc : only) {
        set.add(Objects.requireNonNull(sc, "scenario"));
      }
      return new Target(
          label,
          uri,
          hooks,
          expirySlack,
          predictions,
          Collections.unmodifiableSet(set),
          injections,
          elsewhere);
    }

    String predicted(String family, Scenario scenario) {
      String own = predictions.get(scenario.fault);
      return own != null ? own : Predictions.predicted(family, scenario);
    }

    String predicted(String family, Fault fault) {
      String own = predictions.get(fault);
      return own != null ? own : Predictions.predicted(family, fault);
    }

    /**
     * @param label the name shown in the report
     * @param uri the lock URI, given to the contender processes in {@code LOCKSMITH_URI}
     * @param hooks the fault hooks the target offers ({@link FaultHooks#NONE} for none)
     * @param expirySlack how long after the lease a dead holder's lock may stay taken (a session
     *     timeout)
     * @return the target
     */
    public static Target of(String label, String uri, FaultHooks hooks, Duration expirySlack) {
      return new Target(
          Objects.requireNonNull(label, "label"),
          Objects.requireNonNull(uri, "uri"),
          Objects.requireNonNull(hooks, "hooks"),
          Objects.requireNonNull(expirySlack, "expirySlack"),
          Map.of(),
          EnumSet.allOf(Scenario.class),
          Map.of());
    }
  }

  /** Builds a {@link Comparison}. */
  public static final class Builder {
    private final List<Target> targets = new ArrayList<>();
    private Duration lease = Duration.ofSeconds(1);
    private boolean quick;
    private int contenders = 3;
    private Consumer<String> progress = s -> {};

    private Builder() {}

    /**
     * @param target a backend to compare
     * @return this builder
     */
    public Builder target(Target target) {
      targets.add(Objects.requireNonNull(target, "target"));
      return this;
    }

    /**
     * @param lease the contenders' lease, from 200ms to 30s (default 1s)
     * @return this builder
     */
    public Builder lease(Duration lease) {
      Objects.requireNonNull(lease, "lease");
      if (lease.toMillis() < 200 || lease.toMillis() > 30_000) {
        throw new IllegalArgumentException(
            "`lease` was '" + lease.toMillis() + "ms' but it must be from 200ms to 30s");
      }
      this.lease = lease;
      return this;
    }

    /**
     * @param quick run only the quick scenarios (holder pause, holder crash, server pause, and the
     *     holder pause on a semaphore; the crash on a semaphore runs in the full comparison)
     * @return this builder
     */
    public Builder quick(boolean quick) {
      this.quick = quick;
      return this;
    }

    /**
     * @param contenders contender processes per scenario, 2 to 8 (default 3)
     * @return this builder
     */
    public Builder contenders(int contenders) {
      if (contenders < 2 || contenders > 8) {
        throw new IllegalArgumentException(
            "`contenders` was " + contenders + " but it must be from 2 to 8");
      }
      this.contenders = contenders;
      return this;
    }

    /**
     * @param progress told one line as each scenario starts and ends
     * @return this builder
     */
    public Builder progress(Consumer<String> progress) {
      this.progress = Objects.requireNonNull(progress, "progress");
      return this;
    }

    /**
     * @return the comparison
     */
    public Comparison build() {
      if (targets.isEmpty()) {
        throw new IllegalStateException("a comparison needs at least one target");
      }
      return new Comparison(this);
    }
  }

  private final List<Target> targets;
  private final Duration lease;
  private final boolean quick;
  private final int contenders;
  private final Consumer<String> progress;
  private final ScenarioRunner runner;

  private Comparison(Builder b) {
    this.targets = List.copyOf(b.targets);
    this.lease = b.lease;
    this.quick = b.quick;
    this.contenders = b.contenders;
    this.progress = b.progress;
    this.runner = new ScenarioRunner(lease, quick, contenders);
  }

  /**
   * @return a builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Runs every scenario against every target, one at a time.
   *
   * @return the report
   * @throws InterruptedException if interrupted; contender processes are killed first
   */
  /** How many times a full run fails the leader over on each target (FAULTS.md 7). */
  static final int FAILOVER_RUNS = 5;

  public Report run() throws InterruptedException {
    List<Result> results = new ArrayList<>();
    for (Target target : targets) {
      Guarantees declared;
      try (LockClient probe = Locks.connect(LockConfig.fromUri(target.uri))) {
        declared = probe.guarantees();
      }
      String family = Predictions.family(LockUri.parse(target.uri).scheme());
      List<Result> mine = new ArrayList<>();
      for (Scenario scenario : Scenario.values()) {
        Result r =
            new Result(
                target.label,
                scenario.fault,
                target.description(scenario),
                declared.promise(scenario.fault),
                target.predicted(family, scenario));
        r.permits = scenario.permits;
        if (!target.scenarios.contains(scenario)) {
          r.notRun(
              target.elsewhere.getOrDefault(
                  scenario, "not among the scenarios chosen for this target with Target.only()"));
        } else if (!declared.has(Guarantees.Feature.SHARED_ACROSS_PROCESSES)) {
          r.notRun(
              "the backend does not share locks across processes, and every scenario needs separate"
                  + " processes");
        } else if (declared.promise(scenario.fault) == Promise.NOT_APPLICABLE) {
          r.notRun("the backend declares this scenario not applicable");
        } else if (scenario.semaphore() && !declared.has(Guarantees.Feature.SEMAPHORES)) {
          r.notDeclared(Guarantees.Feature.SEMAPHORES);
        } else if (quick && !scenario.quick) {
          r.notRun("not in --quick mode");
        } else {
          progress.accept(target.label + ": " + target.description(scenario) + " ...");
          // a failover's outcome varies from run to run (which replica, how fast the promotion):
          // it runs several times and the row is the worst run, with the spread of them all
          int runs = scenario == Scenario.LEADER_FAILOVER && !quick ? FAILOVER_RUNS : 1;
          List<Result> each = new ArrayList<>();
          for (int i = 0; i < runs; i++) {
            Result ri =
                i == 0
                    ? r
                    : new Result(
                        target.label,
                        scenario.fault,
                        target.description(scenario),
                        declared.promise(scenario.fault),
                        target.predicted(family, scenario));
            try {
              runner.run(target, scenario, ri);
            } catch (UnsupportedOperationException e) {
              ri.notRun("no fault hook '" + e.getMessage() + "' for this target");
            } catch (IOException | RuntimeException e) {
              ri.notRun("could not run: " + e);
            }
            each.add(ri);
            if (ri.notRunReason != null && ri.notRunReason.startsWith("no fault hook")) {
              break; // no other run would have the hook
            }
            if (runs > 1) {
              progress.accept(
                  target.label + ": run " + (i + 1) + " of " + runs + ": " + ri.summary());
              // the next run needs the set whole again: the killed leader back as a follower
              try {
                target.hooks.restoreLeader();
              } catch (UnsupportedOperationException e) {
                if (i + 1 < runs) {
                  ri.note += (ri.note.isEmpty() ? "" : "; ") + "one run: no restoreLeader hook";
                }
                break;
              } catch (RuntimeException e) {
                ri.note +=
                    (ri.note.isEmpty() ? "" : "; ")
                        + "runs stopped: the killed leader could not be brought back: "
                        + e.getMessage();
                break;
              }
            }
          }
          if (each.size() > 1) {
            r = Result.worstOf(each);
          }
          progress.accept(target.label + ": " + target.description(scenario) + ": " + r.summary());
          if (!r.agrees() && !r.timeline.isEmpty()) {
            progress.accept(
                target.label
                    + ": the contenders' events of that run (ms from the first hold; contender,"
                    + " event):\n"
                    + r.timeline);
          }
        }
        mine.add(r);
      }
      mine.addAll(derived(target, declared, family, mine));
      results.addAll(mine);
    }
    return new Report(results, lease, quick);
  }

  /** Rows 3, 9 and 11 of FAULTS.md, read off the injected scenarios or reported as not run. */
  private static List<Result> derived(
      Target target, Guarantees declared, String family, List<Result> runs) {
    String label = target.label;
    List<Result> out = new ArrayList<>();
    Result acquire =
        new Result(
            label,
            Fault.PAUSE_DURING_ACQUIRE,
            "pause while the acquire reply is in flight",
            declared.promise(Fault.PAUSE_DURING_ACQUIRE),
            target.predicted(family, Fault.PAUSE_DURING_ACQUIRE));
    acquire.notRun("no way to freeze a client between the server's grant and its reply here");
    out.add(acquire);
    Result late =
        new Result(
            label,
            Fault.RELEASE_AFTER_EXPIRY,
            "the frozen holder's late release (from scenario 1)",
            declared.promise(Fault.RELEASE_AFTER_EXPIRY),
            target.predicted(family, Fault.RELEASE_AFTER_EXPIRY));
    Result pause =
        runs.stream().filter(r -> r.fault == Fault.HOLDER_PAUSE).findFirst().orElse(null);
    if (pause == null || pause.notRunReason != null) {
      late.notRun("scenario 1 did not run");
    } else {
      late.copyRun(pause);
      late.observed = pause.lateReleaseFreedOther ? "U" : "S";
      late.note =
          pause.lateReleaseFreedOther
              ? "the late release freed a later holder's lock"
              : "the late release freed nothing of a later holder's";
      late.judge();
    }
    out.add(late);
    // row 10 is a scenario of its own now (DROPPED_GRANT)
    Result tokens =
        new Result(
            label,
            Fault.TOKEN_MONOTONICITY,
            "fencing tokens over every scenario run",
            declared.promise(Fault.TOKEN_MONOTONICITY),
            target.predicted(family, Fault.TOKEN_MONOTONICITY));
    // a scenario the backend declares unsafe (a restart that loses the counter) has its own row
    List<Result> ran =
        runs.stream()
            .filter(r -> r.notRunReason == null && r.declared != Promise.UNSAFE)
            .collect(java.util.stream.Collectors.toList());
    if (ran.isEmpty()) {
      tokens.notRun("no scenario ran that the backend does not declare unsafe");
    } else {
      int regressions = ran.stream().mapToInt(r -> r.tokenRegressions).sum();
      tokens.holds = ran.stream().mapToInt(r -> r.holds).sum();
      tokens.tokenRegressions = regressions;
      tokens.observed = regressions > 0 ? "U" : "S";
      tokens.note =
          regressions
              + " token regressions over "
              + tokens.holds
              + " holds in "
              + ran.size()
              + " scenarios not declared unsafe";
      tokens.judge();
    }
    out.add(tokens);
    return out;
  }

  // ------------------------------------------------------------------ one scenario

  /**
   * @return the events, one a line, in ms from the first hold, the fault's start and end among
   *     them; at most 400 lines
   */
  static String timeline(List<Event> events, long faultStart, long faultEnd) {
    long t0 =
        events.stream()
            .filter(e -> e.kind.equals("HELD"))
            .mapToLong(e -> e.at)
            .min()
            .orElse(faultStart);
    List<String[]> lines = new ArrayList<>();
    for (Event e : events) {
      lines.add(
          new String[] {Long.toString(e.at - t0), e.contender + " " + String.join(" ", e.fields)});
    }
    lines.add(new String[] {Long.toString(faultStart - t0), "-- fault starts"});
    lines.add(new String[] {Long.toString(faultEnd - t0), "-- fault ends"});
    lines.sort((a, b) -> Long.compare(Long.parseLong(a[0]), Long.parseLong(b[0])));
    StringBuilder out = new StringBuilder();
    int n = 0;
    for (String[] l : lines) {
      if (n++ == 400) {
        out.append("  … ").append(lines.size() - 400).append(" more\n");
        break;
      }
      out.append(
          String.format(java.util.Locale.ROOT, "  %8.1f  %s%n", Long.parseLong(l[0]) / 1e6, l[1]));
    }
    return out.toString();
  }

  /** One event a contender reported. */
  static final class Event {
    final int contender;
    final String kind;
    final String[] fields;
    final long at;

    Event(int contender, String line) {
      this.contender = contender;
      this.fields = line.split(" ");
      this.kind = fields[0];
      long t = System.nanoTime();
      if ((kind.equals("HELD")
              || kind.equals("RELEASING")
              || kind.equals("RELEASED")
              || kind.equals("LOST"))
          && fields.length >= 3) {
        try {
          t = Long.parseLong(fields[2]);
        } catch (NumberFormatException e) {
          // keep the time we read it
        }
      }
      this.at = t;
    }
  }

  static void signal(Process p, String sig) {
    if (!p.isAlive()) {
      return;
    }
    try {
      new ProcessBuilder("kill", "-" + sig, Long.toString(p.pid()))
          .start()
          .waitFor(5, TimeUnit.SECONDS);
    } catch (IOException e) {
      throw new IllegalStateException("kill -" + sig + " " + p.pid() + " failed: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
