package dev.locksmith.redis;

import dev.locksmith.Guarantees.Fault;
import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.compare.Comparison;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * A real redis-server and its fault hooks, as a target of the fault comparison (lock-compare runs
 * it beside the other backends). Shipped in the test-jar.
 */
public final class RedisComparisonTarget implements AutoCloseable {
  private final RedisServer redis;
  private final boolean aof;
  private final boolean fakeClock;

  /** A server without persistence, as the backend's declaration assumes: every scenario. */
  public RedisComparisonTarget() {
    this(RedisServer.start("compare-redis"), false);
  }

  private RedisComparisonTarget(RedisServer redis, boolean aof) {
    this(redis, aof, false);
  }

  private RedisComparisonTarget(RedisServer redis, boolean aof, boolean fakeClock) {
    this.redis = redis;
    this.aof = aof;
    this.fakeClock = fakeClock;
  }

  /**
   * @return a server whose wall clock is shifted ({@link RedisServer#startWithFakeClock}), shown as
   *     "redis+faketime", for the clock jump alone (its hook moves that server's wall clock
   *     forward, nothing else's): Redis expires keys by its wall clock; the plain target covers the
   *     other scenarios
   */
  public static RedisComparisonTarget withFakeClock() {
    return new RedisComparisonTarget(
        RedisServer.startWithFakeClock("compare-redis-faketime"), false, true);
  }

  /**
   * @return a server that persists every write before answering ({@code --appendonly yes
   *     --appendfsync always}), shown as "redis+aof", for the restart scenario alone: the other
   *     scenarios do not depend on persistence and the plain target covers them
   */
  public static RedisComparisonTarget persistent() {
    return new RedisComparisonTarget(RedisServer.startWithAof("compare-redis-aof"), true);
  }

  /**
   * @return the target: redis:// on the running server, with pause, kill/restart and partition
   *     hooks
   */
  public Comparison.Target target() {
    if (fakeClock) {
      FaultHooks hooks =
          new FaultHooks() {
            @Override
            public void jumpServerClock(Duration jump) {
              redis.jumpClock(jump);
            }
          };
      return Comparison.Target.of("redis+faketime", redis.uri(), hooks, Duration.ZERO)
          .only(Comparison.Scenario.CLOCK_JUMP);
    }
    if (!aof) {
      return Comparison.Target.of("redis", redis.uri(), hooks(redis), Duration.ZERO)
          .coveredBy("redis+faketime", Comparison.Scenario.CLOCK_JUMP);
    }
    // The backend cannot see how the server persists, so it declares the restart unsafe for
    // every server; FAULTS.md's row 4 is about a server without persistence, and the Redis
    // distributed-lock page names fsync=always as what keeps a lock across a restart.
    return Comparison.Target.of("redis+aof", redis.uri(), hooks(redis), Duration.ZERO)
        .withPrediction(
            Fault.SERVER_RESTART, "S with appendfsync always (lock and fence counter kept)")
        .only(Comparison.Scenario.SERVER_RESTART);
  }

  /**
   * What the kit's {@code revoke(name)} hook deletes: the lock's owner key, and the live leases of
   * the semaphore and the read-write lock of that name (with the semaphore's count), as a server
   * that lost them would. All in one slot, so one DEL on the slot's primary takes them.
   *
   * @param keys the keys of the namespace the kit's clients use
   * @param name the name given to revoke
   * @return the keys to delete
   */
  static String[] revokedKeys(RedisKeys keys, String name) {
    return new String[] {
      keys.owner(name),
      keys.semaphoreLeases(name),
      keys.semaphorePermits(name),
      keys.semaphoreTokens(name),
      keys.readLeases(name),
      keys.writeLeases(name),
      keys.readTokens(name),
      keys.writeTokens(name)
    };
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
