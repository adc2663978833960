package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import java.time.Duration;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 2: ownership, as tests: the rules of this group in {@code RULES.md}. The kit's
 * {@code @Nested} class {@link LockCompatibilityKit.Ownership} runs them against the backend under
 * test.
 */
interface OwnershipRules extends KitRules {
  @Test
  @DisplayName(
      "2.1 MUST: a release after the lease expired reports false and leaves the new holder's lock"
          + " held")
  default void rule2_1_releaseAfterExpiryNeverFreesTheNewHolder() throws Exception {
    String name = name("expired-release");
    LockClient a = client(expiring());
    LockClient b = client();
    Lease stale = a.lock(name).acquire(Duration.ofSeconds(10));
    Lease fresh =
        b.lock(name)
            .acquire(limits().lease().plus(limits().expirySlack()).plus(limits().tolerance()));
    assertThat(stale.release())
        .as("release() of a lease that expired and was taken over")
        .isFalse();
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage("ownership broken: releasing an expired lease freed the new holder's lock")
        .isEmpty();
    assertThat(fresh.isValid()).as("the new holder's lease").isTrue();
    assertThat(fresh.release()).as("the new holder's release").isTrue();
  }

  @Test
  @DisplayName(
      "2.2 MUST: releasing twice is harmless: true, then false, and a later holder keeps its"
          + " lock")
  default void rule2_2_doubleReleaseIsHarmless() throws Exception {
    String name = name("double-release");
    LockClient a = client();
    LockClient b = client();
    Lease first = a.lock(name).acquire(Duration.ofSeconds(10));
    assertThat(first.release()).as("first release").isTrue();
    Lease second = b.lock(name).acquire(Duration.ofSeconds(10));
    assertThat(first.release()).as("second release of the same lease").isFalse();
    first.close();
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage("ownership broken: releasing a lease again freed the next holder's lock")
        .isEmpty();
    assertThat(second.release()).isTrue();
  }

  @Test
  @DisplayName(
      "2.3 MUST: unlock() of the Lock view by a thread that does not hold it throws"
          + " IllegalMonitorStateException and frees nothing")
  default void rule2_3_unlockByAnotherThreadFails() throws Exception {
    String name = name("foreign-unlock");
    DistributedLock lock = client().lock(name);
    Lock view = lock.asLock();
    assertThat(view.tryLock(10, TimeUnit.SECONDS)).isTrue();
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    Thread other =
        new Thread(
            () -> {
              try {
                view.unlock();
              } catch (Throwable e) {
                thrown.set(e);
              }
            });
    other.start();
    other.join();
    assertThat(thrown.get())
        .as("unlock() by a thread that does not hold the lock")
        .isInstanceOf(IllegalMonitorStateException.class);
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage("a foreign unlock() freed the lock")
        .isEmpty();
    view.unlock();
    assertThat(client().lock(name).tryAcquire()).as("after the owner's unlock()").isPresent();
  }

  @Test
  @DisplayName("2.4 MUST: closing another client leaves our lock held")
  default void rule2_4_anotherClientCannotFreeOurLock() throws Exception {
    String name = name("other-client");
    Lease mine = client().lock(name).acquire(Duration.ofSeconds(10));
    LockClient other = client();
    assertThat(other.lock(name).tryAcquire()).isEmpty();
    other.close();
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage("closing another client freed our lock")
        .isEmpty();
    assertThat(mine.release()).isTrue();
  }

  @Test
  @DisplayName(
      "2.5 MUST: a holder whose lock the server gave away meanwhile cannot free the new holder's"
          + " lock")
  default void rule2_5_releaseAfterTakeoverIsOwnerChecked() throws Exception {
    String name = name("taken-over");
    // a long lease without renewal: the client believes it holds the lock throughout,
    // so its release reaches the server and only the server's owner check protects the new holder
    Lease stale = client(longLease()).lock(name).acquire(Duration.ofSeconds(10));
    hook("2.5", () -> faults().revoke(name));
    Lease fresh = client().lock(name).acquire(Duration.ofSeconds(10));
    assertThat(stale.release())
        .withFailMessage(
            "ownership broken: release() by a holder whose lock was taken over reported true")
        .isFalse();
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage(
            "ownership broken: a release by the previous holder freed the new holder's lock")
        .isEmpty();
    assertThat(fresh.release()).as("the new holder's release").isTrue();
  }

  @Test
  @DisplayName(
      "2.6 MUST: a release after the server forgot the lock, with no new holder, reports false")
  default void rule2_6_releaseOfAForgottenLockIsFalse() throws Exception {
    String name = name("forgotten");
    Lease stale = client(longLease()).lock(name).acquire(Duration.ofSeconds(10));
    hook("2.6", () -> faults().revoke(name));
    assertThat(stale.release())
        .withFailMessage(
            "ownership broken: release() reported true for a lock the server no longer held for"
                + " this lease (revoked, nobody else holding it): release must say whether this"
                + " lease still held the lock")
        .isFalse();
  }

  @Test
  @DisplayName(
      "2.7 MUST: ownership is per lease, not per client: a revoked lease cannot free the lock"
          + " another lease of its client took")
  default void rule2_7_ownershipIsPerLease() throws Exception {
    String name = name("per-lease");
    LockClient c = client(longLease());
    Lease first = c.lock(name).acquire(Duration.ofSeconds(10));
    hook("2.7", () -> faults().revoke(name));
    // the same client takes the lock again, as a second lease (asynchronously, so not a reentrant
    // holding)
    Lease second = c.lock(name).acquireAsync(Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
    assertThat(first.release())
        .withFailMessage(
            "ownership broken: the revoked lease's release() reported true while another lease of"
                + " the same client held the lock: the owner must be checked per lease (its owner"
                + " id), not per client")
        .isFalse();
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage(
            "ownership broken: the revoked lease's release freed the lock held by another lease"
                + " of the same client: the owner must be checked per lease (its owner id), not"
                + " per client")
        .isEmpty();
    assertThat(second.release())
        .as("ownership broken: release() of the lease that holds the lock")
        .isTrue();
  }

  @Test
  @DisplayName(
      "2.8 MUST: a release is one atomic owner-checked step: racing a takeover, it never frees"
          + " the new holder's lock")
  default void rule2_8_releaseIsAtomicUnderATakeoverRace() throws Exception {
    String base = name("release-race");
    LockClient a = client(longLease());
    LockClient b = client(longLease());
    LockClient c = client();
    // skips the rule if there is no revoke hook; asked of a lock that is held, as every revoke of
    // the kit is
    // (FaultHooks: nothing is promised of a revoke of a lock nobody ever took)
    String check = base + "/hook-check";
    client(longLease()).lock(check).acquire(Duration.ofSeconds(10));
    hook("2.8", () -> faults().revoke(check));
    Random random = new Random();
    for (int trial = 0; trial < 20; trial++) {
      String lockName = base + "/" + trial;
      Lease stale = a.lock(lockName).acquire(Duration.ofSeconds(10));
      CountDownLatch releasing = new CountDownLatch(1);
      long window = Math.max(100_000, 2 * probe().lastReleaseNanos());
      long delay = (long) (random.nextDouble() * window);
      AtomicReference<Lease> taken = new AtomicReference<>();
      AtomicReference<RuntimeException> revokeRefused = new AtomicReference<>();
      probe()
          .onRelease(
              n -> {
                if (n.equals(lockName)) {
                  releasing.countDown();
                }
              });
      Thread racer =
          background(
              "takeover-" + trial,
              () -> {
                releasing.await(5, TimeUnit.SECONDS);
                spin(delay); // somewhere inside the release's round trip
                try {
                  faults().revoke(lockName);
                } catch (RuntimeException e) {
                  // the release may have freed the lock already; FaultHooks lets a revoke of a
                  // free lock refuse
                  revokeRefused.set(e);
                }
                taken.set(b.lock(lockName).tryAcquire(Duration.ofSeconds(5)).orElse(null));
              });
      String released;
      try {
        released = String.valueOf(stale.release());
      } catch (BackendUnavailableException e) {
        // a revoke that ends the holder's session or connection may fail the release on it: the
        // lock went with it
        released = "failed (" + e.getMessage() + ")";
      }
      racer.join(TimeUnit.SECONDS.toMillis(15));
      probe().onRelease(null);
      Lease fresh = taken.get();
      assertThat(fresh)
          .withFailMessage(
              "liveness broken: after a release and a revoke, another client could not take lock"
                  + " '%s'%s",
              lockName,
              revokeRefused.get() == null
                  ? ""
                  : " (the revoke hook threw "
                      + revokeRefused.get()
                      + ": if the lock was still held, the hook did not revoke it)")
          .isNotNull();
      Optional<Lease> intruder = c.lock(lockName).tryAcquire();
      intruder.ifPresent(Lease::release);
      assertThat(intruder)
          .withFailMessage(
              "ownership broken: a release that raced a takeover freed the new holder's lock"
                  + " (trial %d, the takeover %d µs into the release, which returned %s): a"
                  + " release that reads the owner and then deletes in a second step frees"
                  + " whoever took the lock in between; check and delete must be one atomic step",
              trial + 1, delay / 1000, released)
          .isEmpty();
      assertThat(fresh.release()).as("ownership broken: the new holder's release").isTrue();
    }
  }
}
