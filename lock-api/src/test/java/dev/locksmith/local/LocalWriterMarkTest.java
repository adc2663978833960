package dev.locksmith.local;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.spi.Claim;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The mark a waiting writer leaves on a {@code local:} read-write lock: it holds new readers back
 * while the writer keeps polling, and ends by itself when the writer stops (vanished without
 * withdrawing), or at once when it withdraws. No timing is asserted: the marks are either a minute
 * long or already over.
 */
class LocalWriterMarkTest {
  private static final long LEASE = Duration.ofMinutes(1).toNanos();
  private static final long LONG_MARK = Duration.ofMinutes(1).toNanos();

  private final LocalSpace space = LocalSpace.named("writer-mark-" + UUID.randomUUID());
  private final String key = LocalSpace.sharedKey("rw", Claim.read());

  private LocalSpace.Queued queued(String owner, Runnable wake) {
    LocalSpace.Queued q = new LocalSpace.Queued(owner, wake);
    space.enqueueShared(key, q);
    return q;
  }

  @Test
  void aWaitingWritersMarkHoldsReadersBackWhileItLasts() {
    assertThat(
            space.tryTakeShared(
                key, "rw", Claim.read(), queued("reader-1", () -> {}), LEASE, LONG_MARK))
        .isPositive();
    LocalSpace.Queued writer = queued("writer", () -> {});
    assertThat(space.tryTakeShared(key, "rw", Claim.write(), writer, LEASE, LONG_MARK))
        .as("the writer behind a reader")
        .isNegative();
    assertThat(
            space.tryTakeShared(
                key, "rw", Claim.read(), queued("reader-2", () -> {}), LEASE, LONG_MARK))
        .as("a new reader while the writer's mark lasts")
        .isNegative();
  }

  @Test
  void aVanishedWritersMarkEndsByItself() throws InterruptedException {
    assertThat(
            space.tryTakeShared(
                key, "rw", Claim.read(), queued("reader-1", () -> {}), LEASE, LONG_MARK))
        .isPositive();
    // the writer polls once with a mark of 1 ns, then vanishes without withdrawing
    assertThat(space.tryTakeShared(key, "rw", Claim.write(), queued("writer", () -> {}), LEASE, 1))
        .isNegative();
    Thread.sleep(1);
    assertThat(
            space.tryTakeShared(
                key, "rw", Claim.read(), queued("reader-2", () -> {}), LEASE, LONG_MARK))
        .as("a new reader after the vanished writer's mark ended")
        .isPositive();
  }

  @Test
  void aWithdrawingWriterEndsItsMarkAtOnceAndWakesTheReaders() {
    assertThat(
            space.tryTakeShared(
                key, "rw", Claim.read(), queued("reader-1", () -> {}), LEASE, LONG_MARK))
        .isPositive();
    LocalSpace.Queued writer = queued("writer", () -> {});
    assertThat(space.tryTakeShared(key, "rw", Claim.write(), writer, LEASE, LONG_MARK))
        .isNegative();
    AtomicInteger woken = new AtomicInteger();
    LocalSpace.Queued reader = queued("reader-2", woken::incrementAndGet);
    assertThat(space.tryTakeShared(key, "rw", Claim.read(), reader, LEASE, LONG_MARK)).isNegative();
    space.withdrawShared(key, writer);
    assertThat(woken.get())
        .as("wake-ups of the held-back reader when the writer withdrew")
        .isPositive();
    assertThat(space.tryTakeShared(key, "rw", Claim.read(), reader, LEASE, LONG_MARK))
        .as("the held-back reader")
        .isPositive();
  }
}
