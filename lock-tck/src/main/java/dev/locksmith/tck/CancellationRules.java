package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.Lease;
import dev.locksmith.LockTimeoutException;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 8: cancellation and asynchronous acquire, as tests: the rules of this group in {@code
 * RULES.md}. The kit's {@code @Nested} class {@link LockCompatibilityKit.Cancellation} runs them
 * against the backend under test.
 */
interface CancellationRules extends KitRules {
  @Test
  @DisplayName(
      "8.1 MUST: cancelling acquireAsync withdraws the waiter; the next acquirer gets the lock at"
          + " once")
  default void rule8_1_cancelWithdraws() throws Exception {
    String name = name("cancelled");
    Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
    CompletableFuture<Lease> future = client().lock(name).acquireAsync(Duration.ofSeconds(60));
    Thread.sleep(50); // let it start waiting: cancellation must also work mid-wait
    assertThat(future.cancel(true)).isTrue();
    assertThatThrownBy(future::join).isInstanceOf(CancellationException.class);
    assertThat(lease.release()).isTrue();
    // the cancelled waiter withdraws on its own thread, so allow it the tolerance, no more
    long start = System.nanoTime();
    assertThat(client().lock(name).tryAcquire(limits().tolerance()))
        .withFailMessage("a cancelled waiter left something behind or took the lock")
        .isPresent();
    assertThat(ms(System.nanoTime() - start))
        .as("ms until the lock was free after the cancelled waiter withdrew")
        .isLessThan(limits().tolerance().toMillis());
  }

  @Test
  @DisplayName(
      "8.2 MUST: acquireAsync completes with a lease on release, and with LockTimeoutException on"
          + " timeout")
  default void rule8_2_asyncCompletes() throws Exception {
    String name = name("async");
    Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
    CompletableFuture<Lease> timesOut = client().lock(name).acquireAsync(Duration.ofMillis(100));
    assertThatThrownBy(() -> timesOut.get(10, TimeUnit.SECONDS))
        .hasCauseInstanceOf(LockTimeoutException.class);
    CompletableFuture<Lease> waits = client().lock(name).acquireAsync(Duration.ofSeconds(30));
    assertThat(lease.release()).isTrue();
    Lease next =
        waits.get(limits().tolerance().plus(limits().lease()).toMillis(), TimeUnit.MILLISECONDS);
    assertThat(next.isValid()).isTrue();
    assertThat(next.release()).isTrue();
  }
}
