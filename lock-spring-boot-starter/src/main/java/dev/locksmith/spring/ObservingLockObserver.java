package dev.locksmith.spring;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.micrometer.LockObservations;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.Optional;

/**
 * {@link LockObserver} through {@link LockObservations}; loaded only when Micrometer's observation
 * API is present.
 */
final class ObservingLockObserver implements LockObserver {
  private final LockObservations observations;

  ObservingLockObserver(ObservationRegistry registry, String backend, String client) {
    this.observations = new LockObservations(registry, backend, client);
  }

  @Override
  public Optional<Lease> tryAcquire(DistributedLock lock, Duration wait)
      throws InterruptedException {
    return observations.tryAcquire(lock, wait);
  }

  @Override
  public Acquiring acquiring(DistributedLock lock) {
    LockObservations.Acquisition a = observations.acquisition(lock);
    return new Acquiring() {
      @Override
      public void acquired(Lease lease) {
        a.acquired(lease);
      }

      @Override
      public void timedOut() {
        a.timedOut();
      }

      @Override
      public void cancelled() {
        a.cancelled();
      }

      @Override
      public void failed(Throwable error) {
        a.failed(error);
      }
    };
  }

  @Override
  public Hold hold(Lease lease) {
    Observation o = observations.hold(lease);
    return new Hold() {
      @Override
      public AutoCloseable openScope() {
        Observation.Scope scope = o.openScope();
        return scope::close;
      }

      @Override
      public void stop(Throwable error) {
        if (error != null) {
          o.error(error);
        }
        o.stop();
      }
    };
  }
}
