package dev.locksmith.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** The acquire and hold observations: names, keys, outcomes, and the hold as parent of the work. */
class LockObservationsTest {
  private final ObservationRegistry registry = ObservationRegistry.create();
  private final List<Observation.Context> stopped = new CopyOnWriteArrayList<>();

  LockObservationsTest() {
    registry
        .observationConfig()
        .observationHandler(
            new ObservationHandler<Observation.Context>() {
              @Override
              public boolean supportsContext(Observation.Context context) {
                return true;
              }

              @Override
              public void onStop(Observation.Context context) {
                stopped.add(context);
              }
            });
  }

  private static String low(Observation.Context c, String key) {
    KeyValue kv = c.getLowCardinalityKeyValue(key);
    return kv == null ? null : kv.getValue();
  }

  private static String high(Observation.Context c, String key) {
    KeyValue kv = c.getHighCardinalityKeyValue(key);
    return kv == null ? null : kv.getValue();
  }

  @Test
  void anAcquireAndAHoldAreObservedWithTheirKeys() throws Exception {
    LockObservations observe = new LockObservations(registry, "local", "orders");
    try (LockClient c = Locks.connect("local:obs")) {
      Optional<Lease> lease = observe.tryAcquire(c.lock("pay:42"), Duration.ofSeconds(1));
      assertThat(lease).isPresent();
      Observation hold = observe.hold(lease.get());
      try (Lease held = lease.get();
          Observation.Scope scope = hold.openScope()) {
        Observation.createNotStarted("work", registry).observe(() -> {});
      } finally {
        hold.stop();
      }
      long token = lease.get().fencingToken();
      assertThat(stopped)
          .extracting(Observation.Context::getName)
          .containsExactly(LockObservations.ACQUIRE, "work", LockObservations.HOLD);
      Observation.Context acquire = stopped.get(0);
      assertThat(acquire.getContextualName()).isEqualTo("lock acquire");
      assertThat(low(acquire, "backend")).isEqualTo("local");
      assertThat(low(acquire, "client")).isEqualTo("orders");
      assertThat(low(acquire, "outcome")).isEqualTo("acquired");
      assertThat(high(acquire, "lock")).isEqualTo("pay:42");
      assertThat(low(acquire, "lock")).as("the lock name is never low-cardinality").isNull();
      Observation.Context work = stopped.get(1);
      Observation.Context held = stopped.get(2);
      assertThat(held.getContextualName()).isEqualTo("lock hold");
      assertThat(high(held, "fencing.token")).isEqualTo(Long.toString(token));
      assertThat(work.getParentObservation()).as("the work's parent").isNotNull();
      assertThat(work.getParentObservation().getContextView().getName())
          .isEqualTo(LockObservations.HOLD);
    }
  }

  @Test
  void aBusyLockIsATimeoutAndAnInterruptAnError() throws Exception {
    LockObservations observe = new LockObservations(registry, "local", "orders");
    try (LockClient holder = Locks.connect("local:obs-busy");
        LockClient c = Locks.connect("local:obs-busy")) {
      Lease busy = holder.lock("b").acquire(Duration.ofSeconds(1));
      assertThat(observe.tryAcquire(c.lock("b"), Duration.ZERO)).isEmpty();
      Thread.currentThread().interrupt();
      try {
        observe.tryAcquire(c.lock("b"), Duration.ofSeconds(1));
      } catch (InterruptedException expected) {
        // observed as interrupted
      }
      assertThat(stopped)
          .extracting(ctx -> low(ctx, "outcome"))
          .containsExactly("timeout", "interrupted");
      assertThat(stopped.get(1).getError()).isInstanceOf(InterruptedException.class);
      assertThat(busy.release()).isTrue();
    }
  }
}
