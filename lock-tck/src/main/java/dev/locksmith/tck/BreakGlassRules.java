package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 22: break-glass ({@code client.breakLock(name, reason)}), as tests: the rules of this group
 * in {@code RULES.md}. The kit's {@code @Nested} class {@link LockCompatibilityKit.BreakGlass} runs
 * them against the backend under test, where it declares {@link Feature#BREAK_GLASS}.
 */
interface BreakGlassRules extends KitRules {

  @Test
  @DisplayName(
      "22.1 MUST: breaking a held lock hands it to the waiter within the wake-up bound, with a"
          + " higher fencing token, and the broken holder is told")
  default void rule22_1_breakingIsSafe() throws Exception {
    requireFeature(Feature.BREAK_GLASS, "22.1");
    String name = name("break");
    LockClient holder = client();
    LockClient operator = client();
    // a backend that wakes waiters on a release gets a waiter that polls only every 30 s: a break
    // that wakes nobody is caught; one that polls keeps its own recheck, and the bound has it
    boolean notified = operator.guarantees().has(Feature.NOTIFIED_WAKEUP);
    // the next holder's lease is not what this rule is about: long and unrenewed, so that a
    // loaded machine's late renewal cannot end it before its release (a clean run found its
    // release false once so)
    LockClient waiterClient = client(longLease(), notified ? Duration.ofSeconds(30) : null);
    Duration bound = limits().wakeUp().plus(limits().tolerance());
    if (!notified) {
      bound = bound.plus(operator.config().recheck());
    }
    // a lease far longer than the bound, renewed: a waiter that polls when the lease would end
    // is caught, and the holder learns of the break at its next renewal
    Duration holderLease = limits().tolerance().multipliedBy(10);
    Lease lease =
        holder
            .lock(name, LockOptions.builder().lease(holderLease).autoRenew(true).build())
            .acquire(Duration.ofSeconds(10));
    long token = lease.fencingToken();
    AtomicReference<Lease> next = new AtomicReference<>();
    AtomicLong grantedAt = new AtomicLong();
    int before = probe().polls(name);
    Thread waiter =
        background(
            "waiter",
            () -> {
              Optional<Lease> got = waiterClient.lock(name).tryAcquire(Duration.ofSeconds(60));
              grantedAt.set(System.nanoTime());
              next.set(got.orElse(null));
            });
    awaitQueued(waiter, name, before, "the waiter blocks behind the holder");
    long brokeAt = System.nanoTime();
    assertThat(operator.breakLock(name, "kit rule 22.1: the holder is stuck"))
        .withFailMessage("break-glass broken: breakLock() of a held lock answered false")
        .isTrue();
    waiter.join(TimeUnit.SECONDS.toMillis(70));
    assertThat(next.get())
        .withFailMessage("break-glass broken: the waiter never got the broken lock")
        .isNotNull();
    long took = ms(grantedAt.get() - brokeAt);
    assertThat(took)
        .withFailMessage(
            "break-glass broken: the waiter got the broken lock %d ms after breakLock() (at most"
                + " %d ms): a break must wake the waiters as a release does",
            took, bound.toMillis())
        .isLessThanOrEqualTo(bound.toMillis());
    if (guarantees().has(Feature.FENCING)) {
      assertThat(next.get().fencingToken())
          .withFailMessage(
              "break-glass broken: the next holder's fencing token %d is not above the broken"
                  + " holder's %d: a fence would take the old holder's late writes; keep the fence"
                  + " counter when breaking",
              next.get().fencingToken(), token)
          .isGreaterThan(token);
    }
    if (guarantees().has(Feature.LOSS_DETECTION)) {
      Duration told = holderLease.plus(limits().tolerance());
      try {
        lease.lost().toCompletableFuture().get(told.toMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        throw new AssertionError(
            "break-glass broken: the broken holder was not told: its lost() had not completed "
                + told.toMillis()
                + " ms after the break (its renewal must fail)");
      }
    }
    assertThat(lease.release())
        .withFailMessage("break-glass broken: the broken holder's release() answered true")
        .isFalse();
    assertThat(operator.lock(name).tryAcquire())
        .withFailMessage(
            "break-glass broken: the broken holder's release() freed the next holder's lock")
        .isEmpty();
    assertThat(next.get().release()).isTrue();
  }

  @Test
  @DisplayName(
      "22.2 MUST: breaking a free lock answers false and changes nothing; a held-after-release"
          + " lock can be broken")
  default void rule22_2_breakingAFreeLock() throws Exception {
    requireFeature(Feature.BREAK_GLASS, "22.2");
    String name = name("break-free");
    LockClient c = client();
    assertThat(c.breakLock(name, "kit rule 22.2: never taken"))
        .withFailMessage("break-glass broken: breakLock() of a lock never taken answered true")
        .isFalse();
    Lease first = c.lock(name).acquire(Duration.ofSeconds(10));
    long token = first.fencingToken();
    assertThat(first.release()).isTrue();
    assertThat(c.breakLock(name, "kit rule 22.2: released"))
        .withFailMessage("break-glass broken: breakLock() of a released lock answered true")
        .isFalse();
    try (Lease second = c.lock(name).acquire(Duration.ofSeconds(10))) {
      if (guarantees().has(Feature.FENCING)) {
        assertThat(second.fencingToken())
            .withFailMessage(
                "break-glass broken: after a break of a free lock the next token %d is not above"
                    + " the last holder's %d",
                second.fencingToken(), token)
            .isGreaterThan(token);
      }
    }
    if (guarantees().has(Feature.HOLD_AFTER_RELEASE)) {
      LockOptions unrenewed =
          LockOptions.builder().lease(Duration.ofSeconds(30)).autoRenew(false).build();
      Lease held = c.lock(name, unrenewed).acquire(Duration.ofSeconds(10));
      assertThat(held.releaseAfter(Duration.ofSeconds(30))).isTrue();
      assertThat(c.breakLock(name, "kit rule 22.2: held after release"))
          .withFailMessage(
              "break-glass broken: breakLock() of a lock held after release answered false")
          .isTrue();
      Optional<Lease> got = c.lock(name).tryAcquire(limits().tolerance());
      assertThat(got)
          .withFailMessage(
              "break-glass broken: a lock held after release was still held after its break")
          .isPresent();
      got.get().release();
    }
  }
}
