package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.spi.Abandonable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 4: renewal, as tests: the rules of this group in {@code RULES.md}. The kit's {@code @Nested}
 * class {@link LockCompatibilityKit.Renewal} runs them against the backend under test. Every rule
 * here needs {@link Feature#RENEWAL}: without it each is skipped with that reason.
 */
@RequiresFeature(Feature.RENEWAL)
interface RenewalRules extends KitRules {
  @Test
  @DisplayName(
      "4.1 MUST: auto-renew holds a lock for 3 leases and more; no other acquirer succeeds"
          + " meanwhile")
  default void rule4_1_autoRenewHoldsBeyondTheLease() throws Exception {
    String name = name("renewed");
    Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
    long holdFor = limits().lease().multipliedBy(3).plus(limits().lease().dividedBy(2)).toNanos();
    long start = System.nanoTime();
    Optional<Lease> intruder = client().lock(name).tryAcquire(Duration.ofNanos(holdFor));
    assertThat(intruder)
        .withFailMessage(
            "renewal broken: another client acquired a renewed lock after %d ms (lease %d ms)",
            ms(System.nanoTime() - start), limits().lease().toMillis())
        .isEmpty();
    assertThat(lease.isValid()).as("isValid() after 3.5 leases of renewal").isTrue();
    assertThat(lease.release()).as("release() after renewals").isTrue();
  }

  @Test
  @DisplayName("4.2 MUST: a waiter blocked on a renewed lock gets it promptly once it is released")
  default void rule4_2_renewedLockReleasesCleanly() throws Exception {
    String name = name("renewed-release");
    Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
    DistributedLock other = client().lock(name);
    CompletableFuture<Lease> waiter = other.acquireAsync(Duration.ofSeconds(60));
    Thread.sleep(limits().lease().multipliedBy(3).dividedBy(2).toMillis()); // let renewals happen
    assertThat(waiter)
        .withFailMessage("renewal broken: a waiter got the lock while it was renewed")
        .isNotDone();
    long released = System.nanoTime();
    assertThat(lease.release()).isTrue();
    Lease next =
        waiter.get(
            limits().tolerance().toMillis() + limits().lease().toMillis(), TimeUnit.MILLISECONDS);
    assertThat(ms(System.nanoTime() - released))
        .as("ms from release to the waiter's grant")
        .isLessThanOrEqualTo(limits().tolerance().toMillis() + limits().lease().toMillis());
    assertThat(next.release()).isTrue();
  }

  @Test
  @DisplayName(
      "4.3 MUST: a renewal extends by the lease: a holder that vanishes after renewing frees the"
          + " lock within lease + expiry slack")
  default void rule4_3_renewalExtendsByTheLease() throws Exception {
    String name = name("renew-amount");
    LockClient doomed = client();
    Lease lease = doomed.lock(name).acquire(Duration.ofSeconds(10));
    Thread.sleep(limits().lease().multipliedBy(5).dividedBy(2).toMillis()); // several renewals
    assertThat(lease.isValid())
        .as("renewal broken: isValid() after 2.5 leases of renewal")
        .isTrue();
    ((Abandonable) doomed).abandon();
    long start = System.nanoTime();
    Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
    Optional<Lease> next = client().lock(name).tryAcquire(bound.plus(limits().tolerance()));
    long took = ms(System.nanoTime() - start);
    assertThat(next.isPresent() && took <= bound.toMillis())
        .withFailMessage(
            "renewal broken: a holder that vanished after renewing still held the lock %d ms"
                + " later (bound: lease + expiry slack + tolerance = %d ms): a renewal must"
                + " extend the lease by the lease time, counted from the renewal (a unit"
                + " mix-up?)",
            took, bound.toMillis())
        .isTrue();
  }

  @Test
  @DisplayName(
      "4.4 MUST: a renewal finds the owner changed: the lease is lost as TAKEN (SESSION_LOST if"
          + " the revoke ended its session), and the new holder's lease is not extended")
  default void rule4_4_renewalOfATakenOverLeaseIsLost() throws Exception {
    String name = name("renew-taken");
    LockClient c = client();
    Lease first = c.lock(name).acquire(Duration.ofSeconds(10));
    hook("4.4", () -> faults().revoke(name));
    // another lease, of the same client even, takes the lock over: only a per-lease owner check
    // tells them apart
    Lease second =
        c.lock(name, expiring()).acquireAsync(Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
    Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
    LeaseLostException loss;
    try {
      loss = first.lost().toCompletableFuture().get(bound.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new AssertionError(
          "renewal broken: a renewed lease whose lock another lease (of the same client) took"
              + " over was not reported lost within "
              + bound.toMillis()
              + " ms: a renewal must check the owner per lease and answer lost");
    }
    assertThat(loss.reason())
        .withFailMessage(
            "renewal broken: a lease another owner took over was reported lost with %s, "
                + "not TAKEN%s: a renewal that finds another owner must answer lost, not retry",
            loss.reason(),
            revokedAllowed(name, first).size() > 1
                ? " (nor SESSION_LOST, as a session grant whose session the revoke ended may be)"
                : "")
        .isIn(revokedAllowed(name, first));
    long start = System.nanoTime();
    Optional<Lease> next =
        client()
            .lock(name)
            .tryAcquire(limits().lease().plus(limits().tolerance()).plus(limits().tolerance()));
    assertThat(next)
        .withFailMessage(
            "renewal broken: the new holder's lease of %d ms without renewal still held the lock "
                + "after %d ms: the old holder's renewals extended it",
            limits().lease().toMillis(), ms(System.nanoTime() - start))
        .isPresent();
    assertThat(second.isValid()).as("the new holder's lease after its end").isFalse();
  }

  @Test
  @DisplayName(
      "4.5 MUST: a batch of renewals with one lease taken over reports exactly that lease lost"
          + " (and the leases of its session, if the revoke ended it)")
  default void rule4_5_batchedRenewalAttributesOutcomes() throws Exception {
    String base = name("renew-batch");
    LockClient c = client();
    List<Lease> leases = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      leases.add(c.lock(base + "/" + i).acquire(Duration.ofSeconds(10)));
    }
    int victim = 7;
    hook("4.5", () -> faults().revoke(base + "/" + victim));
    Lease taker = client(longLease()).lock(base + "/" + victim).acquire(Duration.ofSeconds(10));
    Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
    try {
      leases.get(victim).lost().toCompletableFuture().get(bound.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new AssertionError(
          "renewal broken: lease "
              + victim
              + " of 20, taken over by another client, was not reported "
              + "lost within "
              + bound.toMillis()
              + " ms while the client renewed all 20 together; lost now: "
              + lostOnes(leases));
    }
    Thread.sleep(limits().lease().toMillis()); // more batches of renewals
    List<Integer> lost = lostOnes(leases);
    LeaseLostException victimLoss = leases.get(victim).lost().toCompletableFuture().getNow(null);
    assertThat(victimLoss.reason())
        .withFailMessage(
            "renewal broken: lease %d of 20, taken over by another client, was reported lost with"
                + " %s: a renewal that finds another owner must answer lost (TAKEN), not retry",
            victim, victimLoss.reason())
        .isIn(revokedAllowed(base + "/" + victim, leases.get(victim)));
    // a revoke that ended the victim's session (FaultHooks.revoke) takes every lease of that
    // session with it: those may be
    // lost too, as SESSION_LOST, if their locks really were freed; any other loss is
    // misattributed
    List<Integer> wrong = new ArrayList<>();
    for (int i : lost) {
      LeaseLostException loss = leases.get(i).lost().toCompletableFuture().getNow(null);
      boolean sameSession =
          victimLoss.reason() == LeaseLostException.Reason.SESSION_LOST
              && loss.reason() == LeaseLostException.Reason.SESSION_LOST
              && probe().sessionGrant(base + "/" + i, leases.get(i).fencingToken());
      if (i != victim && !sameSession) {
        wrong.add(i);
      }
    }
    assertThat(wrong)
        .withFailMessage(
            "renewal broken: only lease %d of 20 was taken over, but the leases reported lost are"
                + " %s: the outcomes of a batched renewal were attributed to the wrong leases",
            victim, lost)
        .isEmpty();
    LockClient other = client();
    for (int i = 0; i < 20; i++) {
      if (i == victim) {
        continue;
      }
      Optional<Lease> intruder = other.lock(base + "/" + i).tryAcquire();
      if (lost.contains(i)) {
        intruder.ifPresent(Lease::release);
        assertThat(intruder)
            .withFailMessage(
                "renewal broken: lease %d of 20 was reported lost (SESSION_LOST, with lease %d's"
                    + " session) but its lock was still held: the session's end was attributed to"
                    + " a lease it did not hold",
                i, victim)
            .isPresent();
      } else {
        assertThat(intruder)
            .withFailMessage(
                "renewal broken: lease %d of 20 was not renewed (another client took its lock) "
                    + "while lease %d was taken over",
                i, victim)
            .isEmpty();
      }
    }
    assertThat(taker.release()).isTrue();
  }
}
