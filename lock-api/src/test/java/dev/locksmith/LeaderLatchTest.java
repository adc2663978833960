package dev.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.local.LocalLockProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link LeaderLatch} on local:, with leases far longer than any hand-over the tests allow. */
class LeaderLatchTest {
  private final String space = "leader-" + UUID.randomUUID();
  private final List<LockClient> clients = new ArrayList<>();
  private final List<LeaderLatch> latches = new ArrayList<>();

  /** elected or revoked, by which latch, with the term, at when. */
  record Event(String kind, int latch, long term, long at) {}

  private final List<Event> events = new CopyOnWriteArrayList<>();

  private LeaderLatch latch(int index) {
    return latch(index, "30s");
  }

  private LeaderLatch latch(int index, String lease) {
    LockClient c = Locks.connect("local:" + space + "?lease=" + lease);
    clients.add(c);
    LeaderLatch l =
        c.leaderLatch("scheduler")
            .onElected(s -> events.add(new Event("elected", index, s.term(), System.nanoTime())))
            .onRevoked(s -> events.add(new Event("revoked", index, s.term(), System.nanoTime())));
    latches.add(l);
    return l;
  }

  @AfterEach
  void closeAll() {
    latches.forEach(LeaderLatch::close);
    clients.forEach(LockClient::close);
  }

  private int awaitLeader(long withinMillis) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(withinMillis);
    while (System.nanoTime() - deadline < 0) {
      for (int i = 0; i < latches.size(); i++) {
        if (latches.get(i).isLeader()) {
          return i;
        }
      }
      Thread.sleep(2);
    }
    throw new AssertionError("no leader within " + withinMillis + " ms; events " + events);
  }

  @Test
  void oneLeaderAtATimeTermsRiseAndClosingHandsOverWithoutWaitingForTheLease() throws Exception {
    for (int i = 0; i < 3; i++) {
      latch(i).start();
    }
    List<Integer> leaders = new ArrayList<>();
    for (int round = 0; round < 3; round++) {
      int leader = awaitLeader(round == 0 ? 10_000 : 2_000); // the lease is 30 s
      leaders.add(leader);
      assertThat(latches.stream().filter(LeaderLatch::isLeader).count())
          .as("leaders at once")
          .isEqualTo(1);
      latches.get(leader).close();
      assertThat(latches.get(leader).isLeader()).as("a closed latch does not lead").isFalse();
    }
    assertThat(leaders).as("each round a different instance").doesNotHaveDuplicates();
    // each term is revoked before the next is elected, and terms rise
    long lastTerm = 0;
    String open = null;
    for (Event e : events) {
      if (e.kind().equals("elected")) {
        assertThat(open).as("elected while %s still led: %s", open, events).isNull();
        assertThat(e.term()).as("terms rise: %s", events).isGreaterThan(lastTerm);
        lastTerm = e.term();
        open = e.latch() + "@" + e.term();
      } else {
        assertThat(open).isEqualTo(e.latch() + "@" + e.term());
        open = null;
      }
    }
    assertThat(events.stream().filter(e -> e.kind().equals("elected"))).hasSize(3);
  }

  @Test
  void resignHandsOverAtOnceAndTheLatchCampaignsAgain() throws Exception {
    LeaderLatch a = latch(0).start();
    assertThat(a.awaitLeadership(Duration.ofSeconds(10))).isTrue();
    long firstTerm = a.leadership().orElseThrow().term();
    LeaderLatch b = latch(1).start();
    Thread.sleep(100); // b waits for the lock
    long start = System.nanoTime();
    a.resign();
    assertThat(b.awaitLeadership(Duration.ofSeconds(2))).as("b leads after a resigned").isTrue();
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
        .as("hand-over, against a 30 s lease")
        .isLessThan(2_000);
    assertThat(b.leadership().orElseThrow().term()).isGreaterThan(firstTerm);
    assertThat(a.isLeader()).isFalse();
    b.close();
    assertThat(a.awaitLeadership(Duration.ofSeconds(2)))
        .as("a campaigned again after resigning")
        .isTrue();
  }

  @Test
  void aLostLeaseRevokesTheLeaderAndTheNextTermIsHigher() throws Exception {
    // a loss is noticed at the next renewal: a short lease
    LeaderLatch a = latch(0, "1s").start();
    assertThat(a.awaitLeadership(Duration.ofSeconds(10))).isTrue();
    LeaderLatch.Leadership first = a.leadership().orElseThrow();
    LeaderLatch b = latch(1, "1s").start();
    LocalLockProvider.revoke(space, "scheduler");
    assertThat(first.lost().toCompletableFuture().get(10, TimeUnit.SECONDS).reason())
        .isEqualTo(LeaseLostException.Reason.TAKEN);
    int leader = awaitLeader(5_000);
    long next = latches.get(leader).leadership().orElseThrow().term();
    assertThat(next).as("the next term").isGreaterThan(first.term());
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (events.stream().noneMatch(e -> e.kind().equals("revoked") && e.latch() == 0)) {
      assertThat(System.nanoTime() - deadline).as("a told it was revoked").isNegative();
      Thread.sleep(2);
    }
    assertThat(a.isLeader() && b.isLeader()).as("both lead").isFalse();
  }

  @Test
  void aCallbackThatThrowsIsLoggedAndTheLatchGoesOn() throws Exception {
    LockClient c = Locks.connect("local:" + space + "?lease=30s");
    clients.add(c);
    LeaderLatch l =
        c.leaderLatch("throws")
            .onElected(
                s -> {
                  throw new IllegalStateException("boom");
                });
    latches.add(l);
    l.start();
    assertThat(l.awaitLeadership(Duration.ofSeconds(10))).isTrue();
    l.resign();
    assertThat(l.awaitLeadership(Duration.ofSeconds(10))).as("elected again").isTrue();
  }

  @Test
  void closingStopsTheThreadAndFreesTheLock() throws Exception {
    LeaderLatch a = latch(0).start();
    assertThat(a.awaitLeadership(Duration.ofSeconds(10))).isTrue();
    a.close();
    a.close(); // idempotent
    assertThat(LocalLockProvider.isHeld(space, "scheduler")).as("released on close").isFalse();
    LeaderLatch waiting = latch(1);
    try (Lease held = clients.get(1).lock("scheduler").acquire(Duration.ofSeconds(5))) {
      waiting.start();
      Thread.sleep(50);
      long start = System.nanoTime();
      waiting.close(); // ends its wait for the lock at once
      assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(5_000);
      assertThat(waiting.isLeader()).isFalse();
    }
  }

  @Test
  void badUseIsRefusedNamingWhat() {
    LockClient c = Locks.connect("local:" + space);
    clients.add(c);
    assertThatThrownBy(() -> c.leaderLatch(null)).hasMessageContaining("`name`");
    assertThatThrownBy(() -> c.leaderLatch("")).isInstanceOf(IllegalArgumentException.class);
    LeaderLatch l = c.leaderLatch("x");
    latches.add(l);
    assertThatThrownBy(() -> l.onElected(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`action`");
    l.start();
    assertThatThrownBy(l::start).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> l.onRevoked(s -> {}))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("after it started");
    assertThatThrownBy(() -> l.awaitLeadership(null)).hasMessageContaining("`timeout`");
    assertThatThrownBy(() -> l.awaitLeadership(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`timeout` was '")
        .hasMessageContaining("zero (one attempt) or a positive duration");
    LeaderLatch closed = c.leaderLatch("y");
    closed.close();
    assertThatThrownBy(closed::start).hasMessageContaining("was closed");
  }

  @Test
  void anEnormousWaitIsForEverNotAnOverflow() throws Exception {
    LeaderLatch a = latch(0).start();
    assertThat(a.awaitLeadership(Duration.ofDays(999_999_999_999L))).isTrue();
    LeaderLatch b = latch(1).start();
    long start = System.nanoTime();
    assertThat(b.awaitLeadership(Duration.ZERO)).as("zero looks once").isFalse();
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(1_000);
  }

  @Test
  void resignAndCloseFromACallbackDoNotWaitForThemselves() throws Exception {
    LockClient c = Locks.connect("local:" + space + "?lease=30s");
    clients.add(c);
    List<String> seen = new CopyOnWriteArrayList<>();
    LeaderLatch[] self = new LeaderLatch[1];
    self[0] =
        c.leaderLatch("self")
            .onElected(
                s -> {
                  seen.add("elected " + s.term());
                  if (seen.size() == 1) {
                    try {
                      self[0].resign(); // steps down once this returns
                    } catch (InterruptedException e) {
                      throw new IllegalStateException(e);
                    }
                  } else {
                    self[0].close(); // ends once this returns
                  }
                })
            .onRevoked(s -> seen.add("revoked " + s.term()));
    latches.add(self[0]);
    self[0].start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (seen.size() < 4) {
      assertThat(System.nanoTime() - deadline).as("callbacks so far: %s", seen).isNegative();
      Thread.sleep(2);
    }
    assertThat(seen).hasSize(4);
    assertThat(seen.get(0)).startsWith("elected");
    assertThat(seen.get(1)).startsWith("revoked");
    assertThat(seen.get(2)).startsWith("elected");
    assertThat(seen.get(3)).startsWith("revoked");
    Thread.sleep(50);
    assertThat(LocalLockProvider.isHeld(space, "self")).as("released after close").isFalse();
  }
}
