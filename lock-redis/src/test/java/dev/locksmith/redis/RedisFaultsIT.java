package dev.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisSettings;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.args.ClientType;
import redis.clients.jedis.params.ClientKillParams;

/** Redis-specific faults: a restart that forgets every lock, a dropped subscriber connection. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisFaultsIT {
  private RedisServer server;

  @BeforeEach
  void startServer() {
    server = RedisServer.start("faults");
  }

  @AfterEach
  void stopServer() {
    server.close();
  }

  @Test
  void serverRestartWithoutPersistenceReportsLossAndResetsTokens() throws Exception {
    try (LockClient client = Locks.connect(server.uri() + "?lease=1s")) {
      long before = 0;
      for (int i = 0; i < 3; i++) {
        try (Lease l = client.lock("restarted").acquire(Duration.ofSeconds(5))) {
          before = l.fencingToken();
        }
      }
      Lease held = client.lock("restarted").acquire(Duration.ofSeconds(5));
      assertThat(held.fencingToken()).isEqualTo(4);
      server.kill();
      server.restart();
      LeaseLostException loss = held.lost().toCompletableFuture().get(5, TimeUnit.SECONDS);
      assertThat(loss.reason())
          .as("a renewal after the restart finds the key gone: %s", loss.getMessage())
          .isIn(LeaseLostException.Reason.TAKEN, LeaseLostException.Reason.RENEWAL_FAILED);
      assertThat(held.isValid()).isFalse();
      // the declared SERVER_RESTART = UNSAFE, observed: the fence counter is gone, tokens start
      // over
      try (Lease next = client.lock("restarted").acquire(Duration.ofSeconds(5))) {
        assertThat(next.fencingToken())
            .as("token after a restart without persistence (before it: %d)", before)
            .isEqualTo(1);
      }
    }
  }

  @Test
  void waiterStillAcquiresWhenTheSubscriberConnectionIsKilled() throws Exception {
    // a long lease and recheck: only a release notification (or the resubscription) can wake the
    // waiter in time
    String slow = server.uri() + "?lease=30s&recheck=60s";
    try (LockClient holder = Locks.connect(slow);
        LockClient waiting = Locks.connect(slow);
        Jedis admin = server.admin()) {
      String channel = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE).releasedChannel("dropped");
      Lease first = holder.lock("dropped").acquire(Duration.ofSeconds(5));
      CompletableFuture<Lease> second =
          waiting.lock("dropped").acquireAsync(Duration.ofSeconds(50));
      await(
          "the waiter subscribes to the lock's channel",
          () -> admin.pubsubNumSub(channel).getOrDefault(channel, 0L) == 1);

      // 1: the connection is killed, comes back, and the next release still reaches the waiter
      admin.clientKill(ClientKillParams.clientKillParams().type(ClientType.PUBSUB));
      await(
          "the subscriber reconnects and subscribes again",
          () -> admin.pubsubNumSub(channel).getOrDefault(channel, 0L) == 1);
      long released = System.nanoTime();
      assertThat(first.release()).isTrue();
      Lease got = second.get(10, TimeUnit.SECONDS);
      assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released))
          .as("ms from release to grant, notified")
          .isLessThan(10_000);

      // 2: the connection is killed and the release happens before it is back: the message is lost,
      // and the resubscription wakes the waiter anyway, long before the 30s lease or the 60s
      // recheck
      CompletableFuture<Lease> third = holder.lock("dropped").acquireAsync(Duration.ofSeconds(50));
      await(
          "the next waiter subscribes",
          () -> admin.pubsubNumSub(channel).getOrDefault(channel, 0L) == 1);
      admin.clientKill(ClientKillParams.clientKillParams().type(ClientType.PUBSUB));
      assertThat(got.release()).isTrue();
      third.get(10, TimeUnit.SECONDS).release();
    }
  }

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        fail("expected within 10 s: " + what);
      }
      Thread.sleep(5);
    }
  }
}
