package dev.locksmith.redis;

import static dev.locksmith.redis.RedisSemaphoreIT.KEYS;
import static dev.locksmith.redis.RedisSemaphoreIT.await;
import static dev.locksmith.redis.RedisSemaphoreIT.take;
import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Jedis;

/**
 * Read-write locks driven call by call through two backends (two clients) against a real
 * redis-server, with the server's keys read after each step: readers share, a writer excludes
 * readers and writers, tokens order the sides, a waiting writer holds new readers back (writer
 * preference), its mark goes at once when it is granted or withdraws (waking the readers it held
 * back), and lapses by itself a few recheck intervals after a writer that vanished last polled.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisReadWriteLockIT {
  private static final Duration LEASE = Duration.ofSeconds(30);

  /**
   * The clients' recheck interval here: a writer's mark lives three of them, at least 500 ms, so
   * 500 ms.
   */
  private static final Duration RECHECK = Duration.ofMillis(100);

  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("read-write");

  private static RedisBackend openBackend(String clientId) {
    return RedisSemaphoreIT.openBackend(REDIS.server().uri(), clientId, RECHECK);
  }

  @Test
  void readersShareAWriterExcludesEveryoneAndTokensOrderTheSides() throws Exception {
    String name = "sides";
    try (RedisBackend a = openBackend("s-a");
        RedisBackend b = openBackend("s-b");
        Jedis admin = REDIS.server().admin()) {
      BackendLease r1 = take(a, name, Claim.read(), "s-a:1", LEASE);
      BackendLease r2 = take(b, name, Claim.read(), "s-b:1", LEASE);
      assertThat(admin.zrange(KEYS.readLeases(name), 0, -1))
          .as("read leases")
          .containsExactlyInAnyOrder("s-a:1", "s-b:1");

      LockAttempt writer = b.attempt(name, Claim.write(), "s-b:2", LEASE, () -> {});
      Poll busy = writer.poll();
      assertThat(busy.isGranted()).as("a writer while two readers hold").isFalse();
      assertThat(busy.retryAfter())
          .as("retry after: the earliest read lease's end")
          .isBetween(Duration.ofSeconds(25), LEASE.plusMillis(1));
      assertThat(a.release(r1)).isTrue();
      assertThat(writer.poll().isGranted()).as("a writer while one reader holds").isFalse();
      assertThat(b.release(r2)).isTrue();
      Poll granted = writer.poll();
      assertThat(granted.isGranted()).as("the writer once the readers are gone").isTrue();
      assertThat(granted.fencingToken())
          .as("the write token above every earlier lease's")
          .isGreaterThan(Math.max(r1.fencingToken(), r2.fencingToken()));
      assertThat(admin.exists(KEYS.writersWaiting(name))).as("the granted writer's mark").isFalse();
      BackendLease w =
          new BackendLease(name, Claim.write(), "s-b:2", granted.fencingToken(), LEASE, null);

      assertThat(a.attempt(name, Claim.read(), "s-a:2", LEASE, () -> {}).poll().isGranted())
          .as("a reader while written")
          .isFalse();
      LockAttempt second = a.attempt(name, Claim.write(), "s-a:3", LEASE, () -> {});
      assertThat(second.poll().isGranted()).as("a second writer").isFalse();
      second.abandon();
      assertThat(a.renew(List.of(w)))
          .extracting(Renewal::kind)
          .containsExactly(Renewal.Kind.RENEWED);
      BackendLease asRead =
          new BackendLease(name, Claim.read(), "s-b:2", w.fencingToken(), LEASE, null);
      assertThat(a.release(asRead)).as("the writer's lease released as a read lease").isFalse();
      assertThat(admin.zrange(KEYS.writeLeases(name), 0, -1)).containsExactly("s-b:2");
      assertThat(b.release(w)).isTrue();
      assertThat(admin.exists(KEYS.writersWaiting(name)))
          .as("marks once both writers are done")
          .isFalse();

      BackendLease r3 = take(a, name, Claim.read(), "s-a:4", LEASE);
      assertThat(r3.fencingToken())
          .as("a read token above the earlier write token")
          .isGreaterThan(w.fencingToken());
      assertThat(a.release(r3)).isTrue();
      assertThat(admin.exists(KEYS.readLeases(name), KEYS.writeLeases(name)))
          .as("keys left once all is released")
          .isZero();
    }
  }

  @Test
  void aWaitingWriterHoldsNewReadersBackUntilItWithdrawsWhichWakesThem() throws Exception {
    String name = "writer-preference";
    try (RedisBackend a = openBackend("p-a");
        RedisBackend b = openBackend("p-b");
        Jedis admin = REDIS.server().admin()) {
      BackendLease r1 = take(a, name, Claim.read(), "p-a:1", LEASE);
      LockAttempt writer = b.attempt(name, Claim.write(), "p-b:1", LEASE, () -> {});
      assertThat(writer.poll().isGranted()).isFalse();
      assertThat(admin.zscore(KEYS.writersWaiting(name), "p-b:1"))
          .as("the waiting writer's mark")
          .isNotNull();

      AtomicInteger wakes = new AtomicInteger();
      LockAttempt reader = a.attempt(name, Claim.read(), "p-a:2", LEASE, wakes::incrementAndGet);
      Poll held = reader.poll();
      assertThat(held.isGranted())
          .as("a new reader while a writer waits, though only readers hold")
          .isFalse();
      assertThat(held.retryAfter())
          .as("retry after: the writer's mark lapses")
          .isBetween(Duration.ofMillis(1), Duration.ofMillis(502));
      await(
          () -> wakes.get() >= 1,
          Duration.ofSeconds(5),
          "woken by the subscription's confirmation");
      int woken = wakes.get();

      writer.abandon();
      assertThat(admin.exists(KEYS.writersWaiting(name)))
          .as("the mark after the writer withdrew")
          .isFalse();
      await(() -> wakes.get() > woken, Duration.ofSeconds(5), "woken by the writer's withdrawal");
      assertThat(reader.poll().isGranted()).as("the reader once the writer withdrew").isTrue();
      assertThat(a.release(r1)).isTrue();
    }
  }

  @Test
  void aVanishedWritersMarkLapsesByItself() throws Exception {
    String name = "vanished-writer";
    try (RedisBackend a = openBackend("v-a");
        RedisBackend b = openBackend("v-b");
        Jedis admin = REDIS.server().admin()) {
      BackendLease r1 = take(a, name, Claim.read(), "v-a:1", LEASE);
      LockAttempt writer = b.attempt(name, Claim.write(), "v-b:1", LEASE, () -> {});
      assertThat(writer.poll().isGranted()).isFalse(); // then it never polls again, nor withdraws
      long markedAt = System.nanoTime();
      long pttl = admin.pttl(KEYS.writersWaiting(name));
      assertThat(pttl)
          .as("the mark's key lives as long as the mark: 3 x recheck, at least 500 ms")
          .isBetween(1L, 500L);

      LockAttempt reader = a.attempt(name, Claim.read(), "v-a:2", LEASE, () -> {});
      Poll held = reader.poll();
      assertThat(held.isGranted()).as("a reader while the writer's mark lives").isFalse();
      // not waiting for a condition: what is checked is that the retry the server told is enough
      Thread.sleep(Math.max(0, held.retryAfter().toMillis()));
      Poll later = reader.poll();
      assertThat(later.isGranted())
          .as("the reader after the retry the server told it (%s)", held.retryAfter())
          .isTrue();
      assertThat((System.nanoTime() - markedAt) / 1_000_000)
          .as("ms from the writer's last poll to the reader's grant")
          .isLessThan(2_000);
      assertThat(admin.exists(KEYS.writersWaiting(name))).as("the lapsed mark's key").isFalse();
      assertThat(a.release(r1)).isTrue();
      assertThat(
              a.release(
                  new BackendLease(name, Claim.read(), "v-a:2", later.fencingToken(), LEASE, null)))
          .isTrue();
    }
  }

  @Test
  void aReleasedWriteWakesAWaitingReaderAndAnExpiredWriteFreesTheLock() throws Exception {
    String name = "write-release";
    try (RedisBackend a = openBackend("e-a");
        RedisBackend b = openBackend("e-b");
        Jedis admin = REDIS.server().admin()) {
      BackendLease w = take(a, name, Claim.write(), "e-a:1", LEASE);
      AtomicInteger wakes = new AtomicInteger();
      LockAttempt reader = b.attempt(name, Claim.read(), "e-b:1", LEASE, wakes::incrementAndGet);
      assertThat(reader.poll().isGranted()).isFalse();
      await(
          () -> wakes.get() >= 1,
          Duration.ofSeconds(5),
          "woken by the subscription's confirmation");
      int woken = wakes.get();
      assertThat(a.release(w)).isTrue();
      await(() -> wakes.get() > woken, Duration.ofSeconds(5), "woken by the write release");
      Poll read = reader.poll();
      assertThat(read.isGranted()).isTrue();
      assertThat(
              b.release(
                  new BackendLease(name, Claim.read(), "e-b:1", read.fencingToken(), LEASE, null)))
          .isTrue();

      BackendLease shortWrite = take(a, name, Claim.write(), "e-a:2", Duration.ofMillis(200));
      LockAttempt next = b.attempt(name, Claim.write(), "e-b:2", LEASE, () -> {});
      Poll busy = next.poll();
      assertThat(busy.isGranted()).isFalse();
      assertThat(busy.retryAfter())
          .as("retry after: the write lease's end")
          .isBetween(Duration.ofMillis(1), Duration.ofMillis(202));
      Thread.sleep(
          busy.retryAfter().toMillis()); // the retry the server told must be enough: no await here
      Poll after = next.poll();
      assertThat(after.isGranted()).as("a writer once the write lease expired").isTrue();
      assertThat(after.fencingToken()).isGreaterThan(shortWrite.fencingToken());
      assertThat(a.renew(List.of(shortWrite)))
          .extracting(Renewal::kind)
          .containsExactly(Renewal.Kind.LOST);
      assertThat(a.release(shortWrite)).as("release of the expired write lease").isFalse();
      assertThat(admin.zrange(KEYS.writeLeases(name), 0, -1)).containsExactly("e-b:2");
    }
  }
}
