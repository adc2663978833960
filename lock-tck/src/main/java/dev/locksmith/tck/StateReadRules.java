package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Holder;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.LockState;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 16: state reads, as tests: the rules of this group in {@code RULES.md}. The kit's
 * {@code @Nested} class {@link LockCompatibilityKit.StateReads} runs them against the backend under
 * test.
 */
interface StateReadRules extends KitRules {
  @Test
  @DisplayName(
      "16.1 MUST: state() of a lock never taken, and of a released lock, is free; of a held lock,"
          + " held with the holder's token")
  default void rule16_1_stateFollowsTheHolder() throws Exception {
    requireFeature(Feature.STATE_READS, "16.1");
    String name = name("state");
    LockClient holder = clientOf("kit-holder");
    LockClient observer = client();
    DistributedLock seen = observer.lock(name);
    assertThat(seen.state())
        .withFailMessage("state reads broken: a lock never taken read as %s", seen.state())
        .isEqualTo(LockState.free());
    Lease lease = holder.lock(name).acquire(Duration.ofSeconds(10));
    LockState held = seen.state();
    assertThat(held.isKnown() && held.isHeld())
        .withFailMessage("state reads broken: a held lock read as %s", held)
        .isTrue();
    if (held.fencingToken().isPresent()) {
      assertThat(held.fencingToken().getAsLong())
          .withFailMessage(
              "state reads broken: the holder has token %d but state() read %s",
              lease.fencingToken(), held)
          .isEqualTo(lease.fencingToken());
    }
    held.remaining()
        .ifPresent(
            left ->
                assertThat(left)
                    .as("state reads broken: the rest of a lease of %s", renewing().lease())
                    .isLessThanOrEqualTo(renewing().lease().plus(limits().tolerance())));
    Optional<String> owner = probe().ownerOf(name, lease.fencingToken());
    if (held.holder().isPresent() && owner.isPresent()) {
      assertThat(held.holder().get())
          .withFailMessage(
              "state reads broken: holder() read '%s' but the lock is held by the "
                  + "lease of owner id '%s'",
              held.holder().get(), owner.get())
          .isEqualTo(owner.get());
    }
    if (held.holder().isPresent()) {
      Optional<Holder> who = held.holderIdentity();
      String thread = Thread.currentThread().getName().replaceAll("[^A-Za-z0-9._-]", "_");
      String shownThread = thread.substring(0, Math.min(thread.length(), Holder.MAX_PART));
      assertThat(
              who.isPresent()
                  && who.get().application().equals("kit-holder")
                  && who.get().pid() == ProcessHandle.current().pid()
                  && who.get().thread().equals(shownThread))
          .withFailMessage(
              "state reads broken: holder() read '%s', which does not name the holder"
                  + " (application 'kit-holder', pid %d, thread '%s'): store the owner id the"
                  + " client gave, whole, and return it unchanged",
              held.holder().get(), ProcessHandle.current().pid(), shownThread)
          .isTrue();
    }
    assertThat(lease.release()).isTrue();
    assertThat(seen.state())
        .withFailMessage("state reads broken: a released lock read as %s", seen.state())
        .isEqualTo(LockState.free());
  }

  @Test
  @DisplayName(
      "16.2 MUST: reading the state writes nothing: the next holder's token follows the last"
          + " holder's as if no read happened")
  default void rule16_2_readingTakesNothing() throws Exception {
    requireFeature(Feature.STATE_READS, "16.2");
    String name = name("state-no-write");
    LockClient c = client();
    Lease first = c.lock(name).acquire(Duration.ofSeconds(10));
    long token = first.fencingToken();
    assertThat(first.release()).isTrue();
    for (int i = 0; i < 5; i++) {
      assertThat(c.lock(name).state().isHeld()).isFalse();
    }
    try (Lease second = c.lock(name).acquire(Duration.ofSeconds(10))) {
      assertThat(second.fencingToken()).isGreaterThan(token);
      LockState held = c.lock(name).state();
      assertThat(held.isHeld())
          .withFailMessage("state reads broken: a held lock read as %s", held)
          .isTrue();
    }
  }

  @Test
  @DisplayName("16.4 MUST: the remaining lease a state read reports counts down")
  default void rule16_4_remainingCountsDown() throws Exception {
    requireFeature(Feature.STATE_READS, "16.4");
    String name = name("state-countdown");
    Duration lease = limits().lease().multipliedBy(3);
    Lease held =
        client(LockOptions.builder().lease(lease).autoRenew(false).build())
            .lock(name)
            .acquire(Duration.ofSeconds(10));
    DistributedLock seen = client().lock(name);
    LockState first = seen.state();
    Duration pause = limits().lease().dividedBy(2);
    Thread.sleep(pause.toMillis());
    LockState later = seen.state();
    if (first.remaining().isPresent() && later.remaining().isPresent()) {
      long dropped = first.remaining().get().minus(later.remaining().get()).toMillis();
      assertThat(dropped)
          .withFailMessage(
              "state reads broken: the remaining lease read %s, then %s %d ms later: it must"
                  + " count down",
              first.remaining().get(), later.remaining().get(), pause.toMillis())
          .isGreaterThanOrEqualTo(pause.toMillis() - 100);
    }
    assertThat(held.release()).isTrue();
  }

  @Test
  @DisplayName("16.5 MUST: a lease that ran out without release reads free")
  default void rule16_5_expiredLeaseReadsFree() throws Exception {
    requireFeature(Feature.STATE_READS, "16.5");
    String name = name("state-expired");
    client(expiring()).lock(name).acquire(Duration.ofSeconds(10));
    long start = System.nanoTime();
    DistributedLock seen = client().lock(name);
    Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
    long deadline = start + bound.toNanos();
    LockState state = seen.state();
    while (state.isHeld() && System.nanoTime() - deadline < 0) {
      Thread.sleep(20);
      state = seen.state();
    }
    assertThat(state.isHeld())
        .withFailMessage(
            "state reads broken: a lease of %d ms that ran out without a release still "
                + "read as held after %d ms: %s",
            limits().lease().toMillis(), ms(System.nanoTime() - start), state)
        .isFalse();
  }

  @Test
  @DisplayName(
      "16.6 MUST: at a lease's end a state read agrees with an acquire: held reads with time left"
          + " above zero, free only once an acquire takes the lock")
  default void rule16_6_stateAgreesWithAnAcquireAtTheLeasesEnd() throws Exception {
    requireFeature(Feature.STATE_READS, "16.6");
    String name = name("state-boundary");
    client(expiring()).lock(name).acquire(Duration.ofSeconds(10));
    long start = System.nanoTime();
    LockClient observer = client();
    DistributedLock seen = observer.lock(name);
    long deadline =
        start + limits().lease().plus(limits().expirySlack()).plus(limits().tolerance()).toNanos();
    LockState state = seen.state();
    int reads = 1;
    while (state.isHeld() && System.nanoTime() - deadline < 0) {
      LockState held = state;
      state
          .remaining()
          .ifPresent(
              left ->
                  assertThat(left.isNegative() || left.isZero())
                      .withFailMessage(
                          "state reads broken: %d ms after a lease of %d ms was taken, the lock"
                              + " read as held with %s left: while a lock cannot be taken its"
                              + " remaining lease is the time until it can, above zero (a margin"
                              + " the backend keeps past the expiry belongs in it); read %s",
                          ms(System.nanoTime() - start), limits().lease().toMillis(), left, held)
                      .isFalse());
      // read often only near the end: a lease that reports its rest is slept through until
      // shortly before it
      long nap = state.remaining().map(left -> left.toMillis() - 50).filter(m -> m > 2).orElse(2L);
      Thread.sleep(Math.min(nap, 200));
      state = seen.state();
      reads++;
    }
    if (state.isHeld()) {
      return; // rule 16.5 reports a lease that never reads free
    }
    long freeAt = ms(System.nanoTime() - start);
    Optional<Lease> got = seen.tryAcquire();
    got.ifPresent(Lease::release);
    assertThat(got)
        .withFailMessage(
            "state reads broken: the lock read free %d ms after a lease of %d ms was taken (read"
                + " %d times), but a tryAcquire() right after that read was refused: a state read"
                + " must not say free while an acquire still counts the lease as held (a margin"
                + " past the expiry must be the same for both)",
            freeAt, limits().lease().toMillis(), reads)
        .isPresent();
  }

  @Test
  @DisplayName(
      "16.3 MUST: a backend that does not declare STATE_READS answers unknown, never a guess")
  default void rule16_3_undeclaredMeansUnknown() throws Exception {
    assumeTrue(
        !guarantees().has(Feature.STATE_READS),
        () ->
            "rule 16.3 skipped: the backend declares STATE_READS, which rules 16.1 and 16.2"
                + " check");
    String name = name("state-unknown");
    try (Lease lease = client().lock(name).acquire(Duration.ofSeconds(10))) {
      assertThat(client().lock(name).state()).isEqualTo(LockState.unknown());
    }
  }

  /** Reads the state until {@code count} callers read as waiting, or the tolerance passes. */
  private LockState awaitWaiting(LockClient reader, String name, int count) throws Exception {
    long deadline = System.nanoTime() + limits().tolerance().toNanos();
    LockState s = reader.lock(name).state();
    while ((!s.isHeld() || s.waiting().orElse(-1) != count) && System.nanoTime() < deadline) {
      Thread.sleep(5);
      s = reader.lock(name).state();
    }
    return s;
  }

  @Test
  @DisplayName(
      "16.7 MUST: where state reads count the waiters, the count is the callers waiting: none, then"
          + " two, then one after the other gave up, then none")
  default void rule16_7_waitingCountIsTheCallersWaiting() throws Exception {
    requireFeature(Feature.STATE_READS, "16.7");
    String name = name("state-waiting");
    LockClient reader = client();
    Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
    java.util.concurrent.CompletableFuture<Lease> first = null;
    java.util.concurrent.CompletableFuture<Lease> second = null;
    try {
      LockState alone = reader.lock(name).state();
      assumeTrue(
          alone.waiting().isPresent(),
          () -> "rule 16.7 skipped: the backend's state reads count no waiters (" + alone + ")");
      assertThat(alone.waiting().getAsInt())
          .withFailMessage(
              "waiting count broken: a held lock nobody waits for read %s: the holder is not a"
                  + " waiter",
              alone)
          .isZero();
      first = client().lock(name).acquireAsync(Duration.ofSeconds(60));
      second = client().lock(name).acquireAsync(Duration.ofSeconds(60));
      LockState two = awaitWaiting(reader, name, 2);
      assertThat(two.waiting().orElse(-1))
          .withFailMessage(
              "waiting count broken: two callers waited for %d ms but the state read %s",
              limits().tolerance().toMillis(), two)
          .isEqualTo(2);
      first.cancel(true);
      LockState one = awaitWaiting(reader, name, 1);
      assertThat(one.waiting().orElse(-1))
          .withFailMessage(
              "waiting count broken: one of two waiters gave up %d ms ago but the state read %s: a"
                  + " waiter that gave up must leave the count",
              limits().tolerance().toMillis(), one)
          .isEqualTo(1);
      assertThat(lease.release()).isTrue();
      Lease next = second.get(limits().tolerance().toMillis() * 5, TimeUnit.MILLISECONDS);
      try {
        LockState none = awaitWaiting(reader, name, 0);
        assertThat(none.waiting().orElse(-1))
            .withFailMessage(
                "waiting count broken: the last waiter holds the lock but the state read %s", none)
            .isEqualTo(0);
      } finally {
        next.release();
      }
    } finally {
      lease.release();
      if (first != null) {
        first.cancel(true);
      }
      if (second != null) {
        second.cancel(true);
      }
    }
  }
}
