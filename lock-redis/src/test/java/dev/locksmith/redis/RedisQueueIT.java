package dev.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisSettings;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.RecordingContext;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Jedis;

/**
 * The waiter queue, driven poll by poll through the backend: a released lock goes to the first
 * waiter, not to whoever asks first afterwards; a release publishes only when someone waits; a
 * waiter that gives up leaves the queue; a waiter that vanished holds a free lock up only until its
 * entry lapses.
 */
class RedisQueueIT {
  private static final RedisKeys KEYS = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE);
  private static final Duration LEASE = Duration.ofSeconds(10);
  @RegisterExtension static final RedisServerExtension REDIS = RedisServerExtension.single("queue");

  private static RedisBackend openBackend(String clientId) {
    BackendConfig config =
        new BackendConfig(LockUri.parse(REDIS.server().uri()), Map.of(), List.of());
    return (RedisBackend) new RedisLockProvider().open(config, new RecordingContext(clientId));
  }

  private static long publishes(Jedis admin) {
    for (String line : admin.info("commandstats").split("\r?\n")) {
      if (line.startsWith("cmdstat_publish:calls=")) {
        return Long.parseLong(line.substring("cmdstat_publish:calls=".length(), line.indexOf(',')));
      }
    }
    return 0;
  }

  @Test
  void aReleasedLockGoesToTheQueuedWaiterNotToTheReleasersNextAcquire() throws Exception {
    try (RedisBackend a = openBackend("q-a");
        RedisBackend b = openBackend("q-b");
        Jedis admin = REDIS.server().admin()) {
      String name = "handoff";
      Poll first = a.attempt(name, "q-a:1", LEASE, () -> {}).poll();
      assertThat(first.isGranted()).isTrue();
      LockAttempt waiter = b.attempt(name, "q-b:1", LEASE, () -> {});
      assertThat(waiter.poll().isGranted()).as("b while a holds the lock").isFalse();
      assertThat(admin.zrange(KEYS.queue(name), 0, -1)).as("queue").containsExactly("q-b:1");

      long published = publishes(admin);
      assertThat(a.release(new BackendLease(name, "q-a:1", first.fencingToken(), LEASE, null)))
          .isTrue();
      assertThat(publishes(admin) - published)
          .as("publishes by a release with a waiter queued")
          .isEqualTo(1);

      LockAttempt barger = a.attempt(name, "q-a:2", LEASE, () -> {});
      assertThat(barger.poll().isGranted())
          .as("the releaser's next acquire, with b queued first")
          .isFalse();
      Poll handedOff = waiter.poll();
      assertThat(handedOff.isGranted()).as("b, first in the queue").isTrue();
      assertThat(handedOff.fencingToken()).isGreaterThan(first.fencingToken());
      assertThat(admin.zrange(KEYS.queue(name), 0, -1))
          .as("queue after b's grant")
          .containsExactly("q-a:2");

      published = publishes(admin);
      barger.abandon(); // leaves the queue
      assertThat(admin.exists(KEYS.queue(name)))
          .as("queue after the last waiter gave up")
          .isFalse();
      assertThat(admin.exists(KEYS.queueDeadlines(name))).isFalse();
      assertThat(b.release(new BackendLease(name, "q-b:1", handedOff.fencingToken(), LEASE, null)))
          .isTrue();
      assertThat(publishes(admin) - published)
          .as("publishes by a withdrawal from a held lock and a release with nobody queued")
          .isZero();
    }
  }

  @Test
  void aVanishedWaiterHoldsAFreeLockUpOnlyUntilItsEntryLapses() throws Exception {
    try (RedisBackend a = openBackend("v-a");
        RedisBackend c = openBackend("v-c");
        Jedis admin = REDIS.server().admin()) {
      String name = "vanished";
      Poll held = a.attempt(name, "v-a:1", LEASE, () -> {}).poll();
      assertThat(held.isGranted()).isTrue();
      try (RedisBackend b = openBackend("v-b")) {
        // b queues, then stops polling without withdrawing, as a crashed process would
        assertThat(b.attempt(name, "v-b:1", LEASE, () -> {}).poll().isGranted()).isFalse();
        b.abandon();
      }
      LockAttempt next = c.attempt(name, "v-c:1", LEASE, () -> {});
      assertThat(next.poll().isGranted()).as("c while a holds the lock").isFalse();
      assertThat(a.release(new BackendLease(name, "v-a:1", held.fencingToken(), LEASE, null)))
          .isTrue();

      Poll blocked = next.poll();
      assertThat(blocked.isGranted())
          .as("c while the vanished b is still first in the queue")
          .isFalse();
      assertThat(blocked.retryAfter())
          .as("c is told to look again when b's entry lapses")
          .isLessThanOrEqualTo(
              Duration.ofMillis(
                  3 * new RecordingContext("x").recheck().toMillis()
                      + RedisBackend.MIN_QUEUE_ENTRY_MILLIS));
      Thread.sleep(blocked.retryAfter().toMillis() + 50);
      Poll granted = next.poll();
      assertThat(granted.isGranted()).as("c once b's entry has lapsed").isTrue();
      assertThat(admin.zrange(KEYS.queue(name), 0, -1)).as("queue once c holds the lock").isEmpty();
    }
  }

  private static long scriptCalls(Jedis admin) {
    long calls = 0;
    for (String line : admin.info("commandstats").split("\r?\n")) {
      if (line.startsWith("cmdstat_evalsha:calls=") || line.startsWith("cmdstat_eval:calls=")) {
        calls += Long.parseLong(line.substring(line.indexOf('=') + 1, line.indexOf(',')));
      }
    }
    return calls;
  }

  /**
   * An attempt that will not wait (a {@code tryAcquire()} without a wait time) finds the lock held
   * in one script call and leaves no entry in the queue, so there is nothing to withdraw: an entry
   * would hold back every other taker if the lock were freed before it was withdrawn. It still does
   * not take a free lock ahead of a queued waiter, and takes a free one nobody waits for.
   */
  @Test
  void anAttemptThatWillNotWaitNeitherQueuesNorBargesAhead() throws Exception {
    try (RedisBackend a = openBackend("o-a");
        RedisBackend b = openBackend("o-b");
        RedisBackend c = openBackend("o-c");
        Jedis admin = REDIS.server().admin()) {
      String name = "one-shot";
      Poll held = a.attempt(name, "o-a:1", LEASE, () -> {}).poll();
      assertThat(held.isGranted()).isTrue();
      long calls = scriptCalls(admin);
      LockAttempt once = b.attempt(name, "o-b:1", LEASE, () -> {});
      Poll busy = once.pollWithoutWaiting();
      assertThat(busy.isGranted()).as("b's one poll while a holds the lock").isFalse();
      assertThat(admin.exists(KEYS.queue(name))).as("queue after b's one poll").isFalse();
      once.abandon();
      assertThat(scriptCalls(admin) - calls)
          .as("script calls for b's poll and abandon")
          .isEqualTo(1);
      assertThat(busy.retryAfter())
          .as("the holder's remaining lease")
          .isPositive()
          .isLessThanOrEqualTo(LEASE);

      LockAttempt waiter = c.attempt(name, "o-c:1", LEASE, () -> {});
      assertThat(waiter.poll().isGranted())
          .as("c, a waiting attempt, while a holds the lock")
          .isFalse();
      assertThat(admin.zrange(KEYS.queue(name), 0, -1))
          .as("queue with c waiting")
          .containsExactly("o-c:1");
      assertThat(a.release(new BackendLease(name, "o-a:1", held.fencingToken(), LEASE, null)))
          .isTrue();
      LockAttempt barger = b.attempt(name, "o-b:2", LEASE, () -> {});
      assertThat(barger.pollWithoutWaiting().isGranted())
          .as("b's one poll of the free lock with c queued first")
          .isFalse();
      barger.abandon();
      assertThat(admin.zrange(KEYS.queue(name), 0, -1))
          .as("queue after b's one poll")
          .containsExactly("o-c:1");
      Poll handedOff = waiter.poll();
      assertThat(handedOff.isGranted()).as("c, first in the queue").isTrue();
      assertThat(c.release(new BackendLease(name, "o-c:1", handedOff.fencingToken(), LEASE, null)))
          .isTrue();
      Poll free = b.attempt(name, "o-b:3", LEASE, () -> {}).pollWithoutWaiting();
      assertThat(free.isGranted()).as("b's one poll of a free lock nobody waits for").isTrue();
      assertThat(free.fencingToken()).isGreaterThan(handedOff.fencingToken());
    }
  }
}
