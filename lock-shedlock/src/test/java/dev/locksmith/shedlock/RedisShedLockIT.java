package dev.locksmith.shedlock;

import org.junit.jupiter.api.DisplayName;

/** ShedLock's provider kit and this adapter's rules on Redis. */
@DisplayName("ShedLock over Redis")
class RedisShedLockIT extends ShedLockContract {
  @Override
  protected String uri() throws Exception {
    return RedisServers.uri();
  }
}
