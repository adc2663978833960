package dev.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.LockState;
import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisScripts;
import dev.locksmith.redis.internal.RedisSettings;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.RecordingContext;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Jedis;

/**
 * Extend and hold-after-release, driven call by call through the backend against a real
 * redis-server, for what the kit cannot see: the scripts' owner checks against a foreign owner and
 * an expired key, the key's TTL after each call, a hold's state read, and a hold with three queued
 * waiters that are granted in queue order once Redis expires it, each told on the way how long the
 * hold has left.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisLeaseControlIT {
  private static final RedisKeys KEYS = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE);
  private static final Duration LEASE = Duration.ofSeconds(10);

  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("lease-control");

  private static RedisBackend openBackend(String clientId) {
    BackendConfig config =
        new BackendConfig(LockUri.parse(REDIS.server().uri()), Map.of(), List.of());
    return (RedisBackend) new RedisLockProvider().open(config, new RecordingContext(clientId));
  }

  private static BackendLease take(
      RedisBackend backend, String name, String ownerId, Duration lease) throws Exception {
    Poll poll = backend.attempt(name, ownerId, lease, () -> {}).poll();
    assertThat(poll.isGranted()).as("%s taking '%s'", ownerId, name).isTrue();
    return new BackendLease(name, ownerId, poll.fencingToken(), lease, null);
  }

  /** Awaits a condition with a deadline, checking it every few milliseconds. */
  private static void await(BooleanSupplier condition, Duration within, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline)
          .as("still not %s after %d ms", what, within.toMillis())
          .isNegative();
      Thread.sleep(5);
    }
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
  void extendMovesTheExpiryBothWaysOnlyForItsOwner() throws Exception {
    try (RedisBackend a = openBackend("x-a");
        Jedis admin = REDIS.server().admin()) {
      String name = "extend-both-ways";
      String key = KEYS.owner(name);
      BackendLease held = take(a, name, "x-a:1", Duration.ofSeconds(2));

      assertThat(a.extend(held, Duration.ofSeconds(60))).as("extend to a longer lease").isTrue();
      assertThat(admin.pttl(key)).as("ms left after extend(60s)").isBetween(55_000L, 60_000L);
      assertThat(admin.pttl(KEYS.token(name)))
          .as("ms left of the token key after extend(60s)")
          .isBetween(55_000L, 60_000L);
      assertThat(a.extend(held, Duration.ofMillis(1500))).as("extend to a shorter lease").isTrue();
      assertThat(admin.pttl(key)).as("ms left after extend(1500ms)").isBetween(1L, 1500L);
      assertThat(admin.pttl(KEYS.token(name)))
          .as("ms left of the token key after extend(1500ms)")
          .isBetween(1L, 1500L);
      // PEXPIRE takes whole ms: a lease is rounded up, never down, so the server never ends it
      // early
      assertThat(
              List.of(
                  RedisScripts.ceilMillis(Duration.ofNanos(1)),
                  RedisScripts.ceilMillis(Duration.ofMillis(1)),
                  RedisScripts.ceilMillis(Duration.ofNanos(1_000_001)),
                  RedisScripts.ceilMillis(Duration.ofSeconds(7))))
          .as("ms sent for 1ns, 1ms, 1ms + 1ns, 7s")
          .containsExactly(1L, 1L, 2L, 7000L);

      BackendLease again = take(a, name + "-2", "x-a:2", Duration.ofSeconds(30));
      BackendLease foreign =
          new BackendLease(again.name(), "x-b:1", again.fencingToken(), again.lease(), null);
      long before = admin.pttl(KEYS.owner(again.name()));
      assertThat(a.extend(foreign, Duration.ofDays(7)))
          .as("extend by an owner id that does not hold the key")
          .isFalse();
      assertThat(admin.get(KEYS.owner(again.name())))
          .as("the key's value after a foreign extend")
          .isEqualTo("x-a:2");
      assertThat(admin.pttl(KEYS.owner(again.name())))
          .as("ms left after a foreign extend(7d)")
          .isBetween(1L, before);
    }
  }

  @Test
  void extendAndHoldOfAnExpiredLeaseChangeNothing() throws Exception {
    try (RedisBackend a = openBackend("e-a");
        Jedis admin = REDIS.server().admin()) {
      String name = "expired";
      String key = KEYS.owner(name);
      String fence = KEYS.fenceCounter(name);
      BackendLease held = take(a, name, "e-a:1", Duration.ofMillis(30));
      await(() -> !admin.exists(key), Duration.ofSeconds(5), "expired");
      assertThat(admin.exists(KEYS.token(name)))
          .as("the token key expires with the owner key")
          .isFalse();
      String fenceBefore = admin.get(fence);

      assertThat(a.extend(held, Duration.ofSeconds(30))).as("extend of an expired lease").isFalse();
      assertThat(admin.exists(key))
          .as("the key after extending an expired lease: not brought back")
          .isFalse();
      assertThat(a.releaseAfter(held, Duration.ofSeconds(30)))
          .as("releaseAfter of an expired lease")
          .isFalse();
      assertThat(admin.exists(key))
          .as("the key after a hold of an expired lease: not brought back")
          .isFalse();
      assertThat(admin.exists(KEYS.token(name)))
          .as("the token key after extend and hold of an expired lease")
          .isFalse();
      assertThat(admin.get(fence)).as("the fence counter").isEqualTo(fenceBefore);

      // the lock is free: the next owner takes it at once, with the next token
      BackendLease next = take(a, name, "e-a:2", LEASE);
      assertThat(next.fencingToken()).isEqualTo(held.fencingToken() + 1);
    }
  }

  @Test
  void aForeignHoldLeavesTheHolderAlone() throws Exception {
    try (RedisBackend a = openBackend("f-a");
        RedisBackend b = openBackend("f-b");
        Jedis admin = REDIS.server().admin()) {
      String name = "foreign-hold";
      String key = KEYS.owner(name);
      BackendLease held = take(a, name, "f-a:1", Duration.ofSeconds(20));
      long before = admin.pttl(key);
      BackendLease stale = new BackendLease(name, "f-b:1", held.fencingToken() - 1, LEASE, null);
      assertThat(b.releaseAfter(stale, Duration.ofDays(7)))
          .as("releaseAfter by an owner id that does not hold the key")
          .isFalse();
      assertThat(admin.get(key)).as("the holder's key after a foreign hold").isEqualTo("f-a:1");
      assertThat(admin.pttl(key)).as("ms left after a foreign hold of 7d").isBetween(1L, before);
      assertThat(a.release(held)).as("the holder's release after the foreign hold").isTrue();
      assertThat(admin.exists(key)).as("the key after the holder's release").isFalse();
    }
  }

  @Test
  void aHoldIsHeldByNoLeaseAndEndsInQueueOrder() throws Exception {
    try (RedisBackend a = openBackend("h-a");
        RedisBackend w = openBackend("h-w");
        Jedis admin = REDIS.server().admin()) {
      String name = "hold-queue";
      String key = KEYS.owner(name);
      BackendLease held = take(a, name, "h-a:1", LEASE);
      List<LockAttempt> waiters =
          List.of(
              w.attempt(name, "h-w:1", LEASE, () -> {}),
              w.attempt(name, "h-w:2", LEASE, () -> {}),
              w.attempt(name, "h-w:3", LEASE, () -> {}));
      for (LockAttempt waiter : waiters) {
        assertThat(waiter.poll().isGranted()).as("a waiter while the lock is held").isFalse();
      }
      assertThat(admin.zrange(KEYS.queue(name), 0, -1))
          .as("queue")
          .containsExactly("h-w:1", "h-w:2", "h-w:3");

      long published = publishes(admin);
      Duration keep = Duration.ofMillis(1200);
      assertThat(a.releaseAfter(held, keep)).as("releaseAfter of a held lease").isTrue();
      assertThat(publishes(admin) - published)
          .as("publishes by a hold: nothing is free yet")
          .isZero();
      assertThat(admin.get(key))
          .as("the key's value during the hold")
          .isEqualTo(RedisScripts.HOLD_PREFIX + "h-a:1");
      assertThat(admin.pttl(key)).as("ms left of the hold").isBetween(1L, keep.toMillis());
      assertThat(admin.get(KEYS.token(name)))
          .as("the token key during the hold")
          .isEqualTo(Long.toString(held.fencingToken()));
      assertThat(admin.pttl(KEYS.token(name)))
          .as("ms left of the token key: the hold's")
          .isBetween(1L, keep.toMillis());

      // no lease matches the hold: not its former owner's release, renewal, extend or hold
      assertThat(a.release(held)).as("release by the former owner during the hold").isFalse();
      assertThat(a.extend(held, LEASE)).as("extend by the former owner during the hold").isFalse();
      assertThat(a.releaseAfter(held, LEASE)).as("a second hold by the former owner").isFalse();
      List<Renewal> renewed = a.renew(List.of(held));
      assertThat(renewed.get(0).kind() == Renewal.Kind.LOST)
          .as("renewal by the former owner during the hold: %s", renewed.get(0))
          .isTrue();
      assertThat(admin.pttl(key))
          .as("ms left of the hold after those calls")
          .isBetween(1L, keep.toMillis());

      LockState state = a.inspect(name);
      assertThat(state.isHeld()).as("state during the hold: %s", state).isTrue();
      assertThat(state.holder())
          .as("holder during the hold: the hold's value, no lease's owner id")
          .hasValue(RedisScripts.HOLD_PREFIX + "h-a:1");
      assertThat(state.fencingToken())
          .as("token during the hold: that of the lease that set it")
          .hasValue(held.fencingToken());
      assertThat(state.remaining())
          .as("remaining during the hold")
          .hasValueSatisfying(left -> assertThat(left).isPositive().isLessThanOrEqualTo(keep));

      // every busy poll during the hold is told to look again when the hold ends, not later
      for (LockAttempt waiter : waiters) {
        long leftBefore = admin.pttl(key);
        Poll busy = waiter.poll();
        assertThat(busy.isGranted()).as("a waiter during the hold").isFalse();
        assertThat(busy.retryAfter().toMillis())
            .as("retry-after of a busy poll during the hold, with %d ms left", leftBefore)
            .isBetween(1L, leftBefore + 1);
      }
      LockAttempt newcomer = a.attempt(name, "h-a:2", LEASE, () -> {});
      assertThat(newcomer.poll().isGranted()).as("a newcomer during the hold").isFalse();

      // Redis ends the hold by itself; then the queue decides, in arrival order
      await(() -> !admin.exists(key), keep.plusSeconds(2), "free after the hold");
      assertThat(newcomer.poll().isGranted())
          .as("the newcomer, queued last, right after the hold")
          .isFalse();
      assertThat(waiters.get(2).poll().isGranted())
          .as("the third waiter right after the hold")
          .isFalse();
      assertThat(waiters.get(1).poll().isGranted())
          .as("the second waiter right after the hold")
          .isFalse();
      long previous = held.fencingToken();
      for (int i = 0; i < waiters.size(); i++) {
        String ownerId = "h-w:" + (i + 1);
        Poll granted = waiters.get(i).poll();
        assertThat(granted.isGranted()).as("waiter %d, first in the queue", i + 1).isTrue();
        assertThat(granted.fencingToken()).as("token of waiter %d", i + 1).isEqualTo(previous + 1);
        previous = granted.fencingToken();
        for (int j = i + 1; j < waiters.size(); j++) {
          assertThat(waiters.get(j).poll().isGranted())
              .as("waiter %d while waiter %d holds the lock", j + 1, i + 1)
              .isFalse();
        }
        assertThat(w.release(new BackendLease(name, ownerId, granted.fencingToken(), LEASE, null)))
            .isTrue();
      }
      assertThat(newcomer.poll().isGranted()).as("the newcomer after the three waiters").isTrue();
    }
  }

  @Test
  void aHoldOutlivesTheBackendThatSetIt() throws Exception {
    try (Jedis admin = REDIS.server().admin();
        RedisBackend b = openBackend("c-b")) {
      String name = "hold-closed";
      Duration keep = Duration.ofSeconds(30);
      try (RedisBackend a = openBackend("c-a")) {
        BackendLease held = take(a, name, "c-a:1", Duration.ofSeconds(5));
        assertThat(a.releaseAfter(held, keep)).isTrue();
      }
      assertThat(admin.pttl(KEYS.owner(name)))
          .as("ms left of the hold once its client closed")
          .isBetween(20_000L, keep.toMillis());
      assertThat(b.attempt(name, "c-b:1", LEASE, () -> {}).poll().isGranted())
          .as("another client during the hold")
          .isFalse();
    }
  }
}
