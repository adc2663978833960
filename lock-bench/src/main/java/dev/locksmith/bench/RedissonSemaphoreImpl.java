package dev.locksmith.bench;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Redisson's semaphores, the peers of a Locksmith semaphore on Redis: either {@link RSemaphore}
 * ({@code acquire()} / {@code tryAcquire(wait)} and {@code release()}: a counter with no lease, so
 * a holder that dies keeps its permit for ever) or {@link RPermitExpirableSemaphore} (each permit
 * an id with a lease, 30 s as Locksmith's default, released by its id: the fairer peer). The count
 * is set once per name with {@code trySetPermits}, before the first acquire.
 */
final class RedissonSemaphoreImpl implements LockImpl {
  static final long LEASE_MS = 30_000;
  private final RedissonClient redisson;
  private final int permits;
  private final boolean expirable;
  private final Map<String, Object> semaphores = new ConcurrentHashMap<>();

  RedissonSemaphoreImpl(String endpoint, int permits, boolean expirable) {
    Config config = new Config();
    config.useSingleServer().setAddress("redis://" + endpoint);
    this.redisson = Redisson.create(config);
    this.permits = permits;
    this.expirable = expirable;
  }

  private Object semaphore(String name) {
    return semaphores.computeIfAbsent(
        name,
        n -> {
          if (expirable) {
            RPermitExpirableSemaphore s =
                redisson.getPermitExpirableSemaphore("redisson-xsem:" + n);
            s.trySetPermits(permits);
            return s;
          }
          RSemaphore s = redisson.getSemaphore("redisson-sem:" + n);
          s.trySetPermits(permits);
          return s;
        });
  }

  @Override
  public Held acquire(String name, Duration timeout) throws Exception {
    if (expirable) {
      RPermitExpirableSemaphore s = (RPermitExpirableSemaphore) semaphore(name);
      String id =
          timeout == null
              ? s.acquire(LEASE_MS, TimeUnit.MILLISECONDS)
              : s.tryAcquire(timeout.toMillis(), LEASE_MS, TimeUnit.MILLISECONDS);
      return id == null ? null : () -> s.release(id);
    }
    RSemaphore s = (RSemaphore) semaphore(name);
    if (timeout == null) {
      s.acquire();
    } else if (!s.tryAcquire(timeout)) {
      return null;
    }
    return s::release;
  }

  @Override
  public void close() {
    redisson.shutdown();
  }
}
