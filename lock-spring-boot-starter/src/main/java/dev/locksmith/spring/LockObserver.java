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

        @Override
        public Acquiring acquiring(DistributedLock lock) {
          return Acquiring.NONE;
        }
      };

  /**
   * @return the started observation of an acquire that completes elsewhere (a reactive method's):
   *     end it once with the outcome; later ends are ignored
   */
  Acquiring acquiring(DistributedLock lock);

  /** One observed acquire that completes elsewhere. */
  interface Acquiring {
    Acquiring NONE =
        new Acquiring() {
          @Override
          public void acquired(Lease lease) {}

          @Override
          public void timedOut() {}

          @Override
          public void cancelled() {}

          @Override
          public void failed(Throwable error) {}
        };

    void acquired(Lease lease);

    void timedOut();

    void cancelled();

    void failed(Throwable error);
  }

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
