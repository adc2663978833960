package dev.locksmith.spi;

/** One acquisition in progress, made by {@link LockBackend#attempt}. Used by one thread at a time. */
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
   * Withdraws: removes any queue entry, and releases the lock if a grant may have happened that
   * the caller never saw (an ambiguous acquire). Called when the attempt ends without a grant:
   * timeout, interrupt, cancellation, error. Must not throw; must not block for long.
   */
  void abandon();
}
