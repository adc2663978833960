package dev.locksmith.redis;

import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisSettings;
import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.LockCompatibilityKit;
import java.time.Duration;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Jedis;

/**
 * The whole compatibility kit on a Sentinel set (a primary, two replicas, three Sentinels) through
 * {@code redis-sentinel://}. The Sentinels' down-after is a minute, so pausing the primary (rule
 * 14.3) never triggers a failover here; failovers are measured by lock-compare.
 */
class RedisSentinelCompatibilityIT extends LockCompatibilityKit {
  @RegisterExtension
  static final RedisSentinelExtension SENTINELS =
      new RedisSentinelExtension("kit-sentinel", Duration.ofSeconds(60));

  private static final RedisKeys KEYS = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE);

  private static RedisSentinelSet set() {
    return SENTINELS.set();
  }

  @Override
  protected String uri() {
    return set().uri();
  }

  @Override
  protected FaultHooks faults() {
    RedisSentinelSet s = set();
    return new FaultHooks() {
      @Override
      public void revoke(String lockName) {
        try (Jedis primary = s.primary()) {
          primary.del(RedisComparisonTarget.revokedKeys(KEYS, lockName));
        }
      }

      @Override
      public void pauseServer() {
        s.pausePrimary();
      }

      @Override
      public void resumeServer() {
        s.resumeAll();
      }
    };
  }
}
