package dev.locksmith.bench;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPool;
import redis.clients.jedis.JedisPoolConfig;
import redis.clients.jedis.params.SetParams;

/**
 * A diagnostic variant of the raw floor: the same two commands, but each borrowed from a JedisPool
 * of 8 configured as lock-redis configures its own, shared by every thread. Its distance from
 * {@code raw-redis} is what the pool costs; not part of the reported run.
 */
@SuppressWarnings("deprecation") // JedisPool, as lock-redis uses it
final class PooledRawRedisImpl implements LockImpl {
  private static final AtomicLong SEQ = new AtomicLong();
  private final JedisPool pool;
  private final String cadSha;

  PooledRawRedisImpl(String endpoint) {
    JedisPoolConfig config = new JedisPoolConfig();
    config.setMaxTotal(8);
    config.setMaxIdle(8);
    config.setMinIdle(0);
    config.setBlockWhenExhausted(true);
    config.setTestOnBorrow(false);
    config.setTestWhileIdle(true);
    config.setJmxEnabled(false);
    pool =
        new JedisPool(
            config,
            HostAndPort.from(endpoint),
            DefaultJedisClientConfig.builder().socketTimeoutMillis(5000).build());
    try (Jedis j = pool.getResource()) {
      cadSha = j.scriptLoad(RawRedisImpl.CAD);
    }
  }

  @Override
  public Held acquire(String name, Duration timeout) {
    String key = "rawp:" + name;
    String token = "p" + SEQ.incrementAndGet();
    String ok;
    try (Jedis j = pool.getResource()) {
      ok = j.set(key, token, SetParams.setParams().nx().px(30_000));
    }
    if (!"OK".equals(ok)) {
      return null;
    }
    return () -> {
      try (Jedis j = pool.getResource()) {
        j.evalsha(cadSha, List.of(key), List.of(token));
      }
    };
  }

  @Override
  public void close() {
    pool.close();
  }
}
