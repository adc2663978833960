package dev.locksmith.shedlock;

import dev.locksmith.redis.RedisServerExtension;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.extension.RegisterExtension;

/** ShedLock's provider kit and this adapter's rules on Redis. */
@DisplayName("ShedLock over Redis")
class RedisShedLockIT extends ShedLockContract {
  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.shared("shedlock");

  @Override
  protected String uri() throws Exception {
    return REDIS.uri();
  }
}
