package dev.locksmith.spring.integration;

import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * A Spring Integration lock registry over any Locksmith {@link LockClient}: {@link #obtain(Object)}
 * returns a {@link LocksmithLock} for the key, the same object for the same key until {@link
 * #expireUnusedOlderThan(long)} drops it.
 *
 * <pre>{@code
 * @Bean
 * LocksmithLockRegistry lockRegistry(LockClient locksmith) {
 *   return new LocksmithLockRegistry(locksmith);      // Locks.connect("redis://..."), "zookeeper://...", ...
 * }
 * @Bean
 * LockRegistryLeaderInitiator leader(LocksmithLockRegistry registry) {
 *   return new LockRegistryLeaderInitiator(registry);
 * }
 * }</pre>
 *
 * <p>Renewal: with the default options (the client's, normally auto-renew on) a held lock's lease
 * is renewed in the background by Locksmith until it is unlocked, so {@link #renewLock(Object)}
 * only checks that the calling thread still holds it, and a {@code TaskScheduler} given to {@link
 * #setRenewalTaskScheduler} is not needed (and not used). A lock taken without auto-renew (options
 * with {@code autoRenew(false)}, or {@code lock(ttl)}/{@code tryLock(wait, ttl)}) is renewed only
 * by {@code renewLock}, which moves the server's expiry to its lease (or {@code ttl}) from now
 * through {@link dev.locksmith.Lease#extend(Duration)}; the backend must declare {@link
 * dev.locksmith.Guarantees.Feature#EXTEND} for that.
 *
 * <p>Thread-safe. Keys are lock names (strings of 1 to 255 characters, no control characters).
 */
public final class LocksmithLockRegistry
    implements RenewableLockRegistry<LocksmithLock>, ExpirableLockRegistry<LocksmithLock> {
  private final LockClient client;
  private final LockOptions options;
  private final Map<String, RegistryLock> locks = new ConcurrentHashMap<>();

  /**
   * Locks held with the client's default options (normally a 30 s lease renewed while held).
   *
   * @param client the Locksmith client; closing it stays the caller's business
   * @throws NullPointerException if {@code client} is null
   */
  public LocksmithLockRegistry(LockClient client) {
    this(
        client,
        Objects.requireNonNull(client, "`client` was null but it must be a Locksmith LockClient")
            .config()
            .defaults());
  }

  /**
   * @param client the Locksmith client
   * @param options how locks are held: lease, auto-renew (reentrancy is always per thread, as for
   *     {@link java.util.concurrent.locks.ReentrantLock}, whatever {@code options} say)
   * @throws NullPointerException if an argument is null
   */
  public LocksmithLockRegistry(LockClient client, LockOptions options) {
    this.client =
        Objects.requireNonNull(client, "`client` was null but it must be a Locksmith LockClient");
    this.options =
        Objects.requireNonNull(options, "`options` was null but it must be LockOptions").toBuilder()
            .reentrant(false)
            .build(); // the registry counts reentry itself, per thread
  }

  /**
   * @param lockKey the lock name, a String
   * @return the lock for the key
   * @throws NullPointerException if {@code lockKey} is null
   * @throws IllegalArgumentException if {@code lockKey} is not a String or not a valid lock name
   */
  @Override
  public LocksmithLock obtain(Object lockKey) {
    String name = key(lockKey);
    RegistryLock lock = locks.computeIfAbsent(name, n -> new RegistryLock(client, n, options));
    lock.touch();
    return lock;
  }

  private static String key(Object lockKey) {
    Objects.requireNonNull(lockKey, "`lockKey` was null but it must be a String: the lock's name");
    if (!(lockKey instanceof String)) {
      throw new IllegalArgumentException(
          "`lockKey` was a "
              + lockKey.getClass().getName()
              + " ("
              + lockKey
              + ") but it must be a String: the lock's name, 1 to 255 characters without control"
              + " characters");
    }
    return (String) lockKey;
  }

  /**
   * Renews the calling thread's holding of the lock: for an auto-renewed lease, checks that it is
   * still held (it renews itself); otherwise moves the server's expiry to the lease it was taken
   * with, from now.
   *
   * @param lockKey the lock name
   * @throws IllegalStateException if the calling thread does not hold the lock, or its lease was
   *     lost (expired, taken, session ended)
   * @throws UnsupportedOperationException if the lease is not auto-renewed and the backend does not
   *     declare EXTEND
   */
  @Override
  public void renewLock(Object lockKey) {
    held(lockKey).renew(null);
  }

  /**
   * Moves the server's expiry of the calling thread's holding to {@code ttl} from now, for a lease
   * taken without auto-renew ({@code lock(ttl)}, or options with {@code autoRenew(false)}).
   *
   * @param lockKey the lock name
   * @param ttl from 1 ms to 7 days
   * @throws IllegalStateException if the calling thread does not hold the lock, its lease was lost,
   *     or its lease is auto-renewed (its length is fixed; take it with {@code lock(ttl)})
   * @throws IllegalArgumentException if {@code ttl} is out of range
   * @throws UnsupportedOperationException if the backend does not declare EXTEND
   */
  @Override
  public void renewLock(Object lockKey, Duration ttl) {
    RegistryLock lock = held(lockKey);
    lock.renew(RegistryLock.checkTtl(ttl));
  }

  private RegistryLock held(Object lockKey) {
    String name = key(lockKey);
    RegistryLock lock = locks.get(name);
    if (lock == null) {
      throw new IllegalStateException(
          "lock '"
              + name
              + "' is not held by thread "
              + Thread.currentThread().getName()
              + ": it was never obtained from this registry");
    }
    return lock;
  }

  /**
   * Forgets locks that nobody holds through this registry and that were last obtained more than
   * {@code age} milliseconds ago; a later {@link #obtain(Object)} makes a new one.
   *
   * @param age in milliseconds, zero or more
   * @throws IllegalArgumentException if {@code age} is negative
   */
  @Override
  public void expireUnusedOlderThan(long age) {
    if (age < 0) {
      throw new IllegalArgumentException(
          "`age` was " + age + " but it must be zero or more milliseconds");
    }
    long now = System.nanoTime();
    locks
        .values()
        .removeIf(lock -> lock.unusedFor(now) > age * 1_000_000L && !lock.isHeldByAnyThread());
  }

  @Override
  public String toString() {
    return "LocksmithLockRegistry{" + client.config().uri() + ", " + options + "}";
  }
}
