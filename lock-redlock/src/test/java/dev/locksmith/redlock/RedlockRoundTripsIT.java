package dev.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.LeaseLostException;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;

/**
 * The protocol's cost in round trips, counted per server, never timed; and the fence written back
 * to a majority.
 */
class RedlockRoundTripsIT {
  private static RedlockServers servers;

  @BeforeAll
  static void startServers() {
    servers = RedlockServers.start("round-trips", 5);
  }

  @AfterAll
  static void stopServers() {
    servers.close();
  }

  private static RedlockBackend open(String clientId) {
    BackendConfig config = new BackendConfig(LockUri.parse(servers.uri()), Map.of(), List.of());
    BackendContext context =
        new BackendContext() {
          @Override
          public String clientId() {
            return clientId;
          }

          @Override
          public Duration recheck() {
            return Duration.ofSeconds(1);
          }

          @Override
          public void leaseLost(String ownerId, LeaseLostException.Reason reason, String detail) {}

          @Override
          public void allLeasesLost(String detail) {}

          @Override
          public void leaseValidUntil(String ownerId, long validUntilNanos) {}
        };
    return (RedlockBackend) new RedlockLockProvider().open(config, context);
  }

  private static long roundTrips(RedlockBackend backend) {
    return backend.members().stream().mapToLong(m -> m.node.roundTrips()).sum();
  }

  private static void awaitEqual(String what, long expected, LongSupplier actual)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (actual.getAsLong() != expected) {
      if (System.nanoTime() - deadline > 0) {
        fail(what + ": expected " + expected + " but was " + actual.getAsLong());
      }
      Thread.sleep(5);
    }
  }

  @Test
  void uncontendedAcquireAndReleaseCostOneScriptPerServerEach() throws Exception {
    try (RedlockBackend backend = open("rt-1")) {
      Duration lease = Duration.ofSeconds(10);
      long before = roundTrips(backend);
      long pollStart = System.nanoTime();
      Poll poll = backend.attempt("one-round", "rt-1:1", lease, () -> {}).poll();
      long pollEnd = System.nanoTime();
      assertThat(poll.isGranted()).isTrue();
      long drift = TimeUnit.MILLISECONDS.toNanos(102); // 10s * 0.01 + 2ms
      assertThat(poll.validUntilNanos(pollStart, lease.toNanos()))
          .as("validity: from the round's start, the lease less drift")
          .isBetween(pollStart + lease.toNanos() - drift, pollEnd + lease.toNanos() - drift);
      awaitEqual(
          "round trips of an uncontended acquire on 5 servers",
          5,
          () -> roundTrips(backend) - before);
      assertThat(
              backend.release(
                  new BackendLease(
                      "one-round", "rt-1:1", poll.fencingToken(), lease, poll.state())))
          .isTrue();
      awaitEqual(
          "round trips of an uncontended acquire and release on 5 servers",
          10,
          () -> roundTrips(backend) - before);
    }
  }

  @Test
  void renewingThreeThousandLeasesCostsThreePipelinesPerServer() throws Exception {
    try (RedlockBackend backend = open("rt-2")) {
      Duration lease = Duration.ofSeconds(30);
      List<BackendLease> leases = new ArrayList<>();
      for (int i = 0; i < 3000; i++) {
        Poll poll = backend.attempt("batch/" + i, "rt-2:" + i, lease, () -> {}).poll();
        assertThat(poll.isGranted()).as("lock %d", i).isTrue();
        leases.add(
            new BackendLease("batch/" + i, "rt-2:" + i, poll.fencingToken(), lease, poll.state()));
      }
      long before = roundTrips(backend);
      List<Renewal> outcomes = backend.renew(leases);
      assertThat(outcomes).hasSize(3000).allMatch(r -> r.kind() == Renewal.Kind.RENEWED);
      awaitEqual(
          "round trips to renew 3,000 leases on 5 servers", 15, () -> roundTrips(backend) - before);
      try (Jedis admin = servers.get(3).admin()) {
        // renew() returns once a majority answered; this server's pipeline may still be on its way
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (admin.pttl(RedlockServers.KEYS.owner("batch/17")) <= 30_000
            && System.nanoTime() - deadline < 0) {
          Thread.sleep(5);
        }
        assertThat(admin.pttl(RedlockServers.KEYS.owner("batch/17")))
            .as("TTL after renewal: lease + drift (30.302s)")
            .isGreaterThan(30_000);
      }
      for (BackendLease l : leases) {
        backend.release(l);
      }
    }
  }

  @Test
  void theTokenIsTheHighestFenceAndIsWrittenBackToAMajority() throws Exception {
    String name = "fence-behind";
    // A majority is ahead, as an earlier holder's write-back leaves it; the other two must catch
    // up. (Not a single server: a round decides on the first majority to answer, which need not
    // include it, and the token is only promised to exceed what a majority has seen.)
    for (int i = 1; i <= 3; i++) {
      try (Jedis admin = servers.get(i).admin()) {
        admin.set(RedlockServers.KEYS.fenceCounter(name), "100");
      }
    }
    try (RedlockBackend backend = open("rt-3")) {
      Duration lease = Duration.ofSeconds(10);
      Poll poll = backend.attempt(name, "rt-3:1", lease, () -> {}).poll();
      assertThat(poll.fencingToken()).isEqualTo(101);
      int atLeast = 0;
      for (int i = 0; i < 5; i++) {
        if (servers.fence(i, name) >= 101) {
          atLeast++;
        }
      }
      assertThat(atLeast)
          .as("servers whose fence is at least the token when the lock counts as held")
          .isGreaterThanOrEqualTo(3);
      backend.release(new BackendLease(name, "rt-3:1", poll.fencingToken(), lease, poll.state()));
      Poll next = backend.attempt(name, "rt-3:2", lease, () -> {}).poll();
      assertThat(next.fencingToken()).isEqualTo(102);
      backend.release(new BackendLease(name, "rt-3:2", next.fencingToken(), lease, next.state()));
    }
  }

  @Test
  void theUpgradeFromPerNameCountersKeepsTokensAboveTheOldOnes() throws Exception {
    String name = "legacy-fence";
    // a majority remembers the token 500 in the per-name counters of the version before slot
    // counters
    for (int i = 0; i < 5; i++) {
      try (Jedis admin = servers.get(i).admin()) {
        admin.del(RedlockServers.KEYS.fenceCounter(name));
        if (i < 3) {
          admin.set(RedlockServers.KEYS.legacyFence(name), "500");
        }
      }
    }
    try (RedlockBackend backend = open("rt-5")) {
      Duration lease = Duration.ofSeconds(10);
      Poll poll = backend.attempt(name, "rt-5:1", lease, () -> {}).poll();
      assertThat(poll.fencingToken())
          .as("every majority meets a server that folds 500 into its slot counter")
          .isEqualTo(501);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      for (int i = 0; i < 3; i++) {
        while (true) {
          try (Jedis admin = servers.get(i).admin()) {
            if (!admin.exists(RedlockServers.KEYS.legacyFence(name))) {
              break;
            }
          }
          if (System.nanoTime() - deadline > 0) {
            fail(
                "server %d still has the per-name counter %s after the grant",
                i, RedlockServers.KEYS.legacyFence(name));
          }
          Thread.sleep(10);
        }
      }
      backend.release(new BackendLease(name, "rt-5:1", poll.fencingToken(), lease, poll.state()));
      Poll next = backend.attempt(name, "rt-5:2", lease, () -> {}).poll();
      assertThat(next.fencingToken()).isGreaterThan(501);
      backend.release(new BackendLease(name, "rt-5:2", next.fencingToken(), lease, next.state()));
    }
  }
}
