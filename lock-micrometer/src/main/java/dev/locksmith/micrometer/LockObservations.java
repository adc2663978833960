package dev.locksmith.micrometer;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * Micrometer {@link Observation}s of acquiring and holding locks, so a tracing bridge shows a span
 * for the wait and one for the work under the lock (and a meter handler, timers of both). They wrap
 * calls on the calling thread, which {@link LockMetrics} (fed by events on the client's event
 * thread) cannot.
 *
 * <pre>{@code
 * LockObservations observe = new LockObservations(observationRegistry, "redis", "orders");
 * Optional<Lease> lease = observe.tryAcquire(client.lock("pay:42"), Duration.ofSeconds(5));
 * if (lease.isPresent()) {
 *   Observation hold = observe.hold(lease.get());
 *   try (Lease held = lease.get(); Observation.Scope scope = hold.openScope()) {
 *     pay(held.fencingToken());
 *   } finally {
 *     hold.stop();
 *   }
 * }
 * }</pre>
 *
 * <p>Observations: {@value #ACQUIRE} (contextual name "lock acquire") and {@value #HOLD} ("lock
 * hold"). Low-cardinality keys: {@code backend}, {@code client} and, on the acquire, {@code
 * outcome} = {@code acquired}, {@code timeout}, {@code interrupted}, {@code cancelled} (an {@link
 * #acquisition} withdrawn) or {@code error}. High-cardinality keys (span tags only): {@code lock}
 * and {@code fencing.token}. The names differ from {@link LockMetrics}' meters, so both can be
 * registered at once.
 */
public final class LockObservations {
  /** Observation of one acquire: from the call to the grant or to giving up. */
  public static final String ACQUIRE = "locksmith.lock.acquire";

  /** Observation of one holding: from the grant to the end of the work under the lock. */
  public static final String HOLD = "locksmith.lock.hold";

  private final ObservationRegistry registry;
  private final String backend;
  private final String client;

  /**
   * @param registry where observations go
   * @param backend the backend's URI scheme (key {@code backend})
   * @param client the client's name (key {@code client})
   * @throws NullPointerException if an argument is null
   */
  public LockObservations(ObservationRegistry registry, String backend, String client) {
    this.registry =
        Objects.requireNonNull(
            registry, "`registry` was null but it must be an ObservationRegistry");
    this.backend =
        Objects.requireNonNull(
            backend, "`backend` was null but it must be the backend's URI scheme, such as redis");
    this.client =
        Objects.requireNonNull(
            client, "`client` was null but it must be a name for the lock client");
  }

  /**
   * {@link DistributedLock#tryAcquire(Duration)}, observed.
   *
   * @param lock the lock
   * @param wait how long to wait; zero tries once
   * @return the lease, or empty if the lock was not acquired in time
   * @throws InterruptedException if the thread is interrupted while waiting
   */
  public Optional<Lease> tryAcquire(DistributedLock lock, Duration wait)
      throws InterruptedException {
    Acquisition a = acquisition(lock);
    Optional<Lease> lease;
    try (Observation.Scope scope = a.observation.openScope()) {
      lease = lock.tryAcquire(wait);
    } catch (InterruptedException e) {
      a.end("interrupted", e);
      throw e;
    } catch (RuntimeException | Error e) {
      a.failed(e);
      throw e;
    }
    if (lease.isPresent()) {
      a.acquired(lease.get());
    } else {
      a.timedOut();
    }
    return lease;
  }

  /**
   * Starts observing an acquire that happens elsewhere (a reactive or asynchronous acquire): end it
   * once, with the outcome, when the lease comes or the acquire gives up.
   *
   * @param lock the lock being acquired
   * @return the started observation of the acquire
   * @throws NullPointerException if {@code lock} is null
   */
  public Acquisition acquisition(DistributedLock lock) {
    Objects.requireNonNull(lock, "`lock` was null but it must be the lock being acquired");
    return new Acquisition(
        Observation.createNotStarted(ACQUIRE, registry)
            .contextualName("lock acquire")
            .lowCardinalityKeyValue("backend", backend)
            .lowCardinalityKeyValue("client", client)
            .highCardinalityKeyValue("lock", lock.name())
            .start());
  }

  /**
   * One observed acquire, from {@link #acquisition(DistributedLock)} to the first of its ends (the
   * later ones are ignored): {@code outcome} = {@code acquired}, {@code timeout}, {@code cancelled}
   * or {@code error}.
   */
  public static final class Acquisition {
    private final Observation observation;
    private final java.util.concurrent.atomic.AtomicBoolean ended =
        new java.util.concurrent.atomic.AtomicBoolean();

    private Acquisition(Observation observation) {
      this.observation = observation;
    }

    /**
     * @return the observation, to open its scope around the acquire
     */
    public Observation observation() {
      return observation;
    }

    /**
     * The lease came.
     *
     * @param lease the lease
     */
    public void acquired(Lease lease) {
      if (ended.compareAndSet(false, true)) {
        observation
            .lowCardinalityKeyValue("outcome", "acquired")
            .highCardinalityKeyValue("fencing.token", Long.toString(lease.fencingToken()));
        observation.stop();
      }
    }

    /** The lock was not acquired in time (or, with no wait, was held). */
    public void timedOut() {
      end("timeout", null);
    }

    /** The acquire was withdrawn before a lease came. */
    public void cancelled() {
      end("cancelled", null);
    }

    /**
     * The acquire failed.
     *
     * @param error why
     */
    public void failed(Throwable error) {
      end("error", error);
    }

    private void end(String outcome, Throwable error) {
      if (ended.compareAndSet(false, true)) {
        observation.lowCardinalityKeyValue("outcome", outcome);
        if (error != null) {
          observation.error(error);
        }
        observation.stop();
      }
    }
  }

  /**
   * @param lease a lease just acquired
   * @return a started observation of holding it; open its scope around the work and stop it when
   *     the work ends
   */
  public Observation hold(Lease lease) {
    return Observation.createNotStarted(HOLD, registry)
        .contextualName("lock hold")
        .lowCardinalityKeyValue("backend", backend)
        .lowCardinalityKeyValue("client", client)
        .highCardinalityKeyValue("lock", lease.lockName())
        .highCardinalityKeyValue("fencing.token", Long.toString(lease.fencingToken()))
        .start();
  }
}
