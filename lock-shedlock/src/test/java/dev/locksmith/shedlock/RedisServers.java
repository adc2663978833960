package dev.locksmith.shedlock;

import dev.locksmith.redis.RedisServer;

/** One redis-server of lock-redis's test fixture for this test JVM, stopped when it exits. */
final class RedisServers {
  private static RedisServer server;

  private RedisServers() {}

  static synchronized String uri() {
    if (server == null) {
      server = RedisServer.start("shedlock");
      RedisServer started = server;
      Runtime.getRuntime().addShutdownHook(new Thread(started::close));
    }
    return server.uri();
  }
}
