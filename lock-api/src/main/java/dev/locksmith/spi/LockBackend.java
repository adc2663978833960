package dev.locksmith.spi;

import dev.locksmith.Guarantees;
import dev.locksmith.LockState;
import java.time.Duration;
import java.util.List;

/**
 * The wire protocol of one backend, and nothing else: the core around it owns deadlines,
 * interrupts, cancellation, reentrancy, renewal scheduling, name checks, loss dispatch and
 * events. Methods are called from many threads at once. Every call that goes to a server must
 * be bounded by a timeout of the backend's own.
 */
public interface LockBackend extends AutoCloseable {

  /** @return what this backend promises */
  Guarantees guarantees();

  /**
   * Starts one acquisition. The core calls {@link LockAttempt#poll()} until it is granted, the
   * deadline passes or the waiter withdraws, then {@link LockAttempt#abandon()} unless granted.
   *
   * @param name the lock's name, already checked
   * @param ownerId unique for this lease among all clients; store it as the owner
   * @param lease how long the server should keep the lock without renewal
   * @param wake call it (from any thread, any number of times) when a poll is worth repeating:
   *     the lock was released or the predecessor went away
   * @return the attempt
   */
  LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake);

  /**
   * @return true if held locks stay held by a session the backend keeps alive itself (ZooKeeper
   *     session, etcd lease); the core then never calls {@link #renew(List)} and relies on
   *     {@link BackendContext} for loss
   */
  default boolean renewsBySession() {
    return false;
  }

  /**
   * Renews leases, in as few round trips as the protocol allows: the core hands over every
   * lease due at about the same time.
   *
   * @param leases the leases to renew, each for {@link BackendLease#lease()}
   * @return one outcome per lease, in the same order
   */
  List<Renewal> renew(List<BackendLease> leases);

  /**
   * Releases a lease, only if it is still ours (owner-checked): never someone else's lock.
   *
   * @param lease the lease
   * @return whether it was still ours
   * @throws dev.locksmith.BackendUnavailableException if the server cannot be reached
   */
  boolean release(BackendLease lease);

  /**
   * Reads a lock's state without taking it or writing anything. Backends that implement it
   * declare {@link dev.locksmith.Guarantees.Feature#STATE_READS}, and the kit then checks it.
   *
   * @param name the lock's name, already checked
   * @return the state; the default is {@link LockState#unknown()}
   * @throws dev.locksmith.BackendUnavailableException if the server cannot be reached
   */
  default LockState inspect(String name) {
    return LockState.unknown();
  }

  /**
   * Drops connections without releasing anything, as a crash would. Used by fault tests through
   * {@link Abandonable}. The default closes.
   */
  default void abandon() {
    close();
  }

  /** Closes connections and threads; the core has released held leases first. */
  @Override
  void close();
}
