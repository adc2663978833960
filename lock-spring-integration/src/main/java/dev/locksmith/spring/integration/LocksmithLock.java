package dev.locksmith.spring.integration;

import java.util.OptionalLong;
import org.springframework.integration.support.locks.DistributedLock;

/**
 * The lock {@link LocksmithLockRegistry#obtain(Object)} returns: a Spring Integration {@link
 * DistributedLock} (so a {@link java.util.concurrent.locks.Lock}) over one Locksmith lock,
 * reentrant per thread like {@link java.util.concurrent.locks.ReentrantLock}, that also tells its
 * holder the fencing token.
 *
 * <pre>{@code
 * LocksmithLock lock = registry.obtain("orders");
 * if (lock.tryLock(2, TimeUnit.SECONDS)) {
 *   try {
 *     store.write(order, lock.fencingToken().orElseThrow());   // the store refuses tokens lower than it has seen
 *   } finally {
 *     lock.unlock();
 *   }
 * }
 * }</pre>
 *
 * <p>{@code lock(ttl)} and {@code tryLock(wait, ttl)} take the lock with a lease of {@code ttl}
 * that is not renewed in the background: the server frees it after {@code ttl} unless {@link
 * LocksmithLockRegistry#renewLock(Object, java.time.Duration)} moves its expiry. The other methods
 * use the registry's options (by default the client's: renewed while held). {@code unlock()} of a
 * lock whose lease was lost while held throws {@link java.util.ConcurrentModificationException}, as
 * Spring Integration's own registries do; {@code unlock()} by a thread that does not hold it throws
 * {@link IllegalMonitorStateException}. Conditions are not supported.
 */
public interface LocksmithLock extends DistributedLock {

  /**
   * @return the Locksmith lock name (the registry's lock key)
   */
  String name();

  /**
   * @return the fencing token of the calling thread's holding of this lock: above zero and higher
   *     than every earlier holder's; empty if the calling thread does not hold it or its lease is
   *     known to be lost
   */
  OptionalLong fencingToken();
}
