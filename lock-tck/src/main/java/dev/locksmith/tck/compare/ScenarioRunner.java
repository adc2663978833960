package dev.locksmith.tck.compare;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.Locks;
import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.compare.Comparison.Event;
import dev.locksmith.tck.compare.Comparison.Scenario;
import dev.locksmith.tck.compare.Comparison.Target;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Runs one scenario of a {@link Comparison} against one target: starts the contenders, injects the
 * fault while one of them holds, keeps them going for a while after it, and measures what they
 * reported into the scenario's {@link Result}.
 */
final class ScenarioRunner {
  private final Duration lease;
  private final boolean quick;
  private final int contenders;

  ScenarioRunner(Duration lease, boolean quick, int contenders) {
    this.lease = lease;
    this.quick = quick;
    this.contenders = contenders;
  }

  /**
   * Runs {@code scenario} against {@code target} and records what it observed in {@code r}.
   *
   * @throws UnsupportedOperationException naming a fault hook the target does not offer, before any
   *     contender starts
   */
  void run(Target target, Scenario scenario, Result r) throws IOException, InterruptedException {
    FaultHooks hooks = target.hooks;
    Duration outlive = lease.plus(target.expirySlack).plus(Duration.ofSeconds(1));
    Proxies proxy = null;
    try (ContenderRun run = new ContenderRun(target, lease)) {
      // Hooks are checked before any contender starts, so a missing one costs nothing.
      for (String hook : HOOKS.getOrDefault(scenario, List.of())) {
        requireHook(hooks, hook);
      }
      String victimUri = target.uri;
      boolean viaProxy =
          scenario == Scenario.PARTITION
              || scenario == Scenario.LINK_DELAY
              || scenario == Scenario.ELECTION_LEADER_CUT_OFF
              || scenario == Scenario.ONE_WAY_TO_SERVER
              || scenario == Scenario.ONE_WAY_TO_CLIENT
              || scenario == Scenario.DROPPED_GRANT;
      if (viaProxy) {
        proxy = new Proxies(hooks.serverAddresses());
        victimUri = hooks.uriVia(proxy.addresses());
      }
      // A cut-off holder keeps working past its lease, as a real one does when nothing tells it
      // to stop in time: the partition's victim holds long enough for its lease to run out, and
      // so does the holder whose server's clock jumps (its renewals keep the lease going until
      // then).
      // A frozen holder is contender 0, holding for a lease: SIGSTOP is sent by a forked `kill`
      // after its HELD line is read, which on a loaded machine can take longer than a 50 ms turn.
      boolean frozen =
          scenario == Scenario.HOLDER_PAUSE
              || scenario == Scenario.SEMAPHORE_HOLDER_PAUSE
              || scenario == Scenario.SET_HOLDER_PAUSE
              || scenario == Scenario.ELECTION_LEADER_PAUSE;
      long victimHold =
          (viaProxy && scenario != Scenario.DROPPED_GRANT) || scenario == Scenario.CLOCK_JUMP
              ? outlive.plus(lease).toMillis()
              : frozen ? lease.toMillis() : 50;
      // a semaphore's contenders: one more than its permits, so that they contend while all are
      // alive
      int processes = scenario.semaphore() ? scenario.permits + 1 : contenders;
      for (int i = 0; i < processes; i++) {
        run.start(
            i,
            i == 0 ? victimUri : target.uri,
            i == 0 ? victimHold : 50,
            scenario.permits,
            scenario.setNames,
            scenario.election);
      }
      run.awaitCount("READY", processes, Duration.ofSeconds(60));
      run.awaitCount("RELEASED", processes, Duration.ofSeconds(30));
      long faultStart;
      long faultEnd;
      switch (scenario) {
        case HOLDER_PAUSE:
        case SEMAPHORE_HOLDER_PAUSE:
        case SET_HOLDER_PAUSE:
        case ELECTION_LEADER_PAUSE:
          {
            Event held =
                run.awaitEvent(
                    e -> e.kind.equals("HELD") && e.contender == 0 && pause(run, e),
                    Duration.ofSeconds(30));
            faultStart = held.at;
            r.victim = held.contender;
            Thread.sleep(outlive.toMillis());
            faultEnd = System.nanoTime();
            Comparison.signal(run.processes.get(held.contender), "CONT");
            Thread.sleep(tail(2));
            break;
          }
        case HOLDER_CRASH:
        case SEMAPHORE_HOLDER_CRASH:
        case SET_HOLDER_CRASH:
        case ELECTION_LEADER_CRASH:
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
        case ELECTION_LEADER_CUT_OFF:
          {
            Proxies cut = proxy;
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
        case ONE_WAY_TO_SERVER:
        case ONE_WAY_TO_CLIENT:
          {
            Proxies cut = proxy;
            TcpProxy.Direction way =
                scenario == Scenario.ONE_WAY_TO_SERVER
                    ? TcpProxy.Direction.TO_SERVER
                    : TcpProxy.Direction.TO_CLIENT;
            Event held =
                run.awaitEvent(
                    e -> e.kind.equals("HELD") && e.contender == 0, Duration.ofSeconds(30));
            cut.silence(way, true);
            faultStart = held.at;
            r.victim = 0;
            Thread.sleep(outlive.toMillis());
            cut.silence(way, false);
            faultEnd = System.nanoTime();
            Thread.sleep(lease.multipliedBy(2).toMillis());
            break;
          }
        case DROPPED_GRANT:
          {
            // contender 0 waits behind another's hold when its replies stop: its next grant is made
            // by the server and never heard of
            Proxies cut = proxy;
            run.awaitEvent(e -> e.kind.equals("HELD") && e.contender != 0, Duration.ofSeconds(30));
            cut.silence(TcpProxy.Direction.TO_CLIENT, true);
            faultStart = System.nanoTime();
            Thread.sleep(outlive.toMillis());
            cut.silence(TcpProxy.Direction.TO_CLIENT, false);
            faultEnd = System.nanoTime();
            Thread.sleep(lease.multipliedBy(2).toMillis());
            break;
          }
        case LINK_DELAY:
          {
            Proxies slow = proxy;
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
            // eight leases: a Redis Cluster's promotion (node timeout, the replicas' election) and
            // the clients' finding the slot's new owner took more than four in some runs
            Thread.sleep(lease.multipliedBy(8).toMillis());
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
      r.timeline = Comparison.timeline(run.events, faultStart, faultEnd);
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
      } else if (scenario == Scenario.DROPPED_GRANT
          || scenario == Scenario.ONE_WAY_TO_SERVER
          || scenario == Scenario.ONE_WAY_TO_CLIENT) {
        r.note =
            (scenario == Scenario.DROPPED_GRANT
                    ? "contender 0's replies cut off for "
                    : "contender 0 cut off one way for ")
                + (faultEnd - faultStart) / 1_000_000
                + " ms; "
                + r.failedAcquiresNote();
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
      Map.ofEntries(
          Map.entry(Scenario.SERVER_PAUSE, List.of("pauseServer", "resumeServer")),
          Map.entry(Scenario.SERVER_RESTART, List.of("killServer", "restartServer")),
          Map.entry(Scenario.PARTITION, List.of("serverAddress|serverAddresses", "uriVia")),
          Map.entry(Scenario.LINK_DELAY, List.of("serverAddress|serverAddresses", "uriVia")),
          Map.entry(
              Scenario.ELECTION_LEADER_CUT_OFF, List.of("serverAddress|serverAddresses", "uriVia")),
          Map.entry(Scenario.ONE_WAY_TO_SERVER, List.of("serverAddress|serverAddresses", "uriVia")),
          Map.entry(Scenario.ONE_WAY_TO_CLIENT, List.of("serverAddress|serverAddresses", "uriVia")),
          Map.entry(Scenario.DROPPED_GRANT, List.of("serverAddress|serverAddresses", "uriVia")),
          Map.entry(Scenario.MAJORITY_DOWN, List.of("killMajority", "restartMajority")),
          Map.entry(Scenario.LEADER_FAILOVER, List.of("killLeader")),
          Map.entry(Scenario.CLOCK_JUMP, List.of("jumpServerClock")));

  /**
   * @param leases how many leases to keep the contenders going after a fault in a full run
   * @return milliseconds: one lease in quick mode, where the first holds after recovery suffice
   */
  private long tail(int leases) {
    return lease.multipliedBy(quick ? 1 : leases).toMillis();
  }

  /**
   * @param name a hook's method name, or several separated by {@code |} of which one will do
   */
  private static void requireHook(FaultHooks hooks, String name) {
    // hooks cannot be probed without harm, so ask whether the target overrides them
    List<String> any = List.of(name.split("\\|"));
    for (java.lang.reflect.Method m : hooks.getClass().getMethods()) {
      if (any.contains(m.getName()) && m.getDeclaringClass() != FaultHooks.class && !m.isBridge()) {
        return;
      }
    }
    throw new UnsupportedOperationException(any.get(0));
  }

  private static boolean pause(ContenderRun run, Event held) {
    Comparison.signal(run.processes.get(held.contender), "STOP");
    return true;
  }

  private static boolean kill(ContenderRun run, Event held) {
    run.processes.get(held.contender).destroyForcibly();
    return true;
  }
}
