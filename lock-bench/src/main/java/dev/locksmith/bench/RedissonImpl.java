package dev.locksmith.bench;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Redisson's {@link RLock} with its default settings: either {@code lock()} with the watchdog
 * renewing a 30 s lease, or {@code tryLock} with an explicit 30 s lease and no watchdog.
 */
final class RedissonImpl implements LockImpl {
  private final RedissonClient redisson;
  private final boolean watchdog;

  RedissonImpl(String endpoint, boolean watchdog) {
    this(endpoint, watchdog, 0);
  }

  /**
   * @param watchdogMillis the watchdog's lease (renewed every third of it); 0 for Redisson's
   *     default of 30 s
   */
  RedissonImpl(String endpoint, boolean watchdog, long watchdogMillis) {
    Config config = new Config();
    config.useSingleServer().setAddress("redis://" + endpoint);
    if (watchdogMillis > 0) {
      config.setLockWatchdogTimeout(watchdogMillis);
    }
    this.redisson = Redisson.create(config);
    this.watchdog = watchdog;
  }

  /**
   * @param seeds {@code host:port,host:port,...} of Cluster nodes
   * @return Redisson on the Cluster ({@code useClusterServers()}), with the settings of {@code
   *     redisson-lock}
   */
  static RedissonImpl cluster(String seeds) {
    Config config = new Config();
    org.redisson.config.ClusterServersConfig servers = config.useClusterServers();
    for (String seed : seeds.split(",")) {
      servers.addNodeAddress("redis://" + seed.trim());
    }
    return new RedissonImpl(Redisson.create(config), true);
  }

  private RedissonImpl(RedissonClient redisson, boolean watchdog) {
    this.redisson = redisson;
    this.watchdog = watchdog;
  }

  @Override
  public Held acquire(String name, Duration timeout) throws Exception {
    RLock lock = redisson.getLock("redisson:" + name);
    boolean got;
    if (watchdog) {
      if (timeout == null) {
        lock.lock();
        got = true;
      } else {
        got = lock.tryLock(timeout.toMillis(), TimeUnit.MILLISECONDS);
      }
    } else {
      long wait = timeout == null ? Long.MAX_VALUE / 4 : timeout.toMillis();
      got = lock.tryLock(wait, 30_000, TimeUnit.MILLISECONDS);
    }
    return got ? lock::unlock : null;
  }

  @Override
  public void close() {
    redisson.shutdown();
  }
}
