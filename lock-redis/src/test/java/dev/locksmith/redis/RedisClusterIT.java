package dev.locksmith.redis;

import static dev.locksmith.BadInputCheck.bad;
import static dev.locksmith.BadInputCheck.connect;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.BadInputCheck;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisSettings;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.RecordingContext;
import dev.locksmith.spi.Renewal;
import dev.locksmith.tck.ServerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import redis.clients.jedis.Jedis;

/**
 * {@code redis-cluster://} on a real 6-node Cluster: bad URIs, renewals pipelined once per primary,
 * release notifications by SPUBLISH on the slot's primary alone (counted in INFO commandstats),
 * WAIT on the slot's primary, and a waiter woken by a release after the slot's primary was killed
 * and its replica promoted (last: it kills a node).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RedisClusterIT {
  private static final RedisKeys KEYS = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE);

  @RegisterExtension
  static final RedisClusterExtension CLUSTER =
      new RedisClusterExtension("cluster-it", Duration.ofMillis(1000));

  @RegisterExtension
  static final RedisServerExtension SINGLE = RedisServerExtension.single("not-a-cluster");

  static Stream<Arguments> cases() {
    String nodes = CLUSTER.cluster().uri().substring("redis-cluster://".length());
    int nobody = ServerProcess.freePort();
    Class<LockConfigurationException> config = LockConfigurationException.class;
    Class<BackendUnavailableException> unavailable = BackendUnavailableException.class;
    return Stream.of(
        bad(
            "no nodes",
            config,
            connect("redis-cluster://?lease=10s"),
            "names no host",
            "node1:7000"),
        bad("database path", config, connect("redis-cluster://" + nodes + "/3"), "only database 0"),
        bad(
            "database option",
            config,
            connect("redis-cluster://" + nodes + "?database=2"),
            "`database` was '2'",
            "only database 0"),
        bad(
            "node named twice",
            config,
            connect("redis-cluster://127.0.0.1:7000,127.0.0.1:7000"),
            "127.0.0.1:7000 twice"),
        bad(
            "sentinel-password on a cluster",
            config,
            connect("redis-cluster://" + nodes + "?sentinel-password=hunter2-Q"),
            "`sentinel-password` was '****'",
            "redis-sentinel://"),
        bad(
            "wait-replicas abc",
            config,
            connect("redis-cluster://" + nodes + "?wait-replicas=abc"),
            "`wait-replicas` was 'abc'"),
        bad(
            "nothing listening",
            unavailable,
            connect("redis-cluster://:hunter2-Q@127.0.0.1:" + nobody + "?connect-timeout=1s"),
            "127.0.0.1:" + nobody,
            "refused",
            "redis-cluster://:****@"),
        bad(
            "not a cluster node",
            unavailable,
            connect("redis-cluster://127.0.0.1:" + SINGLE.server().port() + "?connect-timeout=1s"),
            "127.0.0.1:" + SINGLE.server().port(),
            "cluster-enabled yes",
            "redis://"));
  }

  @Order(1)
  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void refusedClearlyInTimeWithoutLeaks(BadInputCheck.Case c) {
    BadInputCheck.check(c, Duration.ofSeconds(10));
  }

  private static RedisBackend openBackend(String clientId) {
    BackendConfig config =
        new BackendConfig(LockUri.parse(CLUSTER.cluster().uri()), Map.of(), List.of());
    return (RedisBackend) new RedisLockProvider().open(config, new RecordingContext(clientId));
  }

  @Order(2)
  @Test
  void renewalsArePipelinedOncePerPrimary() throws Exception {
    try (RedisBackend backend = openBackend("renew-per-node")) {
      List<BackendLease> leases = new ArrayList<>();
      Set<Integer> owners = new HashSet<>();
      for (int i = 0; i < 300; i++) {
        String name = "renew-" + i;
        LockAttempt attempt = backend.attempt(name, "o-" + i, Duration.ofSeconds(30), () -> {});
        Poll poll = attempt.poll();
        assertThat(poll.isGranted()).isTrue();
        leases.add(
            new BackendLease(name, "o-" + i, poll.fencingToken(), Duration.ofSeconds(30), null));
        owners.add(CLUSTER.cluster().primaryOf(KEYS.owner(name)));
      }
      assertThat(owners).as("primaries holding 300 locks").hasSize(3);
      long before = backend.node().roundTrips();
      List<Renewal> renewed = backend.renew(leases);
      assertThat(backend.node().roundTrips() - before)
          .as("round trips to renew 300 leases on 3 primaries")
          .isEqualTo(3);
      assertThat(renewed).extracting(Renewal::kind).containsOnly(Renewal.Kind.RENEWED).hasSize(300);
      for (BackendLease l : leases) {
        assertThat(backend.release(l)).isTrue();
      }
    }
  }

  @Order(2)
  @Test
  void aSetIsOneScriptPerHashSlotAndABusySlotGivesBackTheSlotsBeforeIt() throws Exception {
    // six names in three slots ({u1}, {u2}, {u3}): three scripts, in slot order
    List<String> names = List.of("{u1}a", "{u1}b", "{u1}c", "{u2}a", "{u2}b", "{u3}x");
    List<String> owners = new ArrayList<>();
    for (int i = 0; i < names.size(); i++) {
      owners.add("slots:" + i);
    }
    Set<Integer> slots = new HashSet<>();
    names.forEach(n -> slots.add(KEYS.slot(n)));
    assertThat(slots).as("hash slots of the set's names").hasSize(3);
    Duration lease = Duration.ofSeconds(10);
    try (RedisBackend backend = openBackend("set-per-slot");
        RedisBackend other = openBackend("set-per-slot-other")) {
      long before = backend.node().roundTrips();
      List<Poll> grants = backend.acquireAll(names, owners, lease);
      assertThat(backend.node().roundTrips() - before)
          .as("round trips for a free set of 6 names in 3 slots")
          .isEqualTo(3);
      assertThat(grants).hasSize(6).allMatch(Poll::isGranted);
      List<BackendLease> leases = new ArrayList<>();
      for (int i = 0; i < names.size(); i++) {
        leases.add(
            new BackendLease(
                names.get(i), owners.get(i), grants.get(i).fencingToken(), lease, null));
        assertThat(other.attempt(names.get(i), "x", lease, () -> {}).pollWithoutWaiting())
            .as("%s while the set holds it", names.get(i))
            .matches(p -> !p.isGranted());
      }
      before = backend.node().roundTrips();
      assertThat(backend.releaseAll(leases)).containsOnly(true).hasSize(6);
      assertThat(backend.node().roundTrips() - before)
          .as("round trips to release 6 names in 3 slots")
          .isEqualTo(3);
      // the last slot held by another: the two slots taken before it are given back
      LockAttempt holder = other.attempt("{u3}x", "other-holder", lease, () -> {});
      Poll held = holder.poll();
      assertThat(held.isGranted()).isTrue();
      assertThat(backend.acquireAll(names, owners, lease))
          .as("a set whose last slot is held")
          .isEmpty();
      for (String name : names.subList(0, 5)) {
        LockAttempt probe = other.attempt(name, "probe-" + name, lease, () -> {});
        Poll p = probe.poll();
        assertThat(p.isGranted()).as("%s after the busy set gave it back", name).isTrue();
        assertThat(
                other.release(
                    new BackendLease(name, "probe-" + name, p.fencingToken(), lease, null)))
            .isTrue();
      }
      assertThat(
              other.release(
                  new BackendLease("{u3}x", "other-holder", held.fencingToken(), lease, null)))
          .isTrue();
    }
  }

  @Order(3)
  @Test
  void theWaiterListensBySsubscribeOnTheSlotsPrimaryAndARelaseWakesIt() throws Exception {
    String name = "sharded-wake";
    String channel = KEYS.releasedChannel(name);
    int owner = CLUSTER.cluster().primaryOf(KEYS.owner(name));
    try (LockClient holder = Locks.connect(CLUSTER.cluster().uri() + "?lease=30s");
        LockClient waiter = Locks.connect(CLUSTER.cluster().uri() + "?recheck=1h&lease=30s")) {
      Lease held = holder.lock(name).acquire(Duration.ofSeconds(5));
      CompletableFuture<Lease> waiting = waiter.lock(name).acquireAsync(Duration.ofSeconds(30));
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (shardSubscribers(owner, channel) == 0 && System.nanoTime() < end) {
        Thread.sleep(20);
      }
      for (int p : CLUSTER.cluster().primaries()) {
        assertThat(shardSubscribers(p, channel))
            .as(
                "sharded subscribers of the lock's channel on "
                    + p
                    + (p == owner ? " (the slot's primary)" : ""))
            .isEqualTo(p == owner ? 1 : 0);
        try (Jedis j = CLUSTER.cluster().admin(p)) {
          assertThat(j.pubsubNumSub(channel).get(channel)).as("plain subscribers on " + p).isZero();
        }
      }
      long released = System.nanoTime();
      held.release();
      Lease got = waiting.get(10, TimeUnit.SECONDS);
      // the waiter was told to look again after the holder's 30 s lease, and its recheck is 1 h:
      // only the release notification can wake it this early
      assertThat(Duration.ofNanos(System.nanoTime() - released))
          .as("release to grant, with a recheck of 1h")
          .isLessThan(Duration.ofSeconds(5));
      got.close();
    }
  }

  private static long shardSubscribers(int port, String channel) {
    try (Jedis j = CLUSTER.cluster().admin(port)) {
      Object reply =
          j.sendCommand(redis.clients.jedis.Protocol.Command.PUBSUB, "SHARDNUMSUB", channel);
      List<?> pair = (List<?>) reply;
      return (Long) pair.get(1);
    }
  }

  @Order(4)
  @Test
  void waitReplicasWaitsOnTheSlotsPrimaryAndRefusesWhenItsReplicaIsFrozen() throws Exception {
    String name = "wait-on-slot";
    int owner = CLUSTER.cluster().primaryOf(KEYS.owner(name));
    int replica;
    try (Jedis primary = CLUSTER.cluster().admin(owner)) {
      String info = primary.info("replication");
      replica = Integer.parseInt(info.replaceAll("(?s).*slave0:ip=[^,]*,port=(\\d+).*", "$1"));
    }
    // the grant the replica acknowledges is waited for up to 5 s: a clean run at 6af6fac, beside
    // another, saw the live replica take longer than 200ms to acknowledge; the refusal is timed
    // with 200ms
    try (Jedis primary = CLUSTER.cluster().admin(owner);
        LockClient acknowledged =
            Locks.connect(CLUSTER.cluster().uri() + "?wait-replicas=1&wait-timeout=5s");
        LockClient client =
            Locks.connect(CLUSTER.cluster().uri() + "?wait-replicas=1&wait-timeout=200ms");
        LockClient plain = Locks.connect(CLUSTER.cluster().uri())) {
      plain.lock(name).acquire(Duration.ofSeconds(5)).close();
      acknowledged.lock(name).acquire(Duration.ofSeconds(5)).close(); // the replica acknowledges
      CLUSTER.cluster().pause(replica);
      try {
        long start = System.nanoTime();
        assertThatThrownBy(() -> client.lock(name).acquire(Duration.ofSeconds(5)))
            .isInstanceOf(BackendUnavailableException.class)
            .hasMessageContaining("only 0 of the 1 replica(s)");
        // the slot's primary's WAIT ran out its 200ms before the refusal
        assertThat(Duration.ofNanos(System.nanoTime() - start))
            .as("time to refuse")
            .isBetween(Duration.ofMillis(200), Duration.ofSeconds(3));
        assertThat(primary.exists(KEYS.owner(name)))
            .as("the refused grant was given back")
            .isFalse();
        Optional<Lease> taken = plain.lock(name).tryAcquire();
        assertThat(taken)
            .as("a grant without wait-replicas while the replica is frozen")
            .isPresent();
        taken.get().close();
      } finally {
        CLUSTER.cluster().resume(replica);
      }
    }
  }

  @Order(5)
  @Test
  void aWaiterIsWokenByAReleaseAfterTheSlotsReplicaIsPromoted() throws Exception {
    String name = "failover-wake";
    try (LockClient holder = Locks.connect(CLUSTER.cluster().uri() + "?lease=30s");
        LockClient waiter = Locks.connect(CLUSTER.cluster().uri() + "?recheck=1h&lease=30s")) {
      Lease held = holder.lock(name).acquire(Duration.ofSeconds(5));
      int primary = CLUSTER.cluster().primaryOf(KEYS.owner(name));
      try (Jedis j = CLUSTER.cluster().admin(primary)) {
        assertThat(j.waitReplicas(1, 2000)).as("the grant reached the replica").isEqualTo(1);
      }
      CompletableFuture<Lease> waiting = waiter.lock(name).acquireAsync(Duration.ofSeconds(60));
      Thread.sleep(300);
      CLUSTER.cluster().kill(primary);
      CLUSTER.cluster().awaitPromoted(KEYS.owner(name), primary, Duration.ofSeconds(30));
      assertThat(waiting).as("the waiter while the holder still holds").isNotDone();
      RedisSentinelIT.awaitReachable(holder, name + "-probe");
      long released = System.nanoTime();
      assertThat(held.release()).as("the holder's release on the promoted replica").isTrue();
      Lease got = waiting.get(15, TimeUnit.SECONDS);
      assertThat(Duration.ofNanos(System.nanoTime() - released))
          .as("release to grant after the failover")
          .isLessThan(Duration.ofSeconds(10));
      assertThat(got.fencingToken()).isGreaterThan(held.fencingToken());
      got.close();
    }
  }
}
