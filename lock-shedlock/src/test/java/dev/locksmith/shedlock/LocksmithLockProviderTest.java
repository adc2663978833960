package dev.locksmith.shedlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockOptions;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Construction and bad input, on the in-process {@code local:} backend. */
class LocksmithLockProviderTest {
  private final LockClient local = Locks.connect("local:shedlock-unit");

  @AfterEach
  void close() {
    local.close();
  }

  /**
   * The same client, declaring fewer features: what a backend without them looks like to the
   * adapter.
   */
  private static LockClient without(LockClient real, Guarantees.Feature... dropped) {
    Set<Guarantees.Feature> kept = EnumSet.copyOf(real.guarantees().features());
    kept.removeAll(Set.of(dropped));
    Guarantees.Builder b = Guarantees.builder().features(kept.toArray(new Guarantees.Feature[0]));
    for (Guarantees.Fault f : Guarantees.Fault.values()) {
      b.promise(f, real.guarantees().promise(f), real.guarantees().note(f));
    }
    Guarantees fewer = b.build();
    return new LockClient() {
      @Override
      public DistributedLock lock(String name) {
        return real.lock(name);
      }

      @Override
      public DistributedLock lock(String name, LockOptions options) {
        return real.lock(name, options);
      }

      @Override
      public Guarantees guarantees() {
        return fewer;
      }

      @Override
      public LockConfig config() {
        return real.config();
      }

      @Override
      public void close() {
        real.close();
      }
    };
  }

  @Test
  void aBackendWithoutHoldAfterReleaseIsRefusedAtConstruction() {
    assertThatThrownBy(
            () -> new LocksmithLockProvider(without(local, Guarantees.Feature.HOLD_AFTER_RELEASE)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`client`")
        .hasMessageContaining("local:shedlock-unit")
        .hasMessageContaining("does not declare HOLD_AFTER_RELEASE")
        .hasMessageNotContaining("EXTEND and");
  }

  @Test
  void aBackendWithoutEitherFeatureIsRefusedNamingBoth() {
    assertThatThrownBy(
            () ->
                new LocksmithLockProvider(
                    without(
                        local, Guarantees.Feature.EXTEND, Guarantees.Feature.HOLD_AFTER_RELEASE)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("does not declare EXTEND and HOLD_AFTER_RELEASE");
  }

  /**
   * A ShedLock lock that its code drops without unlocking, taken on a thread that then ends, stays
   * taken until lockAtMostFor through garbage collections: the lock's contract, which a client
   * releasing dropped leases would break.
   */
  @Test
  void aDroppedLockStaysTakenUntilLockAtMostFor() throws Exception {
    LocksmithLockProvider provider = new LocksmithLockProvider(local);
    Thread taker =
        new Thread(
            () ->
                assertThat(
                        provider.lock(
                            new LockConfiguration(
                                ClockProvider.now(),
                                "dropped-job",
                                Duration.ofMinutes(1),
                                Duration.ZERO)))
                    .isPresent());
    taker.start();
    taker.join();
    for (int i = 0; i < 5; i++) {
      System.gc();
      Thread.sleep(100);
    }
    assertThat(
            provider.lock(
                new LockConfiguration(
                    ClockProvider.now(), "dropped-job", Duration.ofMinutes(1), Duration.ZERO)))
        .as("the dropped job's lock, within its lockAtMostFor")
        .isEmpty();
  }

  @Test
  void aBackendWithBothIsAccepted() {
    assertThat(new LocksmithLockProvider(local).toString()).contains("local:shedlock-unit");
  }

  @Test
  void nullsAreNamed() {
    assertThatThrownBy(() -> new LocksmithLockProvider(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`client`");
    assertThatThrownBy(() -> new LocksmithLockProvider(local).lock(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`lockConfiguration`");
  }

  @Test
  void aZeroLockAtMostForIsRefused() {
    LockConfiguration zero =
        new LockConfiguration(ClockProvider.now(), "job", Duration.ZERO, Duration.ZERO);
    assertThatThrownBy(() -> new LocksmithLockProvider(local).lock(zero))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`lockAtMostFor` was PT0S")
        .hasMessageContaining("above zero");
  }

  @Test
  void aLockAtMostForBeyondSevenDaysIsRefused() {
    LockConfiguration absurd =
        new LockConfiguration(ClockProvider.now(), "job", Duration.ofDays(30), Duration.ZERO);
    assertThatThrownBy(() -> new LocksmithLockProvider(local).lock(absurd))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`lockAtMostFor` was PT720H")
        .hasMessageContaining("at most");
  }

  @Test
  void aLockAtMostForAlreadyPastIsClampedToTheShortestLease() {
    LockConfiguration late =
        new LockConfiguration(
            ClockProvider.now().minusSeconds(5), "late-job", Duration.ofSeconds(1), Duration.ZERO);
    SimpleLock lock = new LocksmithLockProvider(local).lock(late).orElseThrow();
    assertThat(
            LocksmithLockProvider.leaseFor(
                "lockAtMostFor", Duration.ofSeconds(1), ClockProvider.now().minusSeconds(1)))
        .isEqualTo(LockOptions.MIN_LEASE);
    lock.unlock(); // long expired: a warning, no exception
  }

  @Test
  void badExtendArgumentsAreNamedAndLeaveTheLockUsable() {
    SimpleLock lock =
        new LocksmithLockProvider(local)
            .lock(
                new LockConfiguration(
                    ClockProvider.now(), "ext", Duration.ofSeconds(10), Duration.ZERO))
            .orElseThrow();
    assertThatThrownBy(() -> lock.extend(Duration.ofSeconds(1), Duration.ofSeconds(2)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`lockAtLeastFor` was PT2S");
    assertThatThrownBy(() -> lock.extend(Duration.ofDays(8), Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`lockAtMostFor` was PT192H");
    assertThatThrownBy(() -> lock.extend(null, Duration.ZERO))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`lockAtMostFor`");
    lock.unlock();
  }
}
