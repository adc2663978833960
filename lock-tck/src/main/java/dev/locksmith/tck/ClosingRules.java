package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.LockException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 15: closing, as tests: the rules of this group in {@code RULES.md}. The kit's
 * {@code @Nested} class {@link LockCompatibilityKit.Closing} runs them against the backend under
 * test.
 */
interface ClosingRules extends KitRules {
  @Test
  @DisplayName(
      "15.1 MUST: closing a client releases its locks at once and signals lost() with"
          + " CLIENT_CLOSED")
  default void rule15_1_closeReleases() throws Exception {
    String name = name("close-releases");
    LockClient c = client();
    Lease lease = c.lock(name).acquire(Duration.ofSeconds(10));
    c.close();
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage("closing broken: a closed client's lock was still held")
        .isPresent();
    LeaseLostException loss = lease.lost().toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertThat(loss.reason())
        .as("closing broken: the reason a closed client's lease ended")
        .isEqualTo(LeaseLostException.Reason.CLIENT_CLOSED);
    assertThat(lease.release()).as("closing broken: release() after close").isFalse();
  }

  @Test
  @DisplayName(
      "15.2 MUST: a waiter blocked in acquire() fails with LockException when its client closes")
  default void rule15_2_closeStopsWaiters() throws Exception {
    String name = name("close-waiters");
    client().lock(name).acquire(Duration.ofSeconds(10));
    LockClient c = client();
    AtomicReference<Throwable> outcome = new AtomicReference<>();
    Thread waiter =
        new Thread(
            () -> {
              try {
                c.lock(name).acquire();
              } catch (Throwable e) {
                outcome.set(e);
              }
            });
    int polled = probe().polls(name);
    waiter.start();
    awaitQueued(waiter, name, polled, "the waiter blocks");
    c.close();
    waiter.join(TimeUnit.SECONDS.toMillis(10));
    assertThat(waiter.isAlive()).as("waiter still blocked after its client closed").isFalse();
    assertThat(outcome.get()).isInstanceOf(LockException.class).hasMessageContaining("closed");
  }
}
