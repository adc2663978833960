package dev.locksmith.spring.integration;

import dev.locksmith.redis.RedisServer;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DisplayName;

/** Leader election over Redis. */
@DisplayName("Spring Integration leader election over Redis")
class RedisLeaderElectionIT extends LeaderElectionContract {
  private static RedisServer server;

  @Override
  protected String uri() {
    synchronized (RedisLeaderElectionIT.class) {
      if (server == null) {
        server = RedisServer.start("spring-integration");
      }
    }
    return server.uri();
  }

  @Override
  protected Duration expirySlack() {
    return Duration.ZERO;
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
  }
}
