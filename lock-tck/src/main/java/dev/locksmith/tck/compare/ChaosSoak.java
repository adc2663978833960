package dev.locksmith.tck.compare;

import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Promise;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.Locks;
import dev.locksmith.tck.compare.Comparison.Event;
import dev.locksmith.tck.compare.Comparison.Target;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.function.Consumer;

/**
 * A chaos soak (FAULTS.md, "Chaos soak"; issue 36): contenders in separate processes take one lock
 * of a target in turn, writing through the kit's resource server with and without their token,
 * while faults fire at random for a set time: a contender frozen (SIGSTOP) for up to two leases, a
 * contender killed (SIGKILL) and replaced, a contender cut off by its silent TCP proxy for up to
 * two leases (where the target offers {@code serverAddresses} and {@code uriVia}), and the server
 * frozen for up to a lease (where it offers {@code pauseServer}). A fault the backend declares
 * {@link Promise#UNSAFE} is left out of the mix, so every fault that fires is one under which the
 * backend promises safety, with fencing at least: the soak then expects no fenced lost update and
 * no token regression. Overlaps and unguarded lost updates are counted and reported, not judged (a
 * frozen holder overlaps its successor on every backend that is safe only with fencing).
 *
 * <p>The faults and their timing come from one seed, printed with the outcome: the same seed on the
 * same target fires the same faults in the same order (the timing of the contenders themselves is
 * not replayed).
 *
 * <pre>{@code
 * ChaosSoak.Outcome o = ChaosSoak.run(target, Duration.ofMinutes(30), 42L, System.out::println);
 * System.out.println(o.markdown());   // holds, overlaps, lost updates, regressions, faults fired
 * }</pre>
 */
public final class ChaosSoak {
  /** The lease of the contenders, as in the fault comparison. */
  static final Duration LEASE = Duration.ofSeconds(1);

  /** How many contenders take part at any time. */
  static final int CONTENDERS = 3;

  private ChaosSoak() {}

  /** What one soak saw. */
  public static final class Outcome {
    private final String target;
    private final long seed;
    private final Duration length;
    private final Map<String, Integer> fired;
    private final List<String> leftOut;
    private final Result result;

    Outcome(
        String target,
        long seed,
        Duration length,
        Map<String, Integer> fired,
        List<String> leftOut,
        Result result) {
      this.target = target;
      this.seed = seed;
      this.length = length;
      this.fired = fired;
      this.leftOut = leftOut;
      this.result = result;
    }

    /**
     * @return the target's label
     */
    public String target() {
      return target;
    }

    /**
     * @return the seed the faults came from
     */
    public long seed() {
      return seed;
    }

    /**
     * @return how many faults of each kind fired
     */
    public Map<String, Integer> fired() {
      return fired;
    }

    /**
     * @return how many turns the contenders took
     */
    public int holds() {
      return result.holds;
    }

    /**
     * @return the holds, overlaps, lost updates and the verdict, as a comparison row has them
     */
    public Result result() {
      return result;
    }

    /**
     * @return whether the backend kept its promise: no fenced lost update and no token regression
     */
    public boolean kept() {
      return result.fencedLost == 0 && result.tokenRegressions == 0;
    }

    /**
     * @return one line per figure, in Markdown
     */
    public String markdown() {
      StringBuilder md = new StringBuilder();
      md.append(
          String.format(
              Locale.ROOT,
              "- **%s**, %d s, seed %d: %s. %d holds, %d overlapping, %d token regressions, lost"
                  + " updates %d unguarded / %d fenced, %d stale writes refused, %d loss signals,"
                  + " %d contender errors. Faults fired: %s.",
              target,
              length.toSeconds(),
              seed,
              kept() ? "kept its promise" : "**BROKE its promise**",
              result.holds,
              result.overlaps,
              result.tokenRegressions,
              result.unguardedLost,
              result.fencedLost,
              result.staleRejected,
              result.lossSignals,
              result.errors,
              fired));
      if (!leftOut.isEmpty()) {
        md.append(" Left out: ").append(String.join("; ", leftOut)).append(".");
      }
      return md.append("\n").toString();
    }
  }

  /** One kind of fault the soak can fire on a target. */
  private enum Kind {
    PAUSE(Fault.HOLDER_PAUSE, "contender frozen"),
    KILL(Fault.HOLDER_CRASH, "contender killed"),
    CUT(Fault.PARTITION, "contender cut off"),
    SERVER_PAUSE(Fault.SERVER_PAUSE, "server frozen");

    final Fault fault;
    final String label;

    Kind(Fault fault, String label) {
      this.fault = fault;
      this.label = label;
    }
  }

  /**
   * Runs a soak against {@code target} for {@code length}.
   *
   * @param target the target, as for a {@link Comparison}
   * @param length how long faults fire (a lease or two more pass before the measurement ends)
   * @param seed where the faults and their timing come from
   * @param progress told of each fault as it fires
   * @return what the soak saw
   * @throws IOException if a contender or proxy cannot be started
   * @throws InterruptedException if interrupted; the contenders are ended first
   */
  public static Outcome run(Target target, Duration length, long seed, Consumer<String> progress)
      throws IOException, InterruptedException {
    Guarantees declared;
    try (LockClient probe = Locks.connect(LockConfig.fromUri(target.uri))) {
      declared = probe.guarantees();
    }
    List<Kind> kinds = new ArrayList<>();
    List<String> leftOut = new ArrayList<>();
    boolean proxied = offers(target, "serverAddress", "serverAddresses");
    for (Kind k : Kind.values()) {
      Promise p = declared.promise(k.fault);
      if (p == Promise.UNSAFE || p == Promise.NOT_APPLICABLE) {
        leftOut.add(k.label + " (declared " + p + ")");
      } else if (k == Kind.CUT && !proxied) {
        leftOut.add(k.label + " (no serverAddresses hook)");
      } else if (k == Kind.SERVER_PAUSE && !offers(target, "pauseServer")) {
        leftOut.add(k.label + " (no pauseServer hook)");
      } else {
        kinds.add(k);
      }
    }
    if (kinds.isEmpty()) {
      throw new IllegalArgumentException(
          "no fault the soak fires is declared safe by " + target.label + ": " + leftOut);
    }
    Random random = new Random(seed);
    Map<String, Integer> fired = new LinkedHashMap<>();
    List<Proxies> proxies = new ArrayList<>();
    Result r =
        new Result(
            target.label,
            Fault.HOLDER_PAUSE,
            "chaos soak, seed " + seed,
            Promise.SAFE_WITH_FENCING,
            "-");
    long lease = LEASE.toMillis();
    try (ContenderRun run = new ContenderRun(target, LEASE)) {
      // slot i: the contender now in it (its index in run.processes) and its proxy, if any
      int[] slot = new int[CONTENDERS];
      for (int i = 0; i < CONTENDERS; i++) {
        Proxies p = proxied ? new Proxies(target.hooks.serverAddresses()) : null;
        proxies.add(p);
        slot[i] = start(run, target, p);
      }
      run.awaitCount("READY", CONTENDERS, Duration.ofSeconds(60));
      long start = System.nanoTime();
      long end = start + length.toNanos();
      while (System.nanoTime() - end < 0) {
        Thread.sleep(lease / 2 + random.nextInt((int) (2 * lease))); // quiet between faults
        if (System.nanoTime() - end >= 0) {
          break;
        }
        Kind k = kinds.get(random.nextInt(kinds.size()));
        int drawn = random.nextInt(CONTENDERS);
        long forMillis = lease / 4 + random.nextInt((int) (2 * lease));
        // half the faults on a contender hit it as it reports a grant: the holder, the one whose
        // pause or cut-off can outlast its lease while it holds
        boolean atHolder = k != Kind.SERVER_PAUSE && random.nextBoolean();
        int s = drawn;
        if (k != Kind.SERVER_PAUSE) {
          int[] hit = {-1};
          if (atHolder) {
            int[] now = slot.clone();
            try {
              run.awaitEvent(
                  e -> {
                    int at = indexOf(now, e.contender);
                    if (!e.kind.equals("HELD") || at < 0) {
                      return false;
                    }
                    begin(k, run, now[at], proxies.get(at));
                    hit[0] = at;
                    return true;
                  },
                  Duration.ofSeconds(10));
            } catch (IllegalStateException noGrant) {
              // nobody was granted the lock for 10 s (the server or a holder is stuck): any one
            }
          }
          if (hit[0] >= 0) {
            s = hit[0];
          } else {
            begin(k, run, slot[s], proxies.get(s));
          }
        }
        fired.merge(k.label, 1, Integer::sum);
        progress.accept(
            target.label
                + ": "
                + k.label
                + (k == Kind.SERVER_PAUSE
                    ? ""
                    : " (slot " + s + (atHolder ? ", as it held" : "") + ")")
                + (k == Kind.KILL ? "" : " for " + forMillis + " ms"));
        switch (k) {
          case PAUSE:
            Thread.sleep(forMillis);
            Comparison.signal(run.processes.get(slot[s]), "CONT");
            break;
          case KILL:
            run.processes.get(slot[s]).waitFor();
            // its turn, if it held one, ended with it
            run.events.add(new Event(slot[s], "RELEASING killed " + System.nanoTime()));
            slot[s] = start(run, target, proxies.get(s));
            break;
          case CUT:
            Thread.sleep(forMillis);
            proxies.get(s).blackhole(false);
            break;
          case SERVER_PAUSE:
            target.hooks.pauseServer();
            try {
              Thread.sleep(Math.min(forMillis, lease));
            } finally {
              target.hooks.resumeServer();
            }
            break;
          default:
            throw new IllegalStateException("unknown fault " + k);
        }
      }
      long faultsEnd = System.nanoTime();
      Thread.sleep(2 * lease); // what was under way comes to an end
      long stop = System.nanoTime();
      run.close();
      r.measure(run.events, run.resources, start, faultsEnd, stop, LEASE);
    } finally {
      for (Proxies p : proxies) {
        if (p != null) {
          p.close();
        }
      }
    }
    return new Outcome(target.label, seed, length, fired, leftOut, r);
  }

  /** Starts fault {@code k} on contender {@code index} (its end is the caller's). */
  private static void begin(Kind k, ContenderRun run, int index, Proxies proxy) {
    switch (k) {
      case PAUSE:
        Comparison.signal(run.processes.get(index), "STOP");
        break;
      case KILL:
        run.processes.get(index).destroyForcibly();
        break;
      case CUT:
        proxy.blackhole(true);
        break;
      default:
        throw new IllegalStateException(k + " is not a fault of one contender");
    }
  }

  private static int indexOf(int[] slots, int contender) {
    for (int i = 0; i < slots.length; i++) {
      if (slots[i] == contender) {
        return i;
      }
    }
    return -1;
  }

  private static int start(ContenderRun run, Target target, Proxies proxy) throws IOException {
    int index = run.processes.size();
    String uri = proxy == null ? target.uri : target.hooks.uriVia(proxy.addresses());
    run.start(index, uri, 50, 0, 0, false);
    return index;
  }

  /** Whether the target's hooks override one of these methods (asking them could do harm). */
  private static boolean offers(Target target, String... methods) {
    List<String> any = List.of(methods);
    for (java.lang.reflect.Method m : target.hooks.getClass().getMethods()) {
      if (any.contains(m.getName())
          && m.getDeclaringClass() != dev.locksmith.tck.FaultHooks.class
          && !m.isBridge()) {
        return true;
      }
    }
    return false;
  }
}
