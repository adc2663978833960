package dev.locksmith.redis;

import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisNode;
import dev.locksmith.redis.internal.RedisSettings;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import java.util.Set;

/**
 * The {@code redis://} and {@code rediss://} (TLS) backend: locks on one Redis server, through
 * Jedis.
 *
 * <pre>{@code
 * try (LockClient client = Locks.connect("redis://app:secret@redis.internal:6379/0?lease=10s&namespace=orders:")) {
 *   try (Lease lease = client.lock("order-42").acquire(Duration.ofSeconds(5))) {
 *     store.write(order, lease.fencingToken());
 *   }
 * }
 * }</pre>
 *
 * <p>A lock is the key {@code {<namespace><name>}:owner} (value: the holder's owner id, TTL: the
 * lease) and {@code {<namespace><name>}:token} (the holder's fencing token, same TTL); tokens come
 * from one counter per hash slot, {@code <namespace>fence:{<slot tag>}}; a release is published on
 * {@code {<namespace><name>}:released}. Options: {@code namespace} (default {@code locksmith:}),
 * {@code database} (or the URI's path), {@code user}, {@code password} (or the URI's user info),
 * {@code tls} (on for {@code rediss://}), {@code connect-timeout} and {@code command-timeout}
 * (default 2s each), {@code pool-size} (default 8), and {@code wait-replicas} / {@code
 * wait-timeout} (WAIT for that many replicas after a grant; default 0 / 100ms).
 *
 * <p>{@code redis-sentinel://[user:password@]s1:26379,s2:26379/master[/database]} finds the primary
 * through Sentinels ({@code sentinel-user} / {@code sentinel-password} are the Sentinels' own
 * credentials, the URI's are the data nodes'); {@code redis-cluster://n1:7000,n2:7001} uses a Redis
 * Cluster, with release notifications over sharded pub/sub. {@code rediss-sentinel://} and {@code
 * rediss-cluster://} use TLS. Found by {@link java.util.ServiceLoader}; users do not call it
 * directly.
 */
public final class RedisLockProvider implements LockProvider {

  /** Made by {@link java.util.ServiceLoader}. */
  public RedisLockProvider() {}

  /**
   * @return {@code redis}, {@code rediss}, and the Sentinel and Cluster forms of each
   */
  @Override
  public Set<String> schemes() {
    return Set.of(
        "redis", "rediss", "redis-sentinel", "rediss-sentinel", "redis-cluster", "rediss-cluster");
  }

  /**
   * @return the options listed in the class comment
   */
  @Override
  public Set<String> optionNames() {
    return RedisSettings.TOPOLOGY_OPTIONS;
  }

  /**
   * Checks every setting, then connects and verifies the server (PING, SCRIPT LOAD) within the
   * connect timeout.
   *
   * @throws dev.locksmith.LockConfigurationException listing every bad setting, before connecting
   * @throws dev.locksmith.BackendUnavailableException naming host:port (password redacted) if the
   *     server cannot be used
   */
  @Override
  public LockBackend open(BackendConfig config, BackendContext context) {
    RedisSettings settings = RedisSettings.read(config);
    config.check();
    RedisNode node = RedisNode.openAny(settings);
    try {
      return new RedisBackend(node, new RedisKeys(settings.namespace()), context);
    } catch (RuntimeException e) {
      node.close();
      throw e;
    }
  }
}
