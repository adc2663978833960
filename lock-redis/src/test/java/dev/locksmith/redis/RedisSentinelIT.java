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
import dev.locksmith.spi.RecordingContext;
import dev.locksmith.tck.ServerProcess;
import java.time.Duration;
import java.util.Optional;
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
 * {@code redis-sentinel://} on a real Sentinel set: bad URIs and unusable Sentinels, the {@code
 * wait-replicas} option (WAIT counted in the primary's INFO commandstats, a grant given back when
 * the replicas are frozen), and a waiter woken by a release after the primary was killed and the
 * Sentinels promoted a replica. The failover test runs last: it kills the primary.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RedisSentinelIT {
  private static final RedisKeys KEYS = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE);

  @RegisterExtension
  static final RedisSentinelExtension SENTINELS =
      new RedisSentinelExtension("sentinel-it", Duration.ofMillis(1000));

  static Stream<Arguments> cases() {
    String sentinels =
        SENTINELS
            .set()
            .uri()
            .substring("redis-sentinel://".length(), SENTINELS.set().uri().lastIndexOf('/'));
    int nobody = ServerProcess.freePort();
    int nobody2 = ServerProcess.freePort();
    Class<LockConfigurationException> config = LockConfigurationException.class;
    Class<BackendUnavailableException> unavailable = BackendUnavailableException.class;
    return Stream.of(
        bad(
            "no master name",
            config,
            connect("redis-sentinel://" + sentinels),
            "names no master",
            "redis-sentinel://"),
        bad(
            "empty master name",
            config,
            connect("redis-sentinel://" + sentinels + "/"),
            "names no master",
            "master-name"),
        bad(
            "no sentinels",
            config,
            connect("redis-sentinel:///mymaster"),
            "names no host",
            "sentinel1:26379"),
        bad(
            "empty host in the list",
            config,
            connect("redis-sentinel://127.0.0.1:1,,127.0.0.1:2/mymaster"),
            "hosts is empty"),
        bad(
            "bad port in the list",
            config,
            connect("redis-sentinel://127.0.0.1:99999/mymaster"),
            "'99999'",
            "1 to 65535"),
        bad(
            "sentinel named twice",
            config,
            connect("redis-sentinel://127.0.0.1:1,127.0.0.1:1/mymaster"),
            "127.0.0.1:1 twice"),
        bad(
            "database path abc",
            config,
            connect("redis-sentinel://" + sentinels + "/mymaster/abc"),
            "`database` was 'abc'",
            "0 to 9999"),
        bad(
            "empty sentinel password",
            config,
            connect("redis-sentinel://" + sentinels + "/mymaster?sentinel-password="),
            "`sentinel-password` was ''",
            "must not be empty"),
        bad(
            "sentinel user without password",
            config,
            connect("redis-sentinel://" + sentinels + "/mymaster?sentinel-user=ops"),
            "`sentinel-user` was 'ops'",
            "needs a `sentinel-password`"),
        bad(
            "sentinel password on redis://",
            config,
            connect("redis://127.0.0.1:6379?sentinel-password=hunter2-Q"),
            "`sentinel-password` was '****'",
            "only to redis-sentinel://"),
        bad(
            "wait-replicas -1",
            config,
            connect("redis-sentinel://" + sentinels + "/mymaster?wait-replicas=-1"),
            "`wait-replicas` was '-1'",
            "0 to 64"),
        bad(
            "wait-timeout 0ms",
            config,
            connect("redis-sentinel://" + sentinels + "/mymaster?wait-replicas=1&wait-timeout=0ms"),
            "`wait-timeout` was '0ms'",
            "1ms to 1m"),
        bad(
            "wait-timeout alone",
            config,
            connect("redis-sentinel://" + sentinels + "/mymaster?wait-timeout=50ms"),
            "`wait-timeout` was '50ms'",
            "`wait-replicas`"),
        bad(
            "rediss-sentinel without tls",
            config,
            connect("rediss-sentinel://" + sentinels + "/mymaster?tls=false"),
            "`tls` was 'false'",
            "always uses TLS"),
        bad(
            "unknown master",
            unavailable,
            connect(
                "redis-sentinel://:hunter2-Q@" + sentinels + "/no-such-master?connect-timeout=1s"),
            "no-such-master",
            "none of them monitors",
            "redis-sentinel://:****@"),
        bad(
            "unreachable sentinels",
            unavailable,
            connect(
                "redis-sentinel://:tok3n-Z@127.0.0.1:"
                    + nobody
                    + ",127.0.0.1:"
                    + nobody2
                    + "/mymaster?connect-timeout=500ms"),
            "127.0.0.1:" + nobody,
            "127.0.0.1:" + nobody2,
            "Sentinels",
            "mymaster",
            "500ms"),
        bad(
            "a data node given as Sentinel",
            unavailable,
            connect(
                "redis-sentinel://127.0.0.1:"
                    + SENTINELS.set().primaryPort()
                    + "/mymaster?connect-timeout=1s"),
            "127.0.0.1:" + SENTINELS.set().primaryPort(),
            "mymaster"));
  }

  @Order(1)
  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void refusedClearlyInTimeWithoutLeaks(BadInputCheck.Case c) {
    BadInputCheck.check(c, Duration.ofSeconds(10));
  }

  private static RedisBackend openBackend(String query) {
    dev.locksmith.spi.BackendConfig config =
        new dev.locksmith.spi.BackendConfig(
            dev.locksmith.spi.LockUri.parse(SENTINELS.set().uri()),
            query.isEmpty()
                ? java.util.Map.of()
                : java.util.Map.of("wait-replicas", "2", "wait-timeout", "2s"),
            java.util.List.of());
    return (RedisBackend) new RedisLockProvider().open(config, new RecordingContext("wait-test"));
  }

  @Order(3)
  @Test
  void waitReplicasAddsOneRoundTripToAGrantAndNoneToABusyPoll() throws Exception {
    try (RedisBackend plain = openBackend("");
        RedisBackend waiting = openBackend("?wait-replicas=2&wait-timeout=2s")) {
      long before = plain.node().roundTrips();
      assertThat(
              plain.attempt("rt-plain", "p-1", Duration.ofSeconds(10), () -> {}).poll().isGranted())
          .isTrue();
      assertThat(plain.node().roundTrips() - before)
          .as("round trips of a grant without wait-replicas")
          .isEqualTo(1);
      before = waiting.node().roundTrips();
      assertThat(
              waiting
                  .attempt("rt-wait", "w-1", Duration.ofSeconds(10), () -> {})
                  .poll()
                  .isGranted())
          .isTrue();
      assertThat(waiting.node().roundTrips() - before)
          .as("round trips of a grant with wait-replicas=2 (script, WAIT)")
          .isEqualTo(2);
      before = waiting.node().roundTrips();
      var busy = waiting.attempt("rt-plain", "w-2", Duration.ofSeconds(10), () -> {});
      assertThat(busy.poll().isGranted()).isFalse();
      busy.abandon();
      assertThat(waiting.node().roundTrips() - before)
          .as("round trips of a busy poll and its withdrawal with wait-replicas=2")
          .isEqualTo(2);
    }
  }

  @Order(4)
  @Test
  void aGrantTooFewReplicasAcknowledgeIsGivenBackAndFails() throws Exception {
    String name = "frozen-replicas";
    try (LockClient waiting =
            Locks.connect(SENTINELS.set().uri() + "?wait-replicas=1&wait-timeout=200ms");
        LockClient plain = Locks.connect(SENTINELS.set().uri());
        Jedis primary = SENTINELS.set().primary()) {
      SENTINELS.set().pauseReplicas();
      try {
        long start = System.nanoTime();
        assertThatThrownBy(() -> waiting.lock(name).acquire(Duration.ofSeconds(5)))
            .isInstanceOf(BackendUnavailableException.class)
            .hasMessageContaining("only 0 of the 1 replica(s)")
            .hasMessageContaining("`wait-replicas`")
            .hasMessageContaining("200ms");
        // the primary's WAIT ran out its 200ms before the refusal
        assertThat(Duration.ofNanos(System.nanoTime() - start))
            .as("time to refuse")
            .isBetween(Duration.ofMillis(200), Duration.ofSeconds(3));
        // Redis 7.0 counts a WAIT in commandstats when it times out (not when replicas answer in
        // time)
        assertThat(primary.exists(KEYS.owner(name)))
            .as("the refused grant was given back")
            .isFalse();
        // a lock set's one-script grant waits for the replicas too, and is given back whole
        java.util.List<String> set = java.util.List.of(name + "-a", name + "-b");
        assertThatThrownBy(() -> waiting.locks(set).acquire(Duration.ofSeconds(5)))
            .isInstanceOf(BackendUnavailableException.class)
            .hasMessageContaining("only 0 of the 1 replica(s)")
            .hasMessageContaining("given back");
        for (String n : set) {
          assertThat(primary.exists(KEYS.owner(n)))
              .as("'%s' of the refused set was given back", n)
              .isFalse();
        }
        // without the option the same grant is returned at once: replication is asynchronous
        Optional<Lease> taken = plain.lock(name).tryAcquire();
        assertThat(taken)
            .as("a grant without wait-replicas while the replicas are frozen")
            .isPresent();
        taken.get().close();
      } finally {
        SENTINELS.set().resumeAll();
      }
    }
  }

  /**
   * Waits until a client reaches the new primary: it learns of it from the Sentinels' {@code
   * +switch-master} (or, on a Cluster, the slot map) a moment after the promotion.
   */
  static void awaitReachable(LockClient client, String name) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (true) {
      try {
        client.lock(name).tryAcquire().ifPresent(Lease::close);
        return;
      } catch (BackendUnavailableException e) {
        if (System.nanoTime() > end) {
          throw e;
        }
        Thread.sleep(100);
      }
    }
  }

  @Order(5)
  @Test
  void aWaiterIsWokenByAReleaseAfterTheSentinelsPromoteAReplica() throws Exception {
    String name = "failover-wake";
    // the waiter's recheck is long: only a release notification can wake it in time
    try (LockClient holder = Locks.connect(SENTINELS.set().uri() + "?lease=30s");
        LockClient waiter = Locks.connect(SENTINELS.set().uri() + "?recheck=1h&lease=30s")) {
      Lease held = holder.lock(name).acquire(Duration.ofSeconds(5));
      try (Jedis primary = SENTINELS.set().primary()) {
        // make sure the grant reached both replicas before the primary dies
        assertThat(primary.waitReplicas(2, 2000)).isEqualTo(2);
      }
      CompletableFuture<Lease> waiting = waiter.lock(name).acquireAsync(Duration.ofSeconds(60));
      Thread.sleep(300); // let the waiter queue and subscribe before the primary dies
      int killed = SENTINELS.set().killPrimary();
      SENTINELS.set().awaitPromoted(killed, Duration.ofSeconds(30));
      assertThat(waiting).as("the waiter while the holder still holds").isNotDone();
      awaitReachable(holder, name + "-probe");
      long released = System.nanoTime();
      assertThat(held.release()).as("the holder's release on the promoted replica").isTrue();
      Lease got = waiting.get(15, TimeUnit.SECONDS);
      assertThat(Duration.ofNanos(System.nanoTime() - released))
          .as("time from the release to the waiter's grant")
          .isLessThan(Duration.ofSeconds(10));
      assertThat(got.fencingToken())
          .as("the waiter's token after the failover")
          .isGreaterThan(held.fencingToken());
      got.close();
    }
  }
}
