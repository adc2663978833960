package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.LeaseLostException;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.Poll;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * How long a waiter is told to wait, poll by poll, on in-process H2 (no timing): the backoff
 * doubles while one holder keeps the lock, and starts again from its shortest when the lock has
 * changed hands since the last poll, so a waiter keeps looking often at a lock that is turning
 * over. The hand-overs follow the wait queue: a newcomer does not barge, the first waiter is served
 * first.
 */
class JdbcBackoffTest {
  private static final Duration LEASE = Duration.ofSeconds(30);

  private static LockBackend open() {
    String uri =
        "jdbc:h2:mem:backoff-"
            + UUID.randomUUID()
            + ";DB_CLOSE_DELAY=-1?user=sa&backoff-min=10ms&backoff-max=5s";
    LockUri parsed = LockUri.parse(uri);
    return new JdbcLockProvider()
        .open(
            new BackendConfig(parsed, parsed.query(), List.of()),
            new BackendContext() {
              @Override
              public String clientId() {
                return "backoff-test";
              }

              @Override
              public Duration recheck() {
                return Duration.ofSeconds(1);
              }

              @Override
              public void leaseLost(
                  String ownerId, LeaseLostException.Reason reason, String detail) {}

              @Override
              public void allLeasesLost(String detail) {}

              @Override
              public void leaseValidUntil(String ownerId, long validUntilNanos) {}
            });
  }

  @Test
  void theBackoffGrowsWhileOneHolderKeepsTheLockAndStartsOverWhenItChangesHands() throws Exception {
    try (LockBackend backend = open()) {
      Poll first = backend.attempt("turnover", "a:1", LEASE, () -> {}).poll();
      assertThat(first.isGranted()).isTrue();
      LockAttempt head = backend.attempt("turnover", "w:1", LEASE, () -> {});
      assertThat(head.poll().isGranted())
          .as("the first waiter's poll while a:1 holds the lock")
          .isFalse();
      LockAttempt waiter = backend.attempt("turnover", "w:2", LEASE, () -> {});
      Duration last = Duration.ZERO;
      for (int i = 0; i < 6; i++) {
        Poll busy = waiter.poll();
        assertThat(busy.isGranted()).as("poll %d while a:1 holds the lock", i).isFalse();
        last = busy.retryAfter();
      }
      // 10, 20, 40, 80, 160, 320 ms, each jittered down to no less than half
      assertThat(last)
          .as("wait after six polls of one holding")
          .isBetween(Duration.ofMillis(160), Duration.ofMillis(320));

      assertThat(
              backend.release(
                  new BackendLease("turnover", "a:1", first.fencingToken(), LEASE, null)))
          .isTrue();
      LockAttempt newcomer = backend.attempt("turnover", "b:1", LEASE, () -> {});
      assertThat(newcomer.poll().isGranted())
          .as("a newcomer right after the release, with two waiters queued")
          .isFalse();
      newcomer.abandon();
      Poll second = head.poll();
      assertThat(second.isGranted())
          .as("the first waiter takes the lock before the second looks again")
          .isTrue();
      Poll afterHandOver = waiter.poll();
      assertThat(afterHandOver.isGranted()).isFalse();
      assertThat(afterHandOver.retryAfter())
          .as("wait once the lock has changed hands")
          .isBetween(Duration.ofMillis(5), Duration.ofMillis(10));
      assertThat(waiter.poll().retryAfter())
          .as("the next poll of the same holding doubles again")
          .isBetween(Duration.ofMillis(10), Duration.ofMillis(20));
      assertThat(
              backend.release(
                  new BackendLease("turnover", "w:1", second.fencingToken(), LEASE, null)))
          .isTrue();
      assertThat(waiter.poll().isGranted()).as("the second waiter, next in line").isTrue();
    }
  }
}
