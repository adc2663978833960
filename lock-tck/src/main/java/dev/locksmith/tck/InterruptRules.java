package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 7: interrupts, as tests: the rules of this group in {@code RULES.md}. The kit's
 * {@code @Nested} class {@link LockCompatibilityKit.Interrupts} runs them against the backend under
 * test.
 */
interface InterruptRules extends KitRules {
  @Test
  @DisplayName(
      "7.1 MUST: an interrupted waiter throws InterruptedException promptly and leaves nothing"
          + " behind")
  default void rule7_1_interruptedWaiterWithdraws() throws Exception {
    String name = name("interrupted");
    Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
    DistributedLock lock = client().lock(name);
    AtomicReference<Throwable> outcome = new AtomicReference<>();
    CountDownLatch done = new CountDownLatch(1);
    Thread waiter =
        new Thread(
            () -> {
              try {
                lock.acquire(Duration.ofSeconds(60));
                outcome.set(
                    new AssertionError("acquire returned a lease although it was interrupted"));
              } catch (Throwable e) {
                outcome.set(e);
              } finally {
                done.countDown();
              }
            });
    int polled = probe().polls(name);
    waiter.start();
    awaitQueued(waiter, name, polled, "the waiter blocks");
    long start = System.nanoTime();
    waiter.interrupt();
    assertThat(done.await(limits().tolerance().toMillis(), TimeUnit.MILLISECONDS))
        .withFailMessage(
            "an interrupted waiter kept waiting for %d ms", ms(System.nanoTime() - start))
        .isTrue();
    assertThat(outcome.get())
        .as("what the interrupted acquire threw")
        .isInstanceOf(InterruptedException.class);
    assertThat(lease.release()).isTrue();
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage(
            "an interrupted waiter left something behind: the free lock could not be acquired at"
                + " once")
        .isPresent();
  }

  @Test
  @DisplayName(
      "7.2 MUST: a thread already interrupted gets InterruptedException at once and takes"
          + " nothing")
  default void rule7_2_alreadyInterruptedThread() throws Exception {
    String name = name("pre-interrupted");
    DistributedLock lock = client().lock(name);
    Thread.currentThread().interrupt();
    try {
      assertThatThrownBy(() -> lock.acquire(Duration.ofSeconds(5)))
          .isInstanceOf(InterruptedException.class);
    } finally {
      Thread.interrupted();
    }
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage("an interrupted acquire took the lock")
        .isPresent();
  }
}
