package dev.locksmith.bench;

import java.time.Duration;

/**
 * One client of a lock implementation under test: Locksmith on some backend, the raw protocol
 * floor, or an off-the-shelf lock. Each instance is one client (its own connection or session); the
 * contended run makes one per competing client.
 */
interface LockImpl extends AutoCloseable {

  /**
   * @param name the lock's name
   * @param timeout how long to wait for it
   * @return the holding, or null if the lock was not acquired within {@code timeout}
   */
  Held acquire(String name, Duration timeout) throws Exception;

  /**
   * The instance one more benchmark thread uses: the same client where the library is meant to be
   * shared between threads, or a connection of the thread's own where the raw protocol is cheapest
   * that way. Closing what this returns closes only what it opened.
   */
  default LockImpl forThread() throws Exception {
    LockImpl shared = this;
    return new LockImpl() {
      @Override
      public Held acquire(String name, Duration timeout) throws Exception {
        return shared.acquire(name, timeout);
      }

      @Override
      public void close() {}
    };
  }

  @Override
  void close();
}
