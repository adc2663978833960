package dev.locksmith.redis;

import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisSettings;
import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.LockCompatibilityKit;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Jedis;

/**
 * The whole compatibility kit on a 6-node Redis Cluster (three primaries, three replicas) through
 * {@code redis-cluster://}. Pausing "the server" (rule 14.3) pauses all three primaries, whichever
 * holds the lock's slot; the node timeout is a minute, so no failover happens here (lock-compare
 * measures failovers).
 */
class RedisClusterCompatibilityIT extends LockCompatibilityKit {
  @RegisterExtension
  static final RedisClusterExtension CLUSTER =
      new RedisClusterExtension("kit", Duration.ofSeconds(60));

  private static List<Integer> paused = List.of();
  private static final RedisKeys KEYS = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE);

  private static RedisClusterSet cluster() {
    return CLUSTER.cluster();
  }

  @Override
  protected String uri() {
    return cluster().uri();
  }

  @Override
  protected FaultHooks faults() {
    RedisClusterSet c = cluster();
    return new FaultHooks() {
      @Override
      public void revoke(String lockName) {
        String key = KEYS.owner(lockName);
        try (Jedis primary = c.admin(c.primaryOf(key))) {
          primary.del(RedisComparisonTarget.revokedKeys(KEYS, lockName));
        }
      }

      @Override
      public synchronized void pauseServer() {
        paused = c.primaries();
        for (int port : paused) {
          c.pause(port);
        }
      }

      @Override
      public synchronized void resumeServer() {
        for (int port : paused) {
          c.resume(port);
        }
        paused = List.of();
      }
    };
  }
}
