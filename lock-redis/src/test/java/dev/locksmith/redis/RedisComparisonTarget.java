package dev.locksmith.redis;

import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.compare.Comparison;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * A real redis-server and its fault hooks, as a target of the fault comparison (lock-compare
 * runs it beside the other backends). Shipped in the test-jar.
 */
public final class RedisComparisonTarget implements AutoCloseable {
  private final RedisServer redis = RedisServer.start("compare-redis");

  /** @return the target: redis:// on the running server, with pause, kill/restart and partition hooks */
  public Comparison.Target target() {
    return Comparison.Target.of("redis", redis.uri(), hooks(redis), Duration.ZERO);
  }

  /** The server hooks of a test server; the kit adds revocation to them. */
  static FaultHooks hooks(RedisServer redis) {
    return new FaultHooks() {
      @Override
      public void pauseServer() {
        redis.pause();
      }

      @Override
      public void resumeServer() {
        redis.resume();
      }

      @Override
      public void killServer() {
        redis.kill();
      }

      @Override
      public void restartServer() {
        redis.restart();
      }

      @Override
      public InetSocketAddress serverAddress() {
        return new InetSocketAddress("127.0.0.1", redis.port());
      }

      @Override
      public String uriVia(InetSocketAddress proxy) {
        return "redis://127.0.0.1:" + proxy.getPort();
      }
    };
  }

  @Override
  public void close() {
    redis.close();
  }
}
