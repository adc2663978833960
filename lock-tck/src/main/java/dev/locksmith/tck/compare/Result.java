package dev.locksmith.tck.compare;

import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Promise;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** What one scenario showed for one backend, next to what it declared and what was predicted. */
public final class Result {
  final String target;
  final Fault fault;
  final String scenario;
  final Promise declared;
  final String predicted;
  String observed = "-";
  String notRunReason;
  String note = "";
  boolean agrees = true;
  int holds;
  int overlaps;
  int tokenRegressions;
  int lossSignals;
  int errors;
  long unguardedLost;
  long fencedLost;
  long staleRejected;
  Long availableAfterMs;
  Long lossSignalAfterMs;
  boolean lateReleaseFreedOther;

  /** Holds that began while the fault lasted (after it started, before it ended). */
  int holdsDuringFault;

  /**
   * Acquires that failed with an error while the fault lasted, the slowest of them, and the first
   * one's message.
   */
  int failedAcquiresDuringFault;

  long slowestFailedAcquireMs;
  String firstFailedAcquire;

  /** From the fault's end to the first hold that began after it. */
  Long availableAfterFaultEndMs;

  /**
   * The victim's hold that the fault hit: its token and how its release went (1 still held, 0 not,
   * 2 error, -1 never released).
   */
  long victimToken = -1;

  long victimReleased = -2;

  /** The first hold that began after the fault ended: its token. */
  long firstTokenAfterFault = -1;

  int victim = -1;

  /**
   * The contender that held the lock when a server-side fault hit it (not a victim: it was not hurt
   * itself).
   */
  int holderAtFault = -1;

  /** Holds for the timeline: contender, token, start ms, end ms. */
  final List<long[]> bars = new ArrayList<>();

  final List<long[]> lossMarks = new ArrayList<>();
  long faultStartMs;
  long faultEndMs;
  long spanMs;

  /**
   * Set when the scenario needs a feature the backend does not declare: a row of its own, never a
   * pass.
   */
  boolean notDeclared;

  /** For a semaphore scenario: its permits; 0 for a lock's. */
  int permits;

  /**
   * For a semaphore scenario: leases the backend still called live (released while held) that were
   * held N + 1 at once.
   */
  int overLive;

  Result(String target, Fault fault, String scenario, Promise declared, String predicted) {
    this.target = target;
    this.fault = fault;
    this.scenario = scenario;
    this.declared = declared;
    this.predicted = predicted;
  }

  /**
   * @return the backend's label
   */
  public String target() {
    return target;
  }

  /**
   * @return the fault scenario
   */
  public Fault fault() {
    return fault;
  }

  /**
   * @return the scenario in a few words, such as "holder killed (SIGKILL) while holding"
   */
  public String scenario() {
    return scenario;
  }

  /**
   * @return what the published analyses predict, such as "F" or "A, then F on resume"
   */
  public String predicted() {
    return predicted;
  }

  /**
   * @return what the backend declared
   */
  public Promise declared() {
    return declared;
  }

  /**
   * @return S, F, U, A, or "-" when not run
   */
  public String observed() {
    return observed;
  }

  /**
   * @return why the scenario was not run, or null if it ran
   */
  public String notRunReason() {
    return notRunReason;
  }

  /**
   * The contenders' events of the run, one a line, in milliseconds from the first hold, with the
   * fault's start and end: printed when a run disagrees, so that a CI log says what happened; empty
   * for a scenario that did not run.
   */
  String timeline = "";

  /**
   * @return false when the observation is worse than the declaration
   */
  public boolean agrees() {
    return agrees;
  }

  /**
   * @return the observation in a sentence, or an empty string
   */
  public String note() {
    return note;
  }

  /**
   * @return holds that began while the fault lasted
   */
  public int holdsDuringFault() {
    return holdsDuringFault;
  }

  /**
   * @return acquires that failed with an error while the fault lasted
   */
  public int failedAcquiresDuringFault() {
    return failedAcquiresDuringFault;
  }

  /**
   * @return holds whose intervals overlapped
   */
  public int overlaps() {
    return overlaps;
  }

  /**
   * @return updates lost on the fenced counter
   */
  public long fencedLost() {
    return fencedLost;
  }

  /**
   * @return whether this is a semaphore scenario's row rather than a lock's
   */
  public boolean semaphore() {
    return permits > 0;
  }

  /**
   * @return whether the scenario was not run because the backend does not declare a feature it
   *     needs
   */
  public boolean notDeclared() {
    return notDeclared;
  }

  void notDeclared(dev.locksmith.Guarantees.Feature feature) {
    notRun("not declared: the backend does not declare " + feature);
    notDeclared = true;
  }

  void notRun(String reason) {
    notRunReason = reason;
    observed = "-";
    agrees = true;
  }

  /**
   * The row of a scenario run several times: the worst run (U, then F, then A, then S; among equals
   * the one available again last), its note saying how each run went and the spread of the time
   * until the lock was available again. Runs that could not run are counted in the note; if none
   * ran, the first run's reason is the row's.
   */
  static Result worstOf(List<Result> runs) {
    List<Result> ran = new ArrayList<>();
    int notRun = 0;
    String why = null;
    for (Result r : runs) {
      if (r.notRunReason == null) {
        ran.add(r);
      } else {
        notRun++;
        why = why == null ? r.notRunReason : why;
      }
    }
    if (ran.isEmpty()) {
      return runs.get(0);
    }
    String order = "SAFU";
    Result worst = ran.get(0);
    for (Result r : ran) {
      int a = order.indexOf(r.observed);
      int b = order.indexOf(worst.observed);
      long ra = r.availableAfterMs == null ? Long.MAX_VALUE : r.availableAfterMs;
      long rb = worst.availableAfterMs == null ? Long.MAX_VALUE : worst.availableAfterMs;
      if (a > b || (a == b && ra > rb)) {
        worst = r;
      }
    }
    List<Long> available = new ArrayList<>();
    StringBuilder observed = new StringBuilder();
    int overlapsAll = 0;
    int regressionsAll = 0;
    long fencedAll = 0;
    for (Result r : ran) {
      observed.append(observed.length() == 0 ? "" : ",").append(r.observed);
      if (r.availableAfterMs != null) {
        available.add(r.availableAfterMs);
      }
      overlapsAll += r.overlaps;
      regressionsAll += r.tokenRegressions;
      fencedAll += r.fencedLost;
    }
    java.util.Collections.sort(available);
    StringBuilder note = new StringBuilder();
    note.append(ran.size())
        .append(" runs, observed ")
        .append(observed)
        .append(" (the row is the worst); available again after ");
    if (available.isEmpty()) {
      note.append("none");
    } else {
      note.append(available.get(0))
          .append(" / ")
          .append(available.get(available.size() / 2))
          .append(" / ")
          .append(available.get(available.size() - 1))
          .append(" ms (min / median / max of ")
          .append(available.size())
          .append(")");
      if (available.size() < ran.size()) {
        note.append(", never within the run in ").append(ran.size() - available.size());
      }
    }
    note.append("; in all runs ")
        .append(overlapsAll)
        .append(" overlapping holds, ")
        .append(regressionsAll)
        .append(" token regressions, ")
        .append(fencedAll)
        .append(" fenced lost updates");
    if (notRun > 0) {
      note.append("; ").append(notRun).append(" more could not run: ").append(why);
    }
    if (!worst.note.isEmpty()) {
      note.append("; worst run: ").append(worst.note);
    }
    worst.note = note.toString();
    return worst;
  }

  void copyRun(Result other) {
    holds = other.holds;
    overlaps = other.overlaps;
    errors = other.errors;
  }

  void measure(
      List<Comparison.Event> events,
      ResourceServer resources,
      long faultStart,
      long faultEnd,
      long stop,
      java.time.Duration lease) {
    long t0 =
        events.stream()
            .filter(e -> e.kind.equals("HELD"))
            .mapToLong(e -> e.at)
            .min()
            .orElse(faultStart);
    Map<Integer, long[]> open = new HashMap<>();
    Map<Integer, Long> releasing = new HashMap<>();
    java.util.Set<Integer> releaseFailed = new java.util.HashSet<>();
    // contender, token, start, end, stillHeld(1/0/-1), when its acquire began
    List<long[]> holdsList = new ArrayList<>();
    for (Comparison.Event e : events) {
      switch (e.kind) {
        case "HELD":
          open.put(
              e.contender, new long[] {e.contender, Long.parseLong(e.fields[1]), e.at, askedAt(e)});
          releasing.remove(e.contender);
          break;
        case "RELEASING":
          releasing.put(e.contender, e.at);
          break;
        case "RELEASED":
          {
            long[] h = open.remove(e.contender);
            if (h != null) {
              // 1 still held, 0 no longer ours, 2 the release failed with an error
              holdsList.add(
                  new long[] {
                    h[0],
                    h[1],
                    h[2],
                    e.at,
                    releaseFailed.remove(e.contender)
                        ? 2
                        : Boolean.parseBoolean(e.fields[1]) ? 1 : 0,
                    h[3]
                  });
            }
            break;
          }
        case "LOST":
          if (e.at - faultStart >= 0) {
            lossSignals++;
            if (lossSignalAfterMs == null) {
              lossSignalAfterMs = (e.at - faultStart) / 1_000_000;
            }
          }
          lossMarks.add(new long[] {e.contender, (e.at - t0) / 1_000_000});
          break;
        case "ERROR":
          errors++;
          if (e.fields.length >= 2 && e.fields[1].equals("release")) {
            releaseFailed.add(e.contender);
          }
          if (e.fields.length >= 3
              && e.fields[1].equals("acquire")
              && e.at - faultStart >= 0
              && e.at - faultEnd <= 0) {
            failedAcquiresDuringFault++;
            try {
              slowestFailedAcquireMs =
                  Math.max(slowestFailedAcquireMs, Long.parseLong(e.fields[2]));
            } catch (NumberFormatException notTimed) {
              // a contender of an older kit: no time
            }
            if (firstFailedAcquire == null) {
              firstFailedAcquire =
                  String.join(" ", java.util.Arrays.asList(e.fields).subList(3, e.fields.length));
            }
          }
          break;
        default:
          break;
      }
    }
    int releasesUnfinished = 0;
    for (long[] h : open.values()) {
      // a turn whose release never returned ended its use of the resource as the release started
      long end =
          h[0] == victim && fault == Fault.HOLDER_CRASH
              ? faultStart
              : releasing.getOrDefault((int) h[0], stop);
      releasesUnfinished += releasing.containsKey((int) h[0]) ? 1 : 0;
      holdsList.add(new long[] {h[0], h[1], h[2], end, -1, h[3]});
    }
    if (releasesUnfinished > 0) {
      note =
          releasesUnfinished
              + " release(s) had not returned when the run ended (each such turn counted until its"
              + " release began)";
    }
    holdsList.sort((a, b) -> Long.compare(a[2], b[2]));
    holds = holdsList.size();
    tokenRegressions = tokenRegressions(holdsList);
    for (int i = 0; i < holdsList.size(); i++) {
      long[] h = holdsList.get(i);
      for (int j = i + 1; j < holdsList.size() && holdsList.get(j)[2] - h[3] < 0; j++) {
        overlaps++;
        if (h[0] == victim && h[4] == 1 && h[2] - faultStart <= 0 && h[3] - faultStart > 0) {
          lateReleaseFreedOther = true;
        }
      }
      if (h[2] - faultStart > 0 && h[2] - faultEnd < 0) {
        holdsDuringFault++;
      }
      if (h[2] - faultEnd > 0 && availableAfterFaultEndMs == null) {
        availableAfterFaultEndMs = (h[2] - faultEnd) / 1_000_000;
        firstTokenAfterFault = h[1];
      }
      if (h[0] == (victim >= 0 ? victim : holderAtFault) && h[2] - faultStart <= 0) {
        victimToken = h[1];
        victimReleased = h[4];
      }
      if (h[2] - faultStart > 0 && availableAfterMs == null && (h[0] != victim || victim < 0)) {
        availableAfterMs = (h[2] - faultStart) / 1_000_000;
      }
      bars.add(new long[] {h[0], h[1], (h[2] - t0) / 1_000_000, (h[3] - t0) / 1_000_000});
    }
    faultStartMs = (faultStart - t0) / 1_000_000;
    faultEndMs = (faultEnd - t0) / 1_000_000;
    spanMs = (stop - t0) / 1_000_000;
    unguardedLost = resources.unguardedLost();
    fencedLost = resources.fencedLost();
    staleRejected = resources.fencedRejected();
    if (fencedLost > 0 || tokenRegressions > 0) {
      observed = "U";
    } else if (overlaps > 0 || unguardedLost > 0) {
      observed = "F";
    } else if (availableAfterMs == null) {
      observed = "A";
    } else {
      observed = "S";
    }
    judge();
  }

  /**
   * For a semaphore of {@code permits}: overlaps are holds that began while {@code permits} others
   * were held; such a group whose every lease the backend still called its own at release is N + 1
   * live leases at once (U), as is a stale holder's write that the resource accepted, or a token
   * granted twice; otherwise holds beyond N are F. Available again: from the fault until {@code
   * permits} holders other than the victim held at once (its permit came back).
   */
  void measureSemaphore(
      List<Comparison.Event> events,
      ResourceServer resources,
      long faultStart,
      long faultEnd,
      long stop,
      int permits) {
    this.permits = permits;
    long t0 =
        events.stream()
            .filter(e -> e.kind.equals("HELD"))
            .mapToLong(e -> e.at)
            .min()
            .orElse(faultStart);
    Map<Integer, long[]> open = new HashMap<>();
    Map<Integer, Long> releasing = new HashMap<>();
    Map<Integer, Boolean> wroteOk = new HashMap<>();
    java.util.Set<Integer> releaseFailed = new java.util.HashSet<>();
    List<long[]> list =
        new ArrayList<>(); // contender, token, start, end, released (1 still held, 0 not, 2 error,
    // -1 never), wrote OK (1/0/-1)
    for (Comparison.Event e : events) {
      switch (e.kind) {
        case "HELD":
          open.put(e.contender, new long[] {e.contender, Long.parseLong(e.fields[1]), e.at});
          wroteOk.remove(e.contender);
          releasing.remove(e.contender);
          break;
        case "RELEASING":
          releasing.put(e.contender, e.at);
          break;
        case "WROTE":
          wroteOk.put(e.contender, e.fields.length >= 2 && e.fields[1].equals("OK"));
          break;
        case "RELEASED":
          {
            long[] h = open.remove(e.contender);
            if (h != null) {
              Boolean ok = wroteOk.remove(e.contender);
              list.add(
                  new long[] {
                    h[0],
                    h[1],
                    h[2],
                    e.at,
                    releaseFailed.remove(e.contender)
                        ? 2
                        : Boolean.parseBoolean(e.fields[1]) ? 1 : 0,
                    ok == null ? -1 : ok ? 1 : 0
                  });
            }
            break;
          }
        case "LOST":
          if (e.at - faultStart >= 0) {
            lossSignals++;
            if (lossSignalAfterMs == null) {
              lossSignalAfterMs = (e.at - faultStart) / 1_000_000;
            }
          }
          lossMarks.add(new long[] {e.contender, (e.at - t0) / 1_000_000});
          break;
        case "ERROR":
          errors++;
          if (e.fields.length >= 2 && e.fields[1].equals("release")) {
            releaseFailed.add(e.contender);
          }
          break;
        default:
          break;
      }
    }
    for (long[] h : open.values()) {
      long end =
          h[0] == victim && fault == Fault.HOLDER_CRASH
              ? faultStart
              : releasing.getOrDefault((int) h[0], stop);
      Boolean ok = wroteOk.get((int) h[0]);
      list.add(new long[] {h[0], h[1], h[2], end, -1, ok == null ? -1 : ok ? 1 : 0});
    }
    list.sort((a, b) -> Long.compare(a[2], b[2]));
    holds = list.size();
    java.util.Set<Long> tokens = new java.util.HashSet<>();
    boolean[] beyond = new boolean[list.size()];
    for (int i = 0; i < list.size(); i++) {
      long[] h = list.get(i);
      if (!tokens.add(h[1])) {
        tokenRegressions++; // a token granted twice: the semaphore's one counter went back
      }
      List<Integer> held = new ArrayList<>();
      for (int j = 0; j < i; j++) {
        if (list.get(j)[3] - h[2] > 0) {
          held.add(j);
        }
      }
      if (held.size() >= permits) {
        overlaps++;
        beyond[i] = true;
        boolean allLive = h[4] == 1;
        for (int j : held) {
          beyond[j] = true;
          allLive &= list.get(j)[4] == 1;
        }
        if (allLive) {
          overLive++;
        }
      }
      if (h[0] == victim && h[2] - faultStart <= 0) {
        victimToken = h[1];
        victimReleased = h[4];
      }
      bars.add(new long[] {h[0], h[1], (h[2] - t0) / 1_000_000, (h[3] - t0) / 1_000_000});
    }
    for (int i = 0; i < list.size(); i++) {
      long[] h = list.get(i);
      if (beyond[i] && h[4] == 0 && h[5] == 1) {
        fencedLost++; // a holder beyond N whose permit was gone by its release, and whose write got
        // through the fence
      }
    }
    // its permit is back once `permits` others hold at once after the fault began
    for (int i = 0; i < list.size() && availableAfterMs == null; i++) {
      long[] h = list.get(i);
      if (h[0] == victim || h[2] - faultStart <= 0) {
        continue;
      }
      int others = 0;
      for (long[] g : list) {
        if (g[0] != victim && g[2] - h[2] <= 0 && g[3] - h[2] > 0) {
          others++;
        }
      }
      if (others >= permits) {
        availableAfterMs = (h[2] - faultStart) / 1_000_000;
      }
    }
    faultStartMs = (faultStart - t0) / 1_000_000;
    faultEndMs = (faultEnd - t0) / 1_000_000;
    spanMs = (stop - t0) / 1_000_000;
    unguardedLost = resources.overCapacity();
    staleRejected = resources.fencedRejected();
    // Not fencedLost: with N permits, token order cannot tell which holder inside is the stale one
    // (a live holder granted before the frozen one has a lower token), so a write the resource's
    // guess let through is reported, not judged. The backend's own safety is overLive and tokens.
    if (overLive > 0 || tokenRegressions > 0) {
      observed = "U";
    } else if (overlaps > 0) {
      observed = "F";
    } else if (availableAfterMs == null) {
      observed = "A";
    } else {
      observed = "S";
    }
    String victimEnd =
        victimReleased == 1
            ? "its release found its permit still held"
            : victimReleased == 0
                ? "its release found its permit gone"
                : victimReleased == 2 ? "its release failed with an error" : "it never released";
    note =
        String.format(
            Locale.ROOT,
            "%d holds beyond N=%d (%d of them all live by the backend's word); the resource saw %d"
                + " entries while N were inside, at most %d inside, and refused %d stale writes;"
                + " the victim had token %d and %s; its permit was back (N others holding) %s after"
                + " the fault",
            overlaps,
            permits,
            overLive,
            unguardedLost,
            resources.mostInside(),
            staleRejected,
            victimToken,
            victimEnd,
            availableAfterMs == null ? "never" : availableAfterMs + " ms");
    judge();
  }

  /**
   * What a client of the comparing JVM found once every contender had gone: {@code probe} is {@code
   * [permits taken, 1 if one more was granted, millis until the last]}. Fewer than N taken within
   * {@code withinMs} is a leaked permit; more than N is U. Either disagrees.
   */
  void permitsAfter(int permits, long[] probe, long withinMs) {
    boolean leaked = probe[0] < permits;
    boolean extra = probe[1] == 1;
    note +=
        String.format(
            Locale.ROOT,
            "; after the run, with every contender gone: %d of %d permits taken within %d ms%s",
            probe[0],
            permits,
            leaked ? withinMs : probe[2],
            extra
                ? ", and one more granted (more than N)"
                : leaked ? " (LEAKED)" : ", a further one refused");
    if (extra) {
      observed = "U";
    }
    judge();
    if (leaked) {
      observed = observed + ", leaked " + (permits - probe[0]);
      agrees = false;
    }
  }

  /**
   * For a fault that takes the quorum away: safe and no hold began while it lasted is A (not
   * acquirable during the fault), with how acquiring failed and when it worked again.
   */
  void judgeQuorumLoss() {
    if ((observed.equals("S") || observed.equals("A")) && holdsDuringFault == 0) {
      observed = "A";
    }
    note =
        String.format(
            Locale.ROOT,
            "%d holds began in the %d ms the servers were down; %s; first hold %s after their"
                + " restart began",
            holdsDuringFault,
            faultEndMs - faultStartMs,
            failedAcquiresNote(),
            availableAfterFaultEndMs == null ? "never" : availableAfterFaultEndMs + " ms");
    judge();
  }

  /** For a server restart: did the lock and the counter outlive it. */
  void noteRestart() {
    String release =
        victimReleased == 1
            ? "its release after the restart found its lock still held"
            : victimReleased == 0
                ? "its release found the lock no longer its own"
                : victimReleased == 2
                    ? "its release failed with an error (server unreachable)"
                    : "it never released";
    note =
        String.format(
            Locale.ROOT,
            "the holder at the kill had token %d and %s; the first hold after the restart began %s"
                + " with token %d",
            victimToken,
            release,
            availableAfterFaultEndMs == null ? "never" : availableAfterFaultEndMs + " ms after it",
            firstTokenAfterFault);
  }

  String failedAcquiresNote() {
    if (failedAcquiresDuringFault == 0) {
      return "no acquire failed with an error meanwhile";
    }
    return String.format(
        Locale.ROOT,
        "%d acquires failed meanwhile, each within %d ms, the first with: %s",
        failedAcquiresDuringFault,
        slowestFailedAcquireMs,
        firstFailedAcquire.length() > 500
            ? firstFailedAcquire.substring(0, 500) + "…"
            : firstFailedAcquire);
  }

  void judge() {
    switch (declared) {
      case SAFE:
      case UNAVAILABLE:
        agrees = observed.equals("S") || observed.equals("A");
        break;
      case SAFE_WITH_FENCING:
        agrees = !observed.equals("U");
        break;
      default:
        agrees = true;
    }
  }

  String summary() {
    if (notRunReason != null) {
      return notDeclared ? notRunReason : "not run: " + notRunReason;
    }
    return String.format(
        Locale.ROOT,
        "observed %s (declared %s) %s; %d holds, %d overlapping, lost updates %d unguarded / %d"
            + " fenced, %d stale writes refused",
        observed,
        declared,
        agrees ? "agrees" : "DISAGREES",
        holds,
        overlaps,
        unguardedLost,
        fencedLost,
        staleRejected);
  }

  /**
   * When the turn's acquire began, from the fourth field of its {@code HELD} line; a contender that
   * does not say it gives its {@code HELD} time, the latest the acquire can have begun.
   */
  private static long askedAt(Comparison.Event held) {
    if (held.fields.length >= 4) {
      try {
        return Long.parseLong(held.fields[3]);
      } catch (NumberFormatException e) {
        // fall through: no time
      }
    }
    return held.at;
  }

  /**
   * Counts the holds granted a token no larger than that of a hold already reported before their
   * acquire even began. Order by the {@code HELD} lines alone would count a holder paused between
   * its grant and its report (its older token then shows up after newer ones) although the server
   * granted in order; a hold whose acquire began after another was reported was granted after it,
   * whatever the scheduler did to either process.
   *
   * @param byStart the holds, each {contender, token, start, end, stillHeld, asked}, sorted by
   *     start
   */
  static int tokenRegressions(List<long[]> byStart) {
    int n = byStart.size();
    long[] maxTokenUpTo = new long[n]; // the largest token among the first i + 1 holds
    long max = Long.MIN_VALUE;
    for (int i = 0; i < n; i++) {
      max = Math.max(max, byStart.get(i)[1]);
      maxTokenUpTo[i] = max;
    }
    int regressions = 0;
    for (long[] h : byStart) {
      // the holds reported strictly before this one's acquire began: a prefix of byStart
      int lo = 0;
      int hi = n;
      while (lo < hi) {
        int mid = (lo + hi) >>> 1;
        if (byStart.get(mid)[2] - h[5] < 0) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      if (lo > 0 && h[1] <= maxTokenUpTo[lo - 1]) {
        regressions++;
      }
    }
    return regressions;
  }
}
