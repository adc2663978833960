package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.spi.Claim;
import org.junit.jupiter.api.Test;

/**
 * The names and keys of the semaphore and read-write lock tables: derived from the lease table's
 * within the 63-character limit, distinct, and never a lock's wake-up key.
 */
class SharedTableNamesTest {
  @Test
  void theTablesAreNamedAfterTheLeaseTableAndStayIdentifiers() {
    assertThat(SharedTable.suffixed("locksmith_locks", "_shared"))
        .isEqualTo("locksmith_locks_shared");
    assertThat(SharedTable.suffixed("app.locks", "_shared_leases"))
        .isEqualTo("app.locks_shared_leases");
    String a = "a".repeat(60) + "bc";
    String b = "a".repeat(60) + "cb";
    for (String suffix : new String[] {"_shared", "_shared_leases"}) {
      assertThat(SharedTable.suffixed(a, suffix))
          .hasSize(63)
          .endsWith(suffix)
          .matches(LeaseTable.IDENTIFIER);
      assertThat(SharedTable.suffixed(a, suffix)).isNotEqualTo(SharedTable.suffixed(b, suffix));
      assertThat(SharedTable.suffixed("s." + a, suffix))
          .startsWith("s.")
          .matches(LeaseTable.IDENTIFIER);
    }
  }

  @Test
  void aSemaphoreAndAReadWriteLockOfOneNameAreWokenApartFromEachOtherAndFromTheLock() {
    String sem = SharedTable.wakeKey(SharedTable.kind(Claim.permit(2)), "x");
    String rw = SharedTable.wakeKey(SharedTable.kind(Claim.read()), "x");
    assertThat(SharedTable.wakeKey(SharedTable.kind(Claim.write()), "x")).isEqualTo(rw);
    assertThat(sem).isNotEqualTo(rw).isNotEqualTo("x");
    assertThat(rw).isNotEqualTo("x").startsWith("\u0001"); // lock names hold no control characters
  }
}
