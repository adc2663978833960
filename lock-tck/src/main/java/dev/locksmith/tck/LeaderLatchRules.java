package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.Guarantees.Feature;
import dev.locksmith.LeaderLatch;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 21: leader latches ({@code client.leaderLatch(name)}), as tests: the rules of this group in
 * {@code RULES.md}. The kit's {@code @Nested} class {@link LockCompatibilityKit.LeaderLatches} runs
 * them against the backend under test. A latch is built on the client's exclusive lock, so every
 * backend has them; these rules check the latch and the backend together.
 */
interface LeaderLatchRules extends KitRules {
  /** A latch's callback: elected or revoked, by which latch, with the term, at when. */
  record Turn(String kind, int latch, long term, long at) {}

  /**
   * Starts a latch of {@code name} on {@code client} that records its callbacks in {@code turns}.
   */
  private static LeaderLatch recording(
      LockClient client, String name, int index, List<Turn> turns) {
    return client
        .leaderLatch(name)
        .onElected(s -> turns.add(new Turn("elected", index, s.term(), System.nanoTime())))
        .onRevoked(s -> turns.add(new Turn("revoked", index, s.term(), System.nanoTime())))
        .start();
  }

  private static int leader(List<LeaderLatch> latches) {
    int found = -1;
    for (int i = 0; i < latches.size(); i++) {
      if (latches.get(i).isLeader()) {
        if (found >= 0) {
          fail(
              "leader election broken: latches %d and %d both lead at once (isLeader())", found, i);
        }
        found = i;
      }
    }
    return found;
  }

  /**
   * Watches the latches for one tolerance after the first leader was seen: time for every other
   * latch to be campaigning (so that a grant to two, or a hand-over by a poll, cannot hide behind a
   * latch that had not started waiting yet), failing if two lead at once.
   *
   * @return the leader, the same all along
   */
  private int settle(List<LeaderLatch> latches, int leader) throws InterruptedException {
    long from = System.nanoTime();
    while (System.nanoTime() - from < limits().tolerance().toNanos()) {
      int now = leader(latches);
      if (now != leader) {
        fail(
            "leader election broken: latch %d led, then %s, with no latch closed or resigned",
            leader, now < 0 ? "none" : "latch " + now);
      }
      Thread.sleep(1);
    }
    return leader;
  }

  @Test
  @DisplayName(
      "21.1 MUST: latches of three clients lead one at a time; closing the leader hands over"
          + " within the wake-up bound, not at the lease's end; each term is above the last")
  default void rule21_1_oneLeaderAtATimeAndCloseHandsOver() throws Exception {
    String name = name("leader");
    // leases far longer than the hand-over bound: a hand-over that waits for one is caught
    LockOptions longRenewed =
        LockOptions.builder().lease(Duration.ofSeconds(60)).autoRenew(true).build();
    LockClient probe = client();
    boolean fencing = probe.guarantees().has(Feature.FENCING);
    // a backend that wakes waiters on a release gets waiters that poll only every 30 s, so that a
    // hand-over by a poll is caught too; one that polls keeps its own recheck, and the bound has it
    boolean notified = probe.guarantees().has(Feature.NOTIFIED_WAKEUP);
    Duration recheck = notified ? Duration.ofSeconds(30) : null;
    List<Turn> turns = new CopyOnWriteArrayList<>();
    List<LeaderLatch> latches = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        latches.add(recording(client(longRenewed, recheck), name, i, turns));
      }
      Duration handOver = limits().wakeUp().plus(limits().tolerance()).plus(limits().tolerance());
      if (!notified) {
        handOver = handOver.plus(probe.config().recheck());
      }
      long handOverBound = handOver.toNanos();
      List<Integer> closed = new ArrayList<>();
      for (int round = 0; round < 3; round++) {
        long waitFrom = System.nanoTime();
        long bound = round == 0 ? TimeUnit.SECONDS.toNanos(10) : handOverBound;
        int leader = -1;
        while (leader < 0) {
          leader = leader(latches);
          if (leader < 0 && System.nanoTime() - waitFrom > bound) {
            fail(
                round == 0
                    ? "leader election broken: no latch of three led within 10 s"
                    : String.format(
                        "leader election broken: after the leader's latch closed, no other led"
                            + " within %d ms (wake-up bound + 2 tolerances%s; leases are 60 s):"
                            + " the hand-over waited, for a poll or for the lease",
                        TimeUnit.NANOSECONDS.toMillis(bound),
                        notified ? "" : " + the recheck interval"));
          }
          Thread.sleep(1);
        }
        if (round == 0) {
          settle(latches, leader);
        }
        if (closed.contains(leader)) {
          fail("leader election broken: latch %d leads after it was closed", leader);
        }
        latches.get(leader).close();
        closed.add(leader);
      }
      // in the order they were told: each term revoked before the next is elected, terms rising
      List<Turn> ordered = new ArrayList<>(turns);
      ordered.sort((x, y) -> Long.compare(x.at(), y.at()));
      Turn open = null;
      long lastTerm = Long.MIN_VALUE;
      for (Turn t : ordered) {
        if (t.kind().equals("elected")) {
          if (open != null) {
            fail(
                "leader election broken: latch %d was elected (term %d) while latch %d still led"
                    + " (term %d); turns %s",
                t.latch(), t.term(), open.latch(), open.term(), ordered);
          }
          if (fencing && t.term() <= lastTerm) {
            fail(
                "leader election broken: term %d came after term %d (terms must rise: the term is"
                    + " the lock's fencing token); turns %s",
                t.term(), lastTerm, ordered);
          }
          lastTerm = t.term();
          open = t;
        } else {
          if (open == null || open.latch() != t.latch()) {
            fail(
                "leader election broken: a revoke of a latch that did not lead; turns %s", ordered);
          }
          open = null;
        }
      }
    } finally {
      latches.forEach(LeaderLatch::close);
    }
  }

  @Test
  @DisplayName(
      "21.2 MUST (LOSS_DETECTION; fault hook revoke): a leader whose lock the server forgot is"
          + " told it is revoked, and a latch leads again with a higher term")
  default void rule21_2_aLostLeaseRevokesTheLeader() throws Exception {
    requireFeature(Feature.LOSS_DETECTION, "21.2");
    boolean fencing = client().guarantees().has(Feature.FENCING);
    String name = name("leader-lost");
    List<Turn> turns = new CopyOnWriteArrayList<>();
    List<LeaderLatch> latches = new ArrayList<>();
    try {
      latches.add(recording(client(renewing()), name, 0, turns));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (!latches.get(0).isLeader()) {
        if (System.nanoTime() - deadline > 0) {
          fail("leader election broken: a single latch did not lead within 10 s");
        }
        Thread.sleep(1);
      }
      long firstTerm = latches.get(0).leadership().orElseThrow().term();
      latches.add(recording(client(renewing()), name, 1, turns));
      hook("21.2", () -> faults().revoke(name));
      long bound =
          limits()
              .lease()
              .plus(limits().expirySlack())
              .plus(limits().tolerance())
              .plus(limits().tolerance())
              .toNanos();
      long revokedFrom = System.nanoTime();
      while (turns.stream().noneMatch(t -> t.kind().equals("revoked") && t.latch() == 0)) {
        if (System.nanoTime() - revokedFrom > bound) {
          fail(
              "leader election broken: the leader whose lock was revoked was not told (onRevoked)"
                  + " within lease + expiry slack + 2 tolerances (%d ms); turns %s",
              TimeUnit.NANOSECONDS.toMillis(bound), turns);
        }
        Thread.sleep(1);
      }
      // a second election, by either latch (a backend whose revoke deletes the lock's record may
      // hand out the same term again: that is checked below, not taken for nobody leading)
      while (turns.stream().filter(t -> t.kind().equals("elected")).count() < 2) {
        if (System.nanoTime() - revokedFrom > bound + TimeUnit.SECONDS.toNanos(10)) {
          fail("leader election broken: nobody led again after the leader was revoked; %s", turns);
        }
        Thread.sleep(1);
      }
      if (fencing) {
        for (Turn t : turns) {
          if (t.kind().equals("elected") && t.term() < firstTerm) {
            fail(
                "leader election broken: the term after a revoked leader's %d was %d",
                firstTerm, t.term());
          }
        }
      }
    } finally {
      latches.forEach(LeaderLatch::close);
    }
  }

  @Test
  @DisplayName(
      "21.3 MUST: resign() hands the leadership to a waiting latch within the wake-up bound, not at"
          + " the lease's end, and the latch that resigned campaigns again and leads once the"
          + " other closes")
  default void rule21_3_resignHandsOverAndCampaignsAgain() throws Exception {
    String name = name("leader-resign");
    LockOptions longRenewed =
        LockOptions.builder().lease(Duration.ofSeconds(60)).autoRenew(true).build();
    LockClient probe = client();
    boolean fencing = probe.guarantees().has(Feature.FENCING);
    boolean notified = probe.guarantees().has(Feature.NOTIFIED_WAKEUP);
    Duration recheck = notified ? Duration.ofSeconds(30) : null;
    Duration handOver = limits().wakeUp().plus(limits().tolerance()).plus(limits().tolerance());
    if (!notified) {
      handOver = handOver.plus(probe.config().recheck());
    }
    long bound = handOver.toNanos();
    List<Turn> turns = new CopyOnWriteArrayList<>();
    List<LeaderLatch> latches = new ArrayList<>();
    try {
      for (int i = 0; i < 2; i++) {
        latches.add(recording(client(longRenewed, recheck), name, i, turns));
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      int first;
      while ((first = leader(latches)) < 0) {
        if (System.nanoTime() - deadline > 0) {
          fail("leader election broken: no latch of two led within 10 s");
        }
        Thread.sleep(1);
      }
      settle(latches, first);
      long firstTerm = latches.get(first).leadership().orElseThrow().term();
      int second = 1 - first;
      latches.get(first).resign();
      long resignedAt = System.nanoTime();
      while (leader(latches) != second) {
        if (System.nanoTime() - resignedAt > bound) {
          fail(
              "leader election broken: after the leader resigned, the waiting latch did not lead"
                  + " within %d ms (wake-up bound + 2 tolerances%s; leases are 60 s): the"
                  + " hand-over waited, for a poll or for the lease; turns %s",
              TimeUnit.NANOSECONDS.toMillis(bound),
              notified ? "" : " + the recheck interval",
              turns);
        }
        Thread.sleep(1);
      }
      long secondTerm = latches.get(second).leadership().orElseThrow().term();
      if (fencing && secondTerm <= firstTerm) {
        fail(
            "leader election broken: the term after a resignation, %d, is not above the resigned"
                + " leader's %d",
            secondTerm, firstTerm);
      }
      latches.get(second).close();
      long closedAt = System.nanoTime();
      // the resigned latch may still stand back (at most a second where waiters are woken; the
      // recheck interval, already in the bound, where they poll) before it campaigns again
      long again = bound + (notified ? TimeUnit.SECONDS.toNanos(1) : 0);
      while (leader(latches) != first) {
        if (System.nanoTime() - closedAt > again) {
          fail(
              "leader election broken: the latch that resigned did not lead again within %d ms"
                  + " of the other latch's close: resign() must campaign again; turns %s",
              TimeUnit.NANOSECONDS.toMillis(again), turns);
        }
        Thread.sleep(1);
      }
      if (fencing && latches.get(first).leadership().orElseThrow().term() <= secondTerm) {
        fail("leader election broken: the third term is not above the second, %d", secondTerm);
      }
    } finally {
      latches.forEach(LeaderLatch::close);
    }
  }
}
