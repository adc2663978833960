package dev.locksmith.redis;

import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisSettings;
import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.LockCompatibilityKit;
import org.junit.jupiter.api.AfterAll;
import redis.clients.jedis.Jedis;

/** The whole compatibility kit against a real redis-server. */
class RedisLockCompatibilityIT extends LockCompatibilityKit {
  private static RedisServer server;
  private static final RedisKeys KEYS = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE);

  private static synchronized RedisServer server() {
    if (server == null) {
      server = RedisServer.start("kit");
    }
    return server;
  }

  @AfterAll
  static void stopServer() {
    if (server != null) {
      server.close();
      server = null;
    }
  }

  @Override
  protected String uri() {
    return server().uri();
  }

  @Override
  protected FaultHooks faults() {
    RedisServer redis = server();
    return RedisComparisonTarget.hooks(redis)
        .withRevoke(
            lockName -> {
              try (Jedis admin = redis.admin()) {
                admin.del(RedisComparisonTarget.revokedKeys(KEYS, lockName));
              }
            });
  }
}
