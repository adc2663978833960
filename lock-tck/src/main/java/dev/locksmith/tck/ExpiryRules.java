package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.spi.Abandonable;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 3: expiry, as tests: the rules of this group in {@code RULES.md}. The kit's {@code @Nested}
 * class {@link LockCompatibilityKit.Expiry} runs them against the backend under test.
 */
interface ExpiryRules extends KitRules {
  @Test
  @DisplayName(
      "3.1 MUST: without renewal, a lease never released frees the lock within lease + expiry"
          + " slack + tolerance")
  default void rule3_1_unrenewedLeaseExpires() throws Exception {
    String name = name("unrenewed");
    Lease lease = client(expiring()).lock(name).acquire(Duration.ofSeconds(10));
    long start = System.nanoTime();
    Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
    Optional<Lease> next = client().lock(name).tryAcquire(bound.plus(limits().tolerance()));
    long took = System.nanoTime() - start;
    assertThat(next)
        .withFailMessage(
            "expiry broken: a lease of %d ms without renewal still held the lock after %d ms",
            limits().lease().toMillis(), ms(took))
        .isPresent();
    assertThat(ms(took))
        .as("expiry broken: ms until the expired lock was acquired")
        .isLessThanOrEqualTo(bound.toMillis());
    assertThat(lease.isValid()).as("expiry broken: isValid() of the expired lease").isFalse();
  }

  @Test
  @DisplayName(
      "3.2 MUST: a client that vanishes without releasing frees its lock within lease + expiry"
          + " slack")
  default void rule3_2_vanishedClientFreesItsLock() throws Exception {
    String name = name("vanished");
    LockClient doomed = client();
    doomed.lock(name).acquire(Duration.ofSeconds(10));
    assertThat(client().lock(name).tryAcquire()).isEmpty();
    long start = System.nanoTime();
    ((Abandonable) doomed).abandon();
    Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
    Optional<Lease> next = client().lock(name).tryAcquire(bound.plus(limits().tolerance()));
    assertThat(next)
        .withFailMessage(
            "expiry broken: a vanished client's lock was still held after %d ms",
            ms(System.nanoTime() - start))
        .isPresent();
    assertThat(ms(System.nanoTime() - start))
        .as("expiry broken: ms until the vanished client's lock was acquired")
        .isLessThanOrEqualTo(bound.toMillis());
  }

  @Test
  @DisplayName(
      "3.3 MUST: a holding process killed with SIGKILL frees its lock within lease + expiry"
          + " slack")
  default void rule3_3_killedProcessFreesItsLock() throws Exception {
    requireFeature(Feature.SHARED_ACROSS_PROCESSES, "3.3");
    String name = name("killed");
    Process child = holdInChild(name);
    String line = childLines().get(child);
    assertThat(client().lock(name).tryAcquire())
        .as("the lock while the child process holds it")
        .isEmpty();
    long start = System.nanoTime();
    child.destroyForcibly(); // SIGKILL: no shutdown hook, no release
    assertThat(child.waitFor(10, TimeUnit.SECONDS)).as("child exited after SIGKILL").isTrue();
    Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
    Optional<Lease> next = client().lock(name).tryAcquire(bound.plus(limits().tolerance()));
    assertThat(next)
        .withFailMessage(
            "expiry broken: the lock of a process killed %d ms ago (%s) is still held",
            ms(System.nanoTime() - start), line)
        .isPresent();
    assertThat(ms(System.nanoTime() - start))
        .as("expiry broken: ms until the killed process's lock was acquired")
        .isLessThanOrEqualTo(bound.toMillis());
    if (guarantees().has(Feature.FENCING)) {
      assertThat(next.get().fencingToken())
          .as("fencing broken: token after the killed holder's " + line)
          .isGreaterThan(Long.parseLong(line.substring(5).trim()));
    }
  }

  @Test
  @DisplayName(
      "3.4 MUST: a lease that is not a whole number of seconds ends when it should: nobody gets"
          + " the lock before, and it is free soon after")
  default void rule3_4_fractionalLeaseEndsOnTime() throws Exception {
    String name = name("fractional");
    Duration lease = limits().lease().multipliedBy(5).dividedBy(4); // 1.25 leases: 1250 ms unscaled
    Duration soon = limits().tolerance().dividedBy(4);
    LockOptions opts = LockOptions.builder().lease(lease).autoRenew(false).build();
    LockClient watcher = client();
    long asked = System.nanoTime();
    Lease held = client(opts).lock(name).acquire(Duration.ofSeconds(10));
    long granted = System.nanoTime();
    Optional<Lease> next =
        watcher.lock(name).tryAcquire(lease.plus(limits().tolerance()).plus(limits().tolerance()));
    long got = System.nanoTime();
    assertThat(next)
        .withFailMessage(
            "expiry broken: a lease of %d ms without renewal still held the lock after %d ms",
            lease.toMillis(), ms(got - granted))
        .isPresent();
    assertThat(ms(got - asked))
        .withFailMessage(
            "expiry broken: another client got the lock %d ms after the holder asked for a lease"
                + " of %d ms: the server ended the lease early (rounded down, such as to whole"
                + " seconds?)",
            ms(got - asked), lease.toMillis())
        .isGreaterThanOrEqualTo(lease.toMillis() - 15);
    assertThat(ms(got - granted))
        .withFailMessage(
            "expiry broken: a lease of %d ms was free only %d ms after it was granted (bound:"
                + " lease + %d ms): the server kept it too long (rounded up, or a lease clock"
                + " that runs late)",
            lease.toMillis(), ms(got - granted), soon.toMillis())
        .isLessThanOrEqualTo(lease.plus(soon).toMillis());
    assertThat(held.isValid()).as("expiry broken: isValid() of the ended lease").isFalse();
  }
}
