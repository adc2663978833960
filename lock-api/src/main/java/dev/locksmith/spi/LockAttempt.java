package dev.locksmith.spi;

/**
 * One acquisition in progress, made by {@link LockBackend#attempt}. Used by one thread at a time.
 */
public interface LockAttempt {

  /**
   * Tries to take the lock once; may also enqueue (ZooKeeper, etcd) on the first call.
   *
   * @return granted, or busy with how long until a retry is worthwhile without a wake-up
   * @throws InterruptedException if interrupted while talking to the server
   * @throws dev.locksmith.BackendUnavailableException if the server cannot be reached
   */
  Poll poll() throws InterruptedException;

  /**
   * Tries once for a caller that will not wait: the core calls this instead of {@link #poll()} when
   * the acquisition has no wait time ({@code tryAcquire()} without a timeout), as the attempt's
   * only poll, followed by {@link #abandon()} unless it was granted. Finding the lock busy, it need
   * not join the wait queue or subscribe to wake-ups: nobody will wait for them, and a queue entry
   * made only to be withdrawn can hold back the grant of a lock that is free meanwhile (the lock
   * goes to the oldest entry first), so that two callers that do not wait can each make the other
   * fail. It must still not take a lock an earlier waiter is first in line for. The default calls
   * {@link #poll()}: correct, only slower under contention.
   *
   * @return granted, or busy
   * @throws InterruptedException if interrupted while talking to the server
   * @throws dev.locksmith.BackendUnavailableException if the server cannot be reached
   */
  default Poll pollWithoutWaiting() throws InterruptedException {
    return poll();
  }

  /**
   * Withdraws: removes any queue entry, and releases the lock if a grant may have happened that the
   * caller never saw (an ambiguous acquire). Called when the attempt ends without a grant: timeout,
   * interrupt, cancellation, error. Must not throw; must not block for long.
   */
  void abandon();
}
