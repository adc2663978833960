package dev.locksmith.bench;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * A set of {@code size} locks taken all or none, for the {@code sets} section ({@link SetsRun}):
 * the lock named {@code name} stands for the names {@code name/0} to {@code name/size-1}.
 * Locksmith's {@code client.locks(names)}; Redisson's {@code RedissonMultiLock} over that many
 * {@code RLock}s (a loop of single acquisitions, watchdog lease); Curator's {@code
 * InterProcessMultiLock} over that many {@code InterProcessMutex} paths (30 s session). One client
 * per JVM, shared by its threads.
 */
final class SetImpl implements LockImpl {
  /** Which library. */
  enum Kind {
    LOCKSMITH,
    REDISSON,
    CURATOR
  }

  private final Kind kind;
  private final int size;
  private final LockClient locksmith;
  private final RedissonClient redisson;
  private final CuratorFramework curator;
  private final Map<String, Object> sets = new ConcurrentHashMap<>();

  private SetImpl(
      Kind kind,
      int size,
      LockClient locksmith,
      RedissonClient redisson,
      CuratorFramework curator) {
    this.kind = kind;
    this.size = size;
    this.locksmith = locksmith;
    this.redisson = redisson;
    this.curator = curator;
  }

  static SetImpl locksmith(String uri, int size) {
    return new SetImpl(Kind.LOCKSMITH, size, Locks.connect(uri), null, null);
  }

  static SetImpl redisson(String endpoint, int size) {
    Config config = new Config();
    config.useSingleServer().setAddress("redis://" + endpoint);
    return new SetImpl(Kind.REDISSON, size, null, Redisson.create(config), null);
  }

  static SetImpl curator(String endpoint, int size) throws InterruptedException {
    CuratorFramework c =
        CuratorFrameworkFactory.newClient(
            endpoint, 30_000, 10_000, new ExponentialBackoffRetry(100, 3));
    c.start();
    if (!c.blockUntilConnected(20, TimeUnit.SECONDS)) {
      c.close();
      throw new IllegalStateException("Curator did not connect to " + endpoint + " within 20 s");
    }
    return new SetImpl(Kind.CURATOR, size, null, null, c);
  }

  private List<String> names(String name) {
    List<String> names = new ArrayList<>(size);
    for (int i = 0; i < size; i++) {
      names.add(name + "/" + i);
    }
    return names;
  }

  private Object set(String name) {
    return sets.computeIfAbsent(
        name,
        n -> {
          switch (kind) {
            case LOCKSMITH:
              return locksmith.locks(names(n));
            case REDISSON:
              {
                List<RLock> locks = new ArrayList<>(size);
                for (String each : names(n)) {
                  locks.add(redisson.getLock("redisson-set:" + each));
                }
                return redisson.getMultiLock(locks.toArray(new RLock[0]));
              }
            default:
              {
                List<String> paths = new ArrayList<>(size);
                for (String each : names(n)) {
                  paths.add("/curator-set/" + each);
                }
                return new InterProcessMultiLock(curator, paths);
              }
          }
        });
  }

  @Override
  public Held acquire(String name, Duration timeout) throws Exception {
    Object set = set(name);
    switch (kind) {
      case LOCKSMITH:
        {
          DistributedLock lock = (DistributedLock) set;
          if (timeout == null) {
            Lease lease = lock.acquire();
            return lease::close;
          }
          Optional<Lease> lease = lock.tryAcquire(timeout);
          return lease.isEmpty() ? null : lease.get()::close;
        }
      case REDISSON:
        {
          RLock lock = (RLock) set;
          if (timeout == null) {
            lock.lock();
          } else if (!lock.tryLock(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            return null;
          }
          return lock::unlock;
        }
      default:
        {
          InterProcessMultiLock lock = (InterProcessMultiLock) set;
          if (timeout == null) {
            lock.acquire();
          } else if (!lock.acquire(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            return null;
          }
          return lock::release;
        }
    }
  }

  @Override
  public void close() {
    if (locksmith != null) {
      locksmith.close();
    }
    if (redisson != null) {
      redisson.shutdown();
    }
    if (curator != null) {
      curator.close();
    }
  }
}
