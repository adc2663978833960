package dev.locksmith.tck.compare;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Promise;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.Locks;
import dev.locksmith.spi.LockUri;
import dev.locksmith.tck.FaultHooks;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;

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
        SEMAPHORE_PERMITS);

    final Fault fault;
    final String description;
    final boolean quick;

    /** 0 for a lock; the semaphore's permits for a semaphore scenario. */
    final int permits;

    Scenario(Fault fault, String description, boolean quick) {
      this(fault, description, quick, 0);
    }

    Scenario(Fault fault, String description, boolean quick, int permits) {
      this.fault = fault;
      this.description = description;
      this.quick = quick;
      this.permits = permits;
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

    private Target(
        String label,
        String uri,
        FaultHooks hooks,
        Duration expirySlack,
        Map<Fault, String> predictions,
        Set<Scenario> scenarios,
        Map<Scenario, String> injections) {
      this.label = label;
      this.uri = uri;
      this.hooks = hooks;
      this.expirySlack = expirySlack;
      this.predictions = predictions;
      this.scenarios = scenarios;
      this.injections = injections;
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
          Collections.unmodifiableMap(copy));
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
          label, uri, hooks, expirySlack, Collections.unmodifiableMap(copy), scenarios, injections);
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
          injections);
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

  private Comparison(Builder b) {
    this.targets = List.copyOf(b.targets);
    this.lease = b.lease;
    this.quick = b.quick;
    this.contenders = b.contenders;
    this.progress = b.progress;
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
          r.notRun("not among the scenarios chosen for this target with Target.only()");
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
          try {
            runScenario(target, scenario, r);
          } catch (UnsupportedOperationException e) {
            r.notRun("no fault hook '" + e.getMessage() + "' for this target");
          } catch (IOException | RuntimeException e) {
            r.notRun("could not run: " + e);
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

  /** Rows 3, 9, 10 and 11 of FAULTS.md, read off the injected scenarios or reported as not run. */
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
    Result ambiguous =
        new Result(
            label,
            Fault.AMBIGUOUS_ACQUIRE,
            "client timed out on an acquire the server granted",
            declared.promise(Fault.AMBIGUOUS_ACQUIRE),
            target.predicted(family, Fault.AMBIGUOUS_ACQUIRE));
    ambiguous.notRun(
        "no way to drop a grant's reply here; the kit's cancellation rules cover the withdrawal");
    out.add(ambiguous);
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

  /** How many of a contender's last stderr lines a failure shows. */
  private static final int STDERR_LINES = 40;

  private final class Run implements AutoCloseable {
    final Target target;
    final String name = "compare/" + UUID.randomUUID().toString().substring(0, 8);
    final ResourceServer resources;
    final List<Process> processes = new ArrayList<>();
    final List<Event> events = new CopyOnWriteArrayList<>();
    final List<Deque<String>> stderr = new ArrayList<>();
    volatile Predicate<Event> trigger;
    volatile Event triggeredBy;

    Run(Target target) throws IOException {
      this.target = target;
      this.resources = new ResourceServer();
    }

    void start(int index, String uri, long holdMillis, int permits) throws IOException {
      String java =
          System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
      ProcessBuilder pb =
          new ProcessBuilder(
              java,
              "-Xss512k",
              "-XX:TieredStopAtLevel=1",
              "-cp",
              System.getProperty("java.class.path"),
              ContenderProcess.class.getName(),
              name,
              Long.toString(lease.toMillis()),
              Integer.toString(resources.port()),
              Long.toString(holdMillis),
              Integer.toString(permits));
      pb.environment().put("LOCKSMITH_URI", uri);
      Process p = pb.start();
      processes.add(p);
      // its stderr (a stack trace if it fails to start), kept in part so that a failure can say
      // what the contender said
      Deque<String> err = new ArrayDeque<>();
      stderr.add(err);
      Thread errReader =
          new Thread(
              () -> {
                try (BufferedReader in =
                    new BufferedReader(
                        new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8))) {
                  for (String line; (line = in.readLine()) != null; ) {
                    synchronized (err) {
                      err.addLast(line);
                      if (err.size() > STDERR_LINES) {
                        err.removeFirst();
                      }
                    }
                  }
                } catch (IOException e) {
                  // the process ended
                }
              },
              "contender-" + index + "-stderr");
      errReader.setDaemon(true);
      errReader.start();
      Thread reader =
          new Thread(
              () -> {
                try (BufferedReader in =
                    new BufferedReader(
                        new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                  for (String line; (line = in.readLine()) != null; ) {
                    Event e = new Event(index, line);
                    Predicate<Event> t = trigger;
                    if (t != null && t.test(e)) {
                      trigger = null;
                      triggeredBy = e;
                    }
                    events.add(e);
                  }
                } catch (IOException e) {
                  // the process ended
                }
              },
              "contender-" + index + "-reader");
      reader.setDaemon(true);
      reader.start();
    }

    /**
     * Waits until the contenders have reported {@code count} events of a kind; fails at once, with
     * what it wrote on stderr, if a contender that has not reported one has exited.
     */
    void awaitCount(String kind, int count, Duration within) throws InterruptedException {
      long deadline = System.nanoTime() + within.toNanos();
      while (events.stream().filter(e -> e.kind.equals(kind)).count() < count) {
        for (int i = 0; i < processes.size(); i++) {
          int index = i;
          Process p = processes.get(i);
          if (!p.isAlive()
              && events.stream().noneMatch(e -> e.contender == index && e.kind.equals(kind))) {
            Thread.sleep(100); // let the readers take in its last lines
            throw new IllegalStateException(
                "contender "
                    + i
                    + " exited with code "
                    + p.exitValue()
                    + " before it reported "
                    + kind
                    + "; its stderr: "
                    + stderrOf(i)
                    + lastError());
          }
        }
        if (System.nanoTime() - deadline > 0) {
          throw new IllegalStateException(
              "contenders reported "
                  + events.stream().filter(e -> e.kind.equals(kind)).count()
                  + " "
                  + kind
                  + " events of "
                  + count
                  + " expected within "
                  + within.toMillis()
                  + " ms"
                  + stragglers(kind)
                  + lastError());
        }
        Thread.sleep(5);
      }
    }

    /**
     * @return the contenders that have not reported an event of {@code kind}, each with its last
     *     stderr lines
     */
    String stragglers(String kind) {
      StringBuilder out = new StringBuilder();
      for (int i = 0; i < processes.size(); i++) {
        int index = i;
        if (events.stream().noneMatch(e -> e.contender == index && e.kind.equals(kind))) {
          out.append("; contender ")
              .append(i)
              .append(" (")
              .append(processes.get(i).isAlive() ? "alive" : "exited")
              .append(") did not, its stderr: ")
              .append(stderrOf(i));
        }
      }
      return out.toString();
    }

    /**
     * @return the last lines contender {@code index} wrote on stderr, joined with " | "
     */
    String stderrOf(int index) {
      Deque<String> err = stderr.get(index);
      synchronized (err) {
        return err.isEmpty() ? "(nothing)" : String.join(" | ", err);
      }
    }

    String lastError() {
      return events.stream()
          .filter(e -> e.kind.equals("ERROR"))
          .reduce((a, b) -> b)
          .map(e -> "; last contender error: " + String.join(" ", e.fields))
          .orElse("");
    }

    /**
     * Runs {@code action} from the reader thread's view: waits for the first event that matches,
     * then returns it.
     */
    Event awaitEvent(Predicate<Event> which, Duration within) throws InterruptedException {
      triggeredBy = null;
      trigger = which;
      long deadline = System.nanoTime() + within.toNanos();
      while (triggeredBy == null) {
        if (System.nanoTime() - deadline > 0) {
          trigger = null;
          throw new IllegalStateException(
              "no contender event matched within " + within.toMillis() + " ms" + lastError());
        }
        Thread.sleep(1);
      }
      return triggeredBy;
    }

    @Override
    public void close() {
      for (Process p : processes) {
        signal(p, "CONT");
        try {
          p.getOutputStream().close();
        } catch (IOException e) {
          // it is going away anyway
        }
      }
      for (Process p : processes) {
        try {
          if (!p.waitFor(5, TimeUnit.SECONDS)) {
            p.destroyForcibly();
          }
        } catch (InterruptedException e) {
          p.destroyForcibly();
          Thread.currentThread().interrupt();
        }
      }
      try {
        resources.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
  }

  private void runScenario(Target target, Scenario scenario, Result r)
      throws IOException, InterruptedException {
    FaultHooks hooks = target.hooks;
    Duration outlive = lease.plus(target.expirySlack).plus(Duration.ofSeconds(1));
    TcpProxy proxy = null;
    try (Run run = new Run(target)) {
      // Hooks are checked before any contender starts, so a missing one costs nothing.
      for (String hook : HOOKS.getOrDefault(scenario, List.of())) {
        requireHook(hooks, hook);
      }
      String victimUri = target.uri;
      boolean viaProxy = scenario == Scenario.PARTITION || scenario == Scenario.LINK_DELAY;
      if (viaProxy) {
        InetSocketAddress server = hooks.serverAddress();
        proxy = new TcpProxy(server);
        victimUri = hooks.uriVia(proxy.address());
      }
      // A cut-off holder keeps working past its lease, as a real one does when nothing tells it
      // to stop in time: the partition's victim holds long enough for its lease to run out, and
      // so does the holder whose server's clock jumps (its renewals keep the lease going until
      // then).
      long victimHold =
          viaProxy || scenario == Scenario.CLOCK_JUMP ? outlive.plus(lease).toMillis() : 50;
      // a semaphore's contenders: one more than its permits, so that they contend while all are
      // alive
      int processes = scenario.semaphore() ? scenario.permits + 1 : contenders;
      for (int i = 0; i < processes; i++) {
        run.start(i, i == 0 ? victimUri : target.uri, i == 0 ? victimHold : 50, scenario.permits);
      }
      run.awaitCount("READY", processes, Duration.ofSeconds(60));
      run.awaitCount("RELEASED", processes, Duration.ofSeconds(30));
      long faultStart;
      long faultEnd;
      switch (scenario) {
        case HOLDER_PAUSE:
        case SEMAPHORE_HOLDER_PAUSE:
          {
            Event held =
                run.awaitEvent(e -> e.kind.equals("HELD") && pause(run, e), Duration.ofSeconds(30));
            faultStart = held.at;
            r.victim = held.contender;
            Thread.sleep(outlive.toMillis());
            faultEnd = System.nanoTime();
            signal(run.processes.get(held.contender), "CONT");
            Thread.sleep(tail(2));
            break;
          }
        case HOLDER_CRASH:
        case SEMAPHORE_HOLDER_CRASH:
          {
            Event held =
                run.awaitEvent(e -> e.kind.equals("HELD") && kill(run, e), Duration.ofSeconds(30));
            faultStart = held.at;
            faultEnd = faultStart;
            r.victim = held.contender;
            Thread.sleep(outlive.toMillis() + tail(1));
            break;
          }
        case SERVER_PAUSE:
          {
            run.awaitEvent(e -> e.kind.equals("HELD"), Duration.ofSeconds(30));
            faultStart = System.nanoTime();
            hooks.pauseServer();
            try {
              Thread.sleep(outlive.toMillis());
            } finally {
              hooks.resumeServer();
            }
            faultEnd = System.nanoTime();
            Thread.sleep(tail(3));
            break;
          }
        case SERVER_RESTART:
          {
            Event held = run.awaitEvent(e -> e.kind.equals("HELD"), Duration.ofSeconds(30));
            r.holderAtFault = held.contender;
            faultStart = System.nanoTime();
            hooks.killServer();
            hooks.restartServer();
            faultEnd = System.nanoTime();
            Thread.sleep(lease.multipliedBy(3).toMillis());
            break;
          }
        case PARTITION:
          {
            TcpProxy cut = proxy;
            Event held =
                run.awaitEvent(
                    e -> e.kind.equals("HELD") && e.contender == 0, Duration.ofSeconds(30));
            cut.blackhole(true);
            faultStart = held.at;
            r.victim = 0;
            Thread.sleep(outlive.toMillis());
            cut.blackhole(false);
            faultEnd = System.nanoTime();
            Thread.sleep(lease.multipliedBy(2).toMillis());
            break;
          }
        case LINK_DELAY:
          {
            TcpProxy slow = proxy;
            Event held =
                run.awaitEvent(
                    e -> e.kind.equals("HELD") && e.contender == 0, Duration.ofSeconds(30));
            // one lease each way: every round trip of the holder's, renewals included, takes two
            // leases
            slow.delay(lease);
            faultStart = held.at;
            r.victim = 0;
            Thread.sleep(outlive.toMillis());
            slow.delay(Duration.ZERO);
            faultEnd = System.nanoTime();
            // what was sent during the delay still arrives for one more lease
            Thread.sleep(lease.multipliedBy(2).toMillis());
            break;
          }
        case MAJORITY_DOWN:
          {
            run.awaitEvent(e -> e.kind.equals("HELD"), Duration.ofSeconds(30));
            hooks.killMajority();
            // from when they are all down: an acquire the servers granted before dying is no
            // failure
            faultStart = System.nanoTime();
            try {
              // longer than a lease: the restart is a delayed one, so no key outlives it anywhere
              Thread.sleep(lease.multipliedBy(3).toMillis());
            } finally {
              // the fault ends as the first server starts again: a hold after that is no failure
              faultEnd = System.nanoTime();
              hooks.restartMajority();
            }
            Thread.sleep(lease.multipliedBy(3).toMillis());
            break;
          }
        case LEADER_FAILOVER:
          {
            run.awaitEvent(e -> e.kind.equals("HELD"), Duration.ofSeconds(30));
            faultStart = System.nanoTime();
            hooks.killLeader();
            faultEnd = System.nanoTime();
            Thread.sleep(lease.multipliedBy(4).toMillis());
            break;
          }
        case CLOCK_JUMP:
          {
            Event held =
                run.awaitEvent(
                    e -> e.kind.equals("HELD") && e.contender == 0, Duration.ofSeconds(30));
            // let it renew once, so the jump hits a lease that is being kept alive
            Thread.sleep(lease.dividedBy(2).toMillis());
            faultStart = System.nanoTime();
            r.victim = 0;
            hooks.jumpServerClock(lease.multipliedBy(2));
            faultEnd = System.nanoTime();
            r.note =
                "the server's clock jumped "
                    + lease.multipliedBy(2).toMillis()
                    + " ms forward "
                    + (faultStart - held.at) / 1_000_000
                    + " ms into contender 0's hold of "
                    + victimHold
                    + " ms";
            Thread.sleep(lease.multipliedBy(3).toMillis());
            break;
          }
        default:
          throw new IllegalStateException("unknown scenario " + scenario);
      }
      long stop = System.nanoTime();
      run.close();
      r.timeline = timeline(run.events, faultStart, faultEnd);
      if (scenario.semaphore()) {
        r.measureSemaphore(run.events, run.resources, faultStart, faultEnd, stop, scenario.permits);
        // the contenders are gone (halted, their permits unreleased): every permit must come back,
        // and no more
        long within = outlive.plus(lease).toMillis();
        r.permitsAfter(
            scenario.permits,
            probePermits(target, run.name, scenario.permits, Duration.ofMillis(within)),
            within);
        return;
      }
      r.measure(run.events, run.resources, faultStart, faultEnd, stop, lease);
      if (scenario == Scenario.MAJORITY_DOWN) {
        r.judgeQuorumLoss();
      } else if (scenario == Scenario.SERVER_RESTART) {
        r.noteRestart();
      } else if (scenario == Scenario.LINK_DELAY) {
        r.note =
            "link delayed "
                + lease.toMillis()
                + " ms each way for "
                + (faultEnd - faultStart) / 1_000_000
                + " ms from the victim's hold; "
                + r.failedAcquiresNote();
      }
    } finally {
      if (proxy != null) {
        proxy.close();
      }
    }
  }

  /**
   * Takes a semaphore's permits from a client of this JVM, after the contenders are gone, one by
   * one, each within what is left of {@code within}, then one more at once.
   *
   * @return {@code [permits taken, 1 if one more than permits was granted else 0, millis until the
   *     last was taken]}
   */
  private long[] probePermits(Target target, String name, int permits, Duration within)
      throws InterruptedException {
    LockConfig config = LockConfig.builder().uri(target.uri).lease(lease).autoRenew(true).build();
    List<Lease> taken = new ArrayList<>();
    long start = System.nanoTime();
    long lastAt = start;
    try (LockClient client = Locks.connect(config)) {
      DistributedLock semaphore = client.semaphore(name, permits);
      long deadline = start + within.toNanos();
      while (taken.size() < permits) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          break;
        }
        Optional<Lease> one = semaphore.tryAcquire(Duration.ofNanos(left));
        if (one.isEmpty()) {
          break;
        }
        taken.add(one.get());
        lastAt = System.nanoTime();
      }
      long count = taken.size();
      boolean extra = false;
      if (count == permits) {
        Optional<Lease> more = semaphore.tryAcquire(Duration.ZERO);
        extra = more.isPresent();
        more.ifPresent(taken::add);
      }
      for (Lease l : taken) {
        l.release();
      }
      return new long[] {count, extra ? 1 : 0, (lastAt - start) / 1_000_000};
    }
  }

  /** The fault hooks each scenario needs; the holder scenarios need none. */
  private static final Map<Scenario, List<String>> HOOKS =
      Map.of(
          Scenario.SERVER_PAUSE, List.of("pauseServer", "resumeServer"),
          Scenario.SERVER_RESTART, List.of("killServer", "restartServer"),
          Scenario.PARTITION, List.of("serverAddress", "uriVia"),
          Scenario.LINK_DELAY, List.of("serverAddress", "uriVia"),
          Scenario.MAJORITY_DOWN, List.of("killMajority", "restartMajority"),
          Scenario.LEADER_FAILOVER, List.of("killLeader"),
          Scenario.CLOCK_JUMP, List.of("jumpServerClock"));

  /**
   * @param leases how many leases to keep the contenders going after a fault in a full run
   * @return milliseconds: one lease in quick mode, where the first holds after recovery suffice
   */
  private long tail(int leases) {
    return lease.multipliedBy(quick ? 1 : leases).toMillis();
  }

  private static void requireHook(FaultHooks hooks, String name) {
    // hooks cannot be probed without harm, so ask whether the target overrides them
    for (java.lang.reflect.Method m : hooks.getClass().getMethods()) {
      if (m.getName().equals(name) && m.getDeclaringClass() != FaultHooks.class && !m.isBridge()) {
        return;
      }
    }
    throw new UnsupportedOperationException(name);
  }

  private static boolean pause(Run run, Event held) {
    signal(run.processes.get(held.contender), "STOP");
    return true;
  }

  private static boolean kill(Run run, Event held) {
    run.processes.get(held.contender).destroyForcibly();
    return true;
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
