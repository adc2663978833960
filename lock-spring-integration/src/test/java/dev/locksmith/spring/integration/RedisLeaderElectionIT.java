package dev.locksmith.spring.integration;

import dev.locksmith.redis.RedisServerExtension;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Leader election over Redis. */
@DisplayName("Spring Integration leader election over Redis")
class RedisLeaderElectionIT extends LeaderElectionContract {
  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("spring-integration");

  @Override
  protected String uri() {
    return REDIS.uri();
  }

  @Override
  protected Duration expirySlack() {
    return Duration.ZERO;
  }
}
