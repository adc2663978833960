package dev.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisKeysTest;
import dev.locksmith.redis.internal.RedisSettings;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.RecordingContext;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * Semaphores driven call by call through two backends (two clients) against a real redis-server,
 * with the server's keys read after each step: at most N live leases, the count kept while leases
 * live and refused when another is asked, an expired holder's permit coming back (and the keys
 * vanishing with the last lease), owner-checked release, renewal and extend, a release waking a
 * subscribed waiter (and publishing nothing when nobody waits), and a semaphore, a read-write lock
 * and a lock of one name being three resources. Then the keys of both new kinds share one slot with
 * the lock of the same name on a cluster-enabled redis-server, which runs every new script on
 * awkward names and refuses cross-slot ones.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisSemaphoreIT {
  static final RedisKeys KEYS = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE);
  private static final Duration LEASE = Duration.ofSeconds(30);

  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("semaphore");

  @RegisterExtension
  static final RedisClusterNodeExtension CLUSTER_NODE =
      new RedisClusterNodeExtension("semaphore-cluster");

  static RedisBackend openBackend(String uri, String clientId, Duration recheck) {
    BackendConfig config = new BackendConfig(LockUri.parse(uri), Map.of(), List.of());
    return (RedisBackend)
        new RedisLockProvider().open(config, new RecordingContext(clientId, recheck));
  }

  private static RedisBackend openBackend(String clientId) {
    return openBackend(REDIS.server().uri(), clientId, Duration.ofSeconds(1));
  }

  /** Takes the claim at the first poll, or fails. */
  static BackendLease take(
      RedisBackend backend, String name, Claim claim, String ownerId, Duration lease)
      throws Exception {
    Poll poll = backend.attempt(name, claim, ownerId, lease, () -> {}).poll();
    assertThat(poll.isGranted()).as("%s taking %s of '%s' at once", ownerId, claim, name).isTrue();
    return new BackendLease(name, claim, ownerId, poll.fencingToken(), lease, null);
  }

  /** Awaits a condition with a deadline, checking it every few milliseconds. */
  static void await(BooleanSupplier condition, Duration within, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline)
          .as("still not %s after %d ms", what, within.toMillis())
          .isNegative();
      Thread.sleep(5);
    }
  }

  static long calls(Jedis admin, String command) {
    String prefix = "cmdstat_" + command + ":calls=";
    for (String line : admin.info("commandstats").split("\r?\n")) {
      if (line.startsWith(prefix)) {
        return Long.parseLong(line.substring(prefix.length(), line.indexOf(',')));
      }
    }
    return 0;
  }

  @Test
  void atMostPermitsLeasesAcrossTwoClientsEachWithAHigherToken() throws Exception {
    Claim three = Claim.permit(3);
    String name = "at-most-three";
    try (RedisBackend a = openBackend("n-a");
        RedisBackend b = openBackend("n-b");
        Jedis admin = REDIS.server().admin()) {
      List<BackendLease> held = new ArrayList<>();
      held.add(take(a, name, three, "n-a:1", LEASE));
      held.add(take(b, name, three, "n-b:1", LEASE));
      held.add(take(a, name, three, "n-a:2", LEASE));
      assertThat(held)
          .extracting(BackendLease::fencingToken)
          .as("tokens in grant order")
          .isSorted()
          .doesNotHaveDuplicates();
      assertThat(admin.zcard(KEYS.semaphoreLeases(name)))
          .as("live leases on the server")
          .isEqualTo(3);
      assertThat(admin.get(KEYS.semaphorePermits(name)))
          .as("the count kept with them")
          .isEqualTo("3");

      Poll fourth = b.attempt(name, three, "n-b:2", LEASE, () -> {}).poll();
      assertThat(fourth.isGranted()).as("a fourth lease of 3 permits").isFalse();
      assertThat(fourth.retryAfter())
          .as("retry after: the earliest lease's end")
          .isBetween(Duration.ofSeconds(25), LEASE.plusMillis(1));
      assertThat(admin.zcard(KEYS.semaphoreLeases(name)))
          .as("live leases after the refused fourth")
          .isEqualTo(3);

      assertThat(b.release(held.get(1))).as("release of n-b:1").isTrue();
      BackendLease fourthNow = take(b, name, three, "n-b:2", LEASE);
      assertThat(fourthNow.fencingToken())
          .as("the freed permit's next token")
          .isGreaterThan(held.get(2).fencingToken());
      assertThat(admin.zrange(KEYS.semaphoreLeases(name), 0, -1))
          .containsExactlyInAnyOrder("n-a:1", "n-a:2", "n-b:2");
    }
  }

  @Test
  void anotherCountIsRefusedWhileLeasesLiveAndTakenOnceNoneDoes() throws Exception {
    String name = "count-mismatch";
    try (RedisBackend a = openBackend("m-a");
        RedisBackend b = openBackend("m-b");
        Jedis admin = REDIS.server().admin()) {
      BackendLease held = take(a, name, Claim.permit(3), "m-a:1", LEASE);
      LockAttempt other = b.attempt(name, Claim.permit(2), "m-b:1", LEASE, () -> {});
      assertThatThrownBy(other::poll)
          .isInstanceOf(IllegalStateException.class)
          .hasMessage(Claim.permitsInUse(name, 2, 3).getMessage());
      other.abandon();
      assertThat(admin.zrange(KEYS.semaphoreLeases(name), 0, -1))
          .as("leases after the refused count")
          .containsExactly("m-a:1");
      assertThat(admin.get(KEYS.semaphorePermits(name)))
          .as("the count after the refused count")
          .isEqualTo("3");

      assertThat(a.release(held)).isTrue();
      assertThat(admin.exists(KEYS.semaphoreLeases(name), KEYS.semaphorePermits(name)))
          .as("keys left once the last lease is released")
          .isZero();
      take(b, name, Claim.permit(1), "m-b:2", LEASE);
      assertThat(admin.get(KEYS.semaphorePermits(name)))
          .as("the count of the next grant")
          .isEqualTo("1");
      assertThat(b.attempt(name, Claim.permit(1), "m-b:3", LEASE, () -> {}).poll().isGranted())
          .as("a second of 1 permit")
          .isFalse();
    }
  }

  @Test
  void anExpiredHoldersPermitComesBackAndTheKeysVanishWithIt() throws Exception {
    String name = "expired-holder";
    Claim one = Claim.permit(1);
    try (RedisBackend a = openBackend("x-a");
        RedisBackend b = openBackend("x-b");
        Jedis admin = REDIS.server().admin()) {
      BackendLease gone = take(a, name, one, "x-a:1", Duration.ofMillis(300));
      assertThat(admin.pttl(KEYS.semaphoreLeases(name)))
          .as("the leases key's TTL: the lease")
          .isBetween(1L, 300L);
      assertThat(admin.pttl(KEYS.semaphorePermits(name)))
          .as("the count's TTL: the leases key's")
          .isBetween(1L, 300L);
      LockAttempt waiter = b.attempt(name, one, "x-b:1", LEASE, () -> {});
      Poll busy = waiter.poll();
      assertThat(busy.isGranted()).isFalse();
      assertThat(busy.retryAfter())
          .as("retry after: the holder's lease end")
          .isBetween(Duration.ofMillis(1), Duration.ofMillis(302));

      await(() -> !admin.exists(KEYS.semaphoreLeases(name)), Duration.ofSeconds(5), "expired");
      assertThat(admin.exists(KEYS.semaphorePermits(name)))
          .as("the count expires with the leases")
          .isFalse();
      assertThat(a.renew(List.of(gone)))
          .extracting(Renewal::kind)
          .as("renewal of the expired lease")
          .containsExactly(Renewal.Kind.LOST);
      assertThat(a.extend(gone, LEASE)).as("extend of the expired lease").isFalse();
      assertThat(admin.exists(KEYS.semaphoreLeases(name)))
          .as("the expired lease brought back")
          .isFalse();

      Poll next = waiter.poll();
      assertThat(next.isGranted()).as("the waiter once the holder's lease ended").isTrue();
      assertThat(next.fencingToken()).isGreaterThan(gone.fencingToken());
      assertThat(a.release(gone)).as("release by the expired holder").isFalse();
      assertThat(admin.zrange(KEYS.semaphoreLeases(name), 0, -1))
          .as("the expired holder's release took nothing")
          .containsExactly("x-b:1");
    }
  }

  @Test
  void releaseRenewAndExtendAreOwnerChecked() throws Exception {
    String name = "owner-checked";
    Claim two = Claim.permit(2);
    try (RedisBackend a = openBackend("o-a");
        Jedis admin = REDIS.server().admin()) {
      BackendLease held = take(a, name, two, "o-a:1", Duration.ofSeconds(2));
      BackendLease foreign = new BackendLease(name, two, "o-b:1", held.fencingToken(), LEASE, null);
      assertThat(a.release(foreign)).as("release by an owner id that holds no lease").isFalse();
      assertThat(a.renew(List.of(foreign)))
          .extracting(Renewal::kind)
          .containsExactly(Renewal.Kind.LOST);
      assertThat(a.extend(foreign, Duration.ofDays(1))).isFalse();
      assertThat(admin.zrange(KEYS.semaphoreLeases(name), 0, -1)).containsExactly("o-a:1");
      assertThat(admin.pttl(KEYS.semaphoreLeases(name)))
          .as("TTL after the foreign calls")
          .isBetween(1L, 2000L);

      assertThat(a.renew(List.of(held)))
          .extracting(Renewal::kind)
          .containsExactly(Renewal.Kind.RENEWED);
      assertThat(a.extend(held, Duration.ofSeconds(60))).as("extend to longer").isTrue();
      assertThat(admin.pttl(KEYS.semaphoreLeases(name)))
          .as("TTL after extend(60s)")
          .isBetween(55_000L, 60_000L);
      assertThat(admin.pttl(KEYS.semaphorePermits(name)))
          .as("the count's TTL after extend(60s)")
          .isBetween(55_000L, 60_000L);
      assertThat(a.extend(held, Duration.ofMillis(1500))).as("extend to shorter").isTrue();
      assertThat(admin.pttl(KEYS.semaphoreLeases(name)))
          .as("TTL after extend(1500ms)")
          .isBetween(1L, 1500L);
      assertThatThrownBy(() -> a.releaseAfter(held, Duration.ofSeconds(1)))
          .isInstanceOf(UnsupportedOperationException.class);

      assertThat(a.release(held)).isTrue();
      assertThat(a.release(held)).as("a second release").isFalse();
      assertThat(admin.exists(KEYS.semaphoreLeases(name), KEYS.semaphorePermits(name))).isZero();
    }
  }

  @Test
  void aReleaseWakesASubscribedWaiterAndPublishesNothingWhenNobodyWaits() throws Exception {
    String name = "wake";
    Claim one = Claim.permit(1);
    try (RedisBackend a = openBackend("w-a");
        RedisBackend b = openBackend("w-b");
        Jedis admin = REDIS.server().admin()) {
      take(
          a,
          "warm-up",
          one,
          "w-a:0",
          Duration.ofMillis(1)); // the pool's first connection is not counted below
      long before = calls(admin, "publish");
      long trips = a.node().roundTrips();
      BackendLease alone = take(a, name, one, "w-a:1", LEASE);
      assertThat(a.release(alone)).isTrue();
      assertThat(a.node().roundTrips() - trips)
          .as("round trips of an uncontended acquire and release")
          .isEqualTo(2);
      assertThat(calls(admin, "publish"))
          .as("PUBLISH calls of a release with nobody waiting")
          .isEqualTo(before);

      BackendLease held = take(a, name, one, "w-a:2", LEASE);
      AtomicInteger wakes = new AtomicInteger();
      LockAttempt waiter = b.attempt(name, one, "w-b:1", LEASE, wakes::incrementAndGet);
      assertThat(waiter.poll().isGranted()).isFalse();
      await(
          () -> wakes.get() >= 1,
          Duration.ofSeconds(5),
          "woken by the subscription's confirmation");
      assertThat(admin.exists(KEYS.semaphoreWaiting(name)))
          .as("the waiting mark of a busy poll")
          .isTrue();
      int woken = wakes.get();
      assertThat(a.release(held)).isTrue();
      await(() -> wakes.get() > woken, Duration.ofSeconds(5), "woken by the release");
      assertThat(waiter.poll().isGranted()).as("the woken waiter's poll").isTrue();
    }
  }

  @Test
  void aLockASemaphoreAndAReadWriteLockOfOneNameAreThreeResources() throws Exception {
    String name = "three-resources";
    try (RedisBackend a = openBackend("r-a");
        RedisBackend b = openBackend("r-b")) {
      Poll lock = a.attempt(name, "r-a:1", LEASE, () -> {}).poll();
      assertThat(lock.isGranted()).isTrue();
      BackendLease permit = take(b, name, Claim.permit(1), "r-b:1", LEASE);
      BackendLease write = take(b, name, Claim.write(), "r-b:2", LEASE);
      assertThat(b.release(permit)).isTrue();
      assertThat(b.release(write)).isTrue();
      assertThat(a.inspect(name).isHeld())
          .as("the lock, after the semaphore and the read-write lock were released")
          .isTrue();
    }
  }

  // ------------------------------------------------------------------ cluster

  /**
   * @return every key of the semaphore and the read-write lock of a name
   */
  static List<String> sharedKeys(String name) {
    return List.of(
        KEYS.semaphoreLeases(name),
        KEYS.semaphorePermits(name),
        KEYS.semaphoreWaiting(name),
        KEYS.semaphoreChannel(name),
        KEYS.semaphoreTokens(name),
        KEYS.readLeases(name),
        KEYS.writeLeases(name),
        KEYS.readTokens(name),
        KEYS.writeTokens(name),
        KEYS.writersWaiting(name),
        KEYS.readWriteWaiting(name),
        KEYS.readWriteChannel(name),
        KEYS.fenceCounter(name));
  }

  @Test
  void everyKeyOfOneResourceIsInTheLocksSlotAndEveryScriptRunsOnAClusterNode() throws Exception {
    try (Jedis admin = CLUSTER_NODE.admin()) {
      for (String name : RedisKeysTest.AWKWARD_NAMES) {
        for (String key : sharedKeys(name)) {
          assertThat(admin.clusterKeySlot(key))
              .as("CLUSTER KEYSLOT %s", key)
              .isEqualTo(KEYS.slot(name));
        }
      }
      if (!admin.clusterInfo().contains("cluster_state:ok")) {
        admin.sendCommand(Protocol.Command.CLUSTER, "ADDSLOTSRANGE", "0", "16383");
      }
      await(
          () -> admin.clusterInfo().contains("cluster_state:ok"),
          Duration.ofSeconds(10),
          "cluster state ok");
      assertThatThrownBy(() -> admin.eval("return 1", 2, "foo", "bar"))
          .isInstanceOf(JedisDataException.class)
          .hasMessageContaining("CROSSSLOT");
    }
    String uri = CLUSTER_NODE.uri();
    try (RedisBackend a = openBackend(uri, "cl-a", Duration.ofSeconds(1));
        RedisBackend b = openBackend(uri, "cl-b", Duration.ofSeconds(1))) {
      for (String name : RedisKeysTest.AWKWARD_NAMES) {
        BackendLease permit = take(a, name, Claim.permit(1), "cl-a:p:" + name, LEASE);
        LockAttempt second = b.attempt(name, Claim.permit(1), "cl-b:p:" + name, LEASE, () -> {});
        assertThat(second.poll().isGranted()).as("a second permit of 1 of %s", name).isFalse();
        second.abandon();
        BackendLease read = take(a, name, Claim.read(), "cl-a:r:" + name, LEASE);
        LockAttempt writer = b.attempt(name, Claim.write(), "cl-b:w:" + name, LEASE, () -> {});
        assertThat(writer.poll().isGranted()).as("a writer of %s while read", name).isFalse();
        writer.abandon();
        assertThat(a.renew(List.of(permit, read)))
            .extracting(Renewal::kind)
            .containsExactly(Renewal.Kind.RENEWED, Renewal.Kind.RENEWED);
        assertThat(a.extend(permit, LEASE)).isTrue();
        assertThat(a.release(permit)).isTrue();
        assertThat(a.release(read)).isTrue();
        BackendLease write = take(b, name, Claim.write(), "cl-b:w2:" + name, LEASE);
        assertThat(write.fencingToken()).isGreaterThan(read.fencingToken());
        assertThat(b.release(write)).isTrue();
      }
    }
  }
}
