package dev.locksmith.bench;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.SetParams;

/**
 * The raw Redis lock protocol on one plain Jedis connection per thread: {@code SET key token NX PX}
 * to take it, a Lua compare-and-delete to give it back. Nothing else: no fencing, no renewal, no
 * waiting beyond what the mode says.
 *
 * <p>Two modes: the floor (one SET attempt; the benchmarks that use it never contend), and the
 * hand-written loop of the seed articles, which sleeps 50-150 ms after every failed SET.
 */
final class RawRedisImpl implements LockImpl {
  static final String CAD =
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return"
          + " 0";
  private static final AtomicLong CLIENTS = new AtomicLong();

  private final String endpoint;
  private final boolean sleepLoop;
  private final Jedis jedis;
  private final String cadSha;
  private final String tokenPrefix;
  private long seq;

  RawRedisImpl(String endpoint, boolean sleepLoop) {
    this.endpoint = endpoint;
    this.sleepLoop = sleepLoop;
    HostAndPort hp = HostAndPort.from(endpoint);
    this.jedis =
        new Jedis(
            hp,
            DefaultJedisClientConfig.builder()
                .socketTimeoutMillis(5000)
                .connectionTimeoutMillis(2000)
                .build());
    this.cadSha = jedis.scriptLoad(CAD);
    this.tokenPrefix = ProcessHandle.current().pid() + "-" + CLIENTS.incrementAndGet() + ":";
  }

  @Override
  public Held acquire(String name, Duration timeout) throws Exception {
    String key = "raw:" + name;
    String token = tokenPrefix + (++seq);
    long deadline = timeout == null ? Long.MAX_VALUE : System.nanoTime() + timeout.toNanos();
    SetParams nxpx = SetParams.setParams().nx().px(30_000);
    while (true) {
      if ("OK".equals(jedis.set(key, token, nxpx))) {
        return () -> jedis.evalsha(cadSha, List.of(key), List.of(token));
      }
      if (!sleepLoop || System.nanoTime() - deadline >= 0) {
        return null;
      }
      // the seed articles' loop: sleep a random 50-150 ms and try again
      Thread.sleep(ThreadLocalRandom.current().nextLong(50, 151));
    }
  }

  @Override
  public LockImpl forThread() {
    return new RawRedisImpl(endpoint, sleepLoop);
  }

  @Override
  public void close() {
    jedis.close();
  }
}
