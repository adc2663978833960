package dev.locksmith.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/**
 * The semaphores section's bookkeeping, without servers: ids and their permits, overlaps beyond N,
 * skipped rows.
 */
class SemaphoresHarnessTest {

  @Test
  void semaphoreIdsCarryTheirPermitsAndRunOnTheirServer() {
    assertThat(Impls.permits("redisson-semaphore@5")).isEqualTo(5);
    assertThat(Impls.permits("locksmith-redis")).as("a lock").isEqualTo(1);
    assertThat(Impls.serverOf("locksmith-semaphore-redis@5")).isEqualTo("redis");
    assertThat(Impls.serverOf("redisson-semaphore@2")).isEqualTo("redis");
    assertThat(Impls.serverOf("redisson-expirable-semaphore@2")).isEqualTo("redis");
    assertThat(Impls.serverOf("locksmith-semaphore-zookeeper@5")).isEqualTo("zookeeper");
    assertThat(Impls.serverOf("curator-semaphore@5")).isEqualTo("zookeeper");
    assertThat(Impls.serverOf("locksmith-semaphore-local@5")).isEqualTo("local");
    for (SemaphoresRun.Group g : SemaphoresRun.GROUPS) {
      assertThat(Impls.SEMAPHORES).containsAll(g.all());
    }
  }

  @Test
  void aBadPermitCountOrUnknownSemaphoreIsNamed() {
    assertThatThrownBy(() -> Impls.permits("redisson-semaphore@0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'redisson-semaphore@0'")
        .hasMessageContaining("@PERMITS");
    assertThatThrownBy(() -> Impls.open("hazelcast-semaphore@2"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'hazelcast-semaphore'")
        .hasMessageContaining("curator-semaphore");
  }

  @Test
  void aHoldingIsAnOverlapOnlyWhenAllPermitsAreHeld() {
    HandoffCounter two = new HandoffCounter(3, 2);
    two.acquired(0, true);
    two.acquired(1, true);
    assertThat(two.overlaps()).as("two holders of two permits").isZero();
    two.acquired(2, true);
    assertThat(two.overlaps()).as("a third while both were held").isEqualTo(1);
    assertThat(two.mostOpen()).isEqualTo(3);
    HandoffCounter lock = new HandoffCounter(2);
    lock.acquired(0, true);
    lock.acquired(1, true);
    assertThat(lock.overlaps()).as("a lock's second holder").isEqualTo(1);
  }

  @Test
  void aSkippedLocksmithRowSaysWhyAndItsPeersStillHaveFigures() {
    Map<String, double[]> rounds = new LinkedHashMap<>();
    rounds.put("redisson-semaphore/p50Us", new double[] {100, 120, 110});
    rounds.put("redisson-semaphore/p99Us", new double[] {300, 320, 310});
    Map<String, String> skipped = new LinkedHashMap<>();
    skipped.put(
        "locksmith-semaphore-redis", "Locksmith on redis://h:1 does not declare SEMAPHORES");
    Properties contended = new Properties();
    contended.setProperty("acquisitionsPerSec", "480");
    contended.setProperty("mostHolders", "2");
    contended.setProperty("overlaps", "0");
    Map<String, Properties> byImpl = new LinkedHashMap<>();
    byImpl.put("redisson-semaphore", contended);
    String md =
        SemaphoresRun.markdown(
            "header",
            "versions",
            rounds,
            byImpl,
            skipped,
            new int[] {3, 1000, 500},
            new int[] {2, 500, 1500});

    assertThat(md)
        .contains(
            "| Redis | `locksmith-semaphore-redis` | skipped: Locksmith on redis://h:1 does not"
                + " declare SEMAPHORES |")
        .contains("| Redis | `redisson-semaphore` | 110 (100–120) | 310 (300–320) |")
        .contains("| Redis | `redisson-semaphore` | 480 |")
        .contains(
            "uncontended p50, Locksmith / Redisson RSemaphore | skipped:"
                + " `locksmith-semaphore-redis` not measured");
  }

  @Test
  void perRoundRatiosOfMeasuredRowsHaveASpread() {
    Map<String, double[]> rounds = new LinkedHashMap<>();
    rounds.put("locksmith-semaphore-zookeeper/p50Us", new double[] {200, 220, 240});
    rounds.put("curator-semaphore/p50Us", new double[] {400, 400, 400});
    String md =
        SemaphoresRun.markdown(
            "h",
            "v",
            rounds,
            Map.of(),
            Map.of(),
            new int[] {3, 1000, 500},
            new int[] {2, 500, 1500});
    assertThat(md)
        .contains(
            "| ZooKeeper | uncontended p50, Locksmith / Curator InterProcessSemaphoreV2 | 220 µs /"
                + " 400 µs | 0.55× | 0.50–0.60× (3 rounds) |");
  }
}
