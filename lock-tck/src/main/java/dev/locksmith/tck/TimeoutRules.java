package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockTimeoutException;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 6: timeouts, as tests: the rules of this group in {@code RULES.md}. The kit's
 * {@code @Nested} class {@link LockCompatibilityKit.Timeouts} runs them against the backend under
 * test.
 */
interface TimeoutRules extends KitRules {
  @Test
  @DisplayName("6.1 MUST: tryAcquire() of a held lock returns empty without waiting")
  default void rule6_1_tryAcquireDoesNotWait() throws Exception {
    String name = name("try");
    client().lock(name).acquire(Duration.ofSeconds(10));
    long start = System.nanoTime();
    assertThat(client().lock(name).tryAcquire()).isEmpty();
    assertThat(ms(System.nanoTime() - start))
        .as("ms tryAcquire() took")
        .isLessThanOrEqualTo(limits().tolerance().toMillis());
  }

  @Test
  @DisplayName("6.2 MUST: tryAcquire(d) of a held lock returns empty after d, within d + tolerance")
  default void rule6_2_tryAcquireWithTimeoutKeepsTime() throws Exception {
    String name = name("try-timeout");
    client().lock(name).acquire(Duration.ofSeconds(10));
    Duration d = Duration.ofMillis(300);
    long start = System.nanoTime();
    assertThat(client().lock(name).tryAcquire(d)).isEmpty();
    long took = ms(System.nanoTime() - start);
    assertThat(took)
        .as("ms tryAcquire(300ms) took")
        .isGreaterThanOrEqualTo(d.toMillis() - 5)
        .isLessThanOrEqualTo(d.plus(limits().tolerance()).toMillis());
  }

  @Test
  @DisplayName("6.3 MUST: acquire(d) of a held lock throws LockTimeoutException naming the lock")
  default void rule6_3_acquireWithTimeoutThrows() throws Exception {
    String name = name("acquire-timeout");
    client().lock(name).acquire(Duration.ofSeconds(10));
    DistributedLock lock = client().lock(name);
    assertThatThrownBy(() -> lock.acquire(Duration.ofMillis(100)))
        .isInstanceOf(LockTimeoutException.class)
        .hasMessageContaining(name);
  }

  @Test
  @DisplayName(
      "6.4 MUST: a waiter that timed out leaves nothing behind: the next acquirer gets the lock"
          + " at once")
  default void rule6_4_timedOutWaiterLeavesNothing() throws Exception {
    String name = name("timeout-leftovers");
    Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
    LockClient waiters = client();
    for (int i = 0; i < 3; i++) {
      assertThat(waiters.lock(name).tryAcquire(Duration.ofMillis(50))).isEmpty();
    }
    assertThat(lease.release()).isTrue();
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage(
            "a waiter that timed out left something behind: the free lock could not be acquired"
                + " at once")
        .isPresent();
  }
}
