package dev.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Guarantees.Primitive;
import dev.locksmith.Guarantees.Promise;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Features are declared per backend and, where a backend differs between them, excepted per
 * primitive.
 */
class GuaranteesTest {
  private static Guarantees.Builder allPromised() {
    Guarantees.Builder b = Guarantees.builder();
    for (Fault f : Fault.values()) {
      b.promise(f, Promise.SAFE, "");
    }
    return b;
  }

  @Test
  void aDeclaredFeatureHoldsForEveryPrimitiveTheBackendHasUnlessExcepted() {
    Guarantees g =
        allPromised()
            .features(
                Feature.NOTIFIED_WAKEUP,
                Feature.FIFO_FAIRNESS,
                Feature.SEMAPHORES,
                Feature.READ_WRITE_LOCKS)
            .except(Primitive.SEMAPHORE, Feature.NOTIFIED_WAKEUP)
            .build();
    assertThat(g.has(Feature.NOTIFIED_WAKEUP)).as("locks").isTrue();
    assertThat(g.has(Feature.NOTIFIED_WAKEUP, Primitive.LOCK)).isTrue();
    assertThat(g.has(Feature.NOTIFIED_WAKEUP, Primitive.SEMAPHORE))
        .as("excepted for semaphores")
        .isFalse();
    assertThat(g.has(Feature.NOTIFIED_WAKEUP, Primitive.READ_WRITE_LOCK)).isTrue();
    assertThat(g.has(Feature.FIFO_FAIRNESS, Primitive.SEMAPHORE))
        .as("another feature of the same primitive")
        .isTrue();
    assertThat(g.features(Primitive.SEMAPHORE))
        .doesNotContain(Feature.NOTIFIED_WAKEUP)
        .contains(Feature.FIFO_FAIRNESS);
    assertThat(g.features()).contains(Feature.NOTIFIED_WAKEUP);
    assertThat(g.toString()).contains("except={SEMAPHORE=[NOTIFIED_WAKEUP]}");
  }

  @Test
  void featuresOfExclusiveLocksOnlyNeverHoldForSemaphoresOrReadWriteLocks() {
    Guarantees g =
        allPromised()
            .features(
                Feature.STATE_READS,
                Feature.BREAK_GLASS,
                Feature.ATOMIC_LOCK_SETS,
                Feature.LISTING,
                Feature.FENCING,
                Feature.SEMAPHORES,
                Feature.READ_WRITE_LOCKS)
            .build();
    for (Feature f : List.of(Feature.STATE_READS, Feature.BREAK_GLASS, Feature.ATOMIC_LOCK_SETS)) {
      assertThat(g.has(f)).as("%s for locks", f).isTrue();
      assertThat(g.has(f, Primitive.SEMAPHORE)).as("%s for semaphores", f).isFalse();
      assertThat(g.has(f, Primitive.READ_WRITE_LOCK)).as("%s for read-write locks", f).isFalse();
    }
    assertThat(g.has(Feature.FENCING, Primitive.SEMAPHORE)).isTrue();
    assertThat(g.has(Feature.LISTING, Primitive.SEMAPHORE))
        .as("listing lists every primitive it is declared for")
        .isTrue();
    assertThat(g.features(Primitive.READ_WRITE_LOCK)).contains(Feature.FENCING);
  }

  @Test
  void listingExceptedForAPrimitiveListsOnlyTheOthers() {
    Guarantees g =
        allPromised()
            .features(Feature.LISTING, Feature.SEMAPHORES, Feature.READ_WRITE_LOCKS)
            .except(Primitive.READ_WRITE_LOCK, Feature.LISTING)
            .build();
    assertThat(g.has(Feature.LISTING)).isTrue();
    assertThat(g.has(Feature.LISTING, Primitive.SEMAPHORE)).isTrue();
    assertThat(g.has(Feature.LISTING, Primitive.READ_WRITE_LOCK)).isFalse();
  }

  @Test
  void aPrimitiveTheBackendLacksHasNoFeature() {
    Guarantees g = allPromised().features(Feature.NOTIFIED_WAKEUP, Feature.SEMAPHORES).build();
    assertThat(g.has(Feature.NOTIFIED_WAKEUP, Primitive.SEMAPHORE)).isTrue();
    assertThat(g.has(Feature.NOTIFIED_WAKEUP, Primitive.READ_WRITE_LOCK))
        .as("no read-write locks declared")
        .isFalse();
    assertThat(g.features(Primitive.READ_WRITE_LOCK)).isEmpty();
  }

  @Test
  void anExceptionForLocksIsSeenByTheOneArgumentForms() {
    Guarantees g =
        allPromised()
            .features(Feature.NOTIFIED_WAKEUP, Feature.SEMAPHORES)
            .except(Primitive.LOCK, Feature.NOTIFIED_WAKEUP)
            .build();
    assertThat(g.has(Feature.NOTIFIED_WAKEUP)).isFalse();
    assertThat(g.features()).doesNotContain(Feature.NOTIFIED_WAKEUP);
    assertThat(g.has(Feature.NOTIFIED_WAKEUP, Primitive.SEMAPHORE)).isTrue();
  }

  @Test
  void exceptionsTakePartInEquality() {
    Guarantees plain = allPromised().features(Feature.NOTIFIED_WAKEUP, Feature.SEMAPHORES).build();
    Guarantees excepted =
        allPromised()
            .features(Feature.NOTIFIED_WAKEUP, Feature.SEMAPHORES)
            .except(Primitive.SEMAPHORE, Feature.NOTIFIED_WAKEUP)
            .build();
    assertThat(excepted).isNotEqualTo(plain);
    assertThat(
            allPromised()
                .features(Feature.NOTIFIED_WAKEUP, Feature.SEMAPHORES)
                .except(Primitive.SEMAPHORE)
                .build())
        .as("an empty exception")
        .isEqualTo(plain);
  }

  @Test
  void whetherAPrimitiveExistsCannotBeExcepted() {
    assertThatThrownBy(() -> allPromised().except(Primitive.SEMAPHORE, Feature.SEMAPHORES))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`except`")
        .hasMessageContaining("SEMAPHORES");
  }
}
