package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 14: loss detection, as tests: the rules of this group in {@code RULES.md}. The kit's
 * {@code @Nested} class {@link LockCompatibilityKit.LossDetection} runs them against the backend
 * under test. Every rule here needs {@link Feature#LOSS_DETECTION}: without it each is skipped with
 * that reason.
 */
@RequiresFeature(Feature.LOSS_DETECTION)
interface LossDetectionRules extends KitRules {
  @Test
  @DisplayName("14.1 MUST: a lease that runs out without renewal signals lost() with EXPIRED")
  default void rule14_1_expiryIsSignalled() throws Exception {
    Lease lease = client(expiring()).lock(name("expiry-signal")).acquire(Duration.ofSeconds(10));
    LeaseLostException loss =
        lease
            .lost()
            .toCompletableFuture()
            .get(limits().lease().plus(limits().tolerance()).toMillis(), TimeUnit.MILLISECONDS);
    assertThat(loss.reason())
        .as("loss detection broken: the reason an unrenewed lease was lost")
        .isEqualTo(LeaseLostException.Reason.EXPIRED);
    assertThat(lease.isValid())
        .as("loss detection broken: isValid() of an expired lease")
        .isFalse();
    assertThat(lease.release())
        .as("loss detection broken: release() of an expired lease")
        .isFalse();
  }

  @Test
  @DisplayName(
      "14.2 MUST: when the server forgets a renewed lock, the holder is told within lease +"
          + " expiry slack + tolerance")
  default void rule14_2_revokedLockIsSignalled() throws Exception {
    String name = name("revoked");
    Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
    hook("14.2", () -> faults().revoke(name));
    LeaseLostException loss =
        awaitLossAfterRevoke(
            lease,
            "loss detection broken: a revoked lock was not reported lost within lease + expiry"
                + " slack + tolerance");
    assertThat(loss.lockName())
        .as("loss detection broken: the lost lease's lock name")
        .isEqualTo(name);
    assertThat(lease.isValid()).as("loss detection broken: isValid() of a revoked lease").isFalse();
    assertThat(lease.release()).as("loss detection broken: release() of a revoked lease").isFalse();
  }

  @Test
  @DisplayName(
      "14.3 MUST: a lease taken just before the server became unreachable is reported lost within"
          + " lease + expiry slack + tolerance")
  default void rule14_3_unreachableServerIsSignalled() throws Exception {
    Lease lease = client().lock(name("unreachable")).acquire(Duration.ofSeconds(10));
    hook("14.3", () -> faults().pauseServer());
    long paused = System.nanoTime();
    try {
      LeaseLostException loss =
          lease
              .lost()
              .toCompletableFuture()
              .get(
                  limits()
                      .lease()
                      .plus(limits().expirySlack())
                      .plus(limits().tolerance())
                      .toMillis(),
                  TimeUnit.MILLISECONDS);
      assertThat(loss.reason())
          .as("loss detection broken: the reason a lease was lost to an unreachable server")
          .isIn(LeaseLostException.Reason.RENEWAL_FAILED, LeaseLostException.Reason.SESSION_LOST);
      assertThat(lease.isValid())
          .as("loss detection broken: isValid() of a lease lost to an unreachable server")
          .isFalse();
    } catch (TimeoutException e) {
      throw new AssertionError(
          "loss detection broken: the server was unreachable for "
              + ms(System.nanoTime() - paused)
              + " ms from just after the grant and the lease was not reported lost (a"
              + " session-held grant needs a bound from the start: Poll.grantedForSession(token,"
              + " validUntilNanos, state))");
    } finally {
      faults().resumeServer();
    }
  }
}
