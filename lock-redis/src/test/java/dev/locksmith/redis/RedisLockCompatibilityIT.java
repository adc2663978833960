package dev.locksmith.redis;

import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisSettings;
import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.LockCompatibilityKit;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Jedis;

/** The whole compatibility kit against a real redis-server. */
class RedisLockCompatibilityIT extends LockCompatibilityKit {
  @RegisterExtension static final RedisServerExtension REDIS = RedisServerExtension.single("kit");
  private static final RedisKeys KEYS = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE);

  @Override
  protected String uri() {
    return REDIS.uri();
  }

  @Override
  protected FaultHooks faults() {
    RedisServer redis = REDIS.server();
    return RedisComparisonTarget.hooks(redis)
        .withRevoke(
            lockName -> {
              try (Jedis admin = redis.admin()) {
                admin.del(RedisComparisonTarget.revokedKeys(KEYS, lockName));
              }
            });
  }
}
