package dev.locksmith.local;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * A {@code local:} space keeps nothing of a name once it is free and nobody waits for it, so a JVM
 * that locks one name per order does not grow, and a name taken again still gets a higher token
 * than before, even when its counter had run ahead of the wall clock it starts from.
 */
class LocalStorageTest {

  @Test
  void freeNamesAreForgottenAndTheirTokensGoOn() throws Exception {
    String space = "storage-" + UUID.randomUUID();
    LocalSpace table = LocalSpace.named(space);
    try (LockClient client = Locks.connect("local:" + space)) {
      for (int i = 0; i < 20_000; i++) {
        client.lock("order-" + i).acquire(Duration.ofSeconds(1)).release();
        client.semaphore("sku-" + i, 2).acquire(Duration.ofSeconds(1)).release();
        client.readWriteLock("user-" + i).readLock().acquire(Duration.ofSeconds(1)).release();
      }
      assertThat(table.entries()).as("entries after 60,000 names were used and freed").isZero();

      // a counter far ahead of the wall clock: 5,000 grants of one name in a few milliseconds
      long last = 0;
      for (int i = 0; i < 5_000; i++) {
        try (Lease lease = client.lock("hot").acquire(Duration.ofSeconds(1))) {
          assertThat(lease.fencingToken()).isGreaterThan(last);
          last = lease.fencingToken();
        }
      }
      assertThat(table.entries()).isZero();
      assertThat(table.removedFence()).as("the floor of new counters").isGreaterThanOrEqualTo(last);
      try (Lease again = client.lock("hot").acquire(Duration.ofSeconds(1))) {
        assertThat(again.fencingToken()).as("after %d", last).isGreaterThan(last);
      }

      // a name held, or waited for, is kept
      Lease held = client.lock("held").acquire(Duration.ofSeconds(1));
      assertThat(table.entries()).isOne();
      assertThat(held.release()).isTrue();
      assertThat(table.entries()).isZero();
    }
  }
}
