package dev.locksmith.spring;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import java.time.Duration;
import java.util.Optional;

/**
 * How the advice acquires and holds: plain, or as Micrometer observations when an
 * ObservationRegistry exists.
 */
interface LockObserver {
  /** No observations. */
  LockObserver PLAIN =
      new LockObserver() {
        @Override
        public Optional<Lease> tryAcquire(DistributedLock lock, Duration wait)
            throws InterruptedException {
          return lock.tryAcquire(wait);
        }

        @Override
        public Hold hold(Lease lease) {
          return Hold.NONE;
        }
      };

  Optional<Lease> tryAcquire(DistributedLock lock, Duration wait) throws InterruptedException;

  /**
   * @return the started holding; open its scope around the work, stop it when the work ends
   */
  Hold hold(Lease lease);

  /** One observed holding. */
  interface Hold {
    Hold NONE =
        new Hold() {
          @Override
          public AutoCloseable openScope() {
            return () -> {};
          }

          @Override
          public void stop(Throwable error) {}
        };

    AutoCloseable openScope();

    void stop(Throwable error);
  }
}
