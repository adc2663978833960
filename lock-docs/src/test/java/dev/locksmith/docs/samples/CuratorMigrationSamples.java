package dev.locksmith.docs.samples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.DistributedLock;
import dev.locksmith.DistributedReadWriteLock;
import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.local.LocalLockProvider;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The Locksmith side of the Curator migration guide, run on {@code local:}. */
class CuratorMigrationSamples {
  private LockClient client;

  @BeforeEach
  void connect() {
    client = Locks.connect("local:docs-curator");
  }

  @AfterEach
  void close() {
    client.close();
  }

  @Test
  void mutex() throws Exception {
    // tag::mutex[]
    DistributedLock lock = client.lock("/locks/orders-42"); // a name, not a znode path you manage
    Optional<Lease> lease = lock.tryAcquire(Duration.ofSeconds(3));
    if (lease.isPresent()) {
      try (Lease held = lease.get()) {
        process(held.fencingToken());
      }
    }
    // end::mutex[]
    assertThat(lease).isPresent();
  }

  @Test
  void lossIsSignalledPerLease() throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    // A 1 s lease, renewed every third of it, so that the loss below is noticed within a second.
    LockClient client = Locks.connect("local:docs-curator-lost?lease=1s");
    // tag::lost[]
    Lease lease = client.lock("leader-work").acquire(Duration.ofSeconds(5));
    CompletableFuture<Void> stopped =
        lease
            .lost()
            .thenAccept(
                (LeaseLostException e) -> {
                  stop.set(true); // SESSION_LOST on ZooKeeper, TAKEN/EXPIRED/... elsewhere
                })
            .toCompletableFuture();
    // end::lost[]
    LocalLockProvider.revoke("docs-curator-lost", "leader-work"); // as if the session had expired
    stopped.get(30, TimeUnit.SECONDS);
    client.close();
    assertThat(stop).isTrue();
    assertThat(lease.isValid()).isFalse();
  }

  @Test
  void semaphoreLeases() throws Exception {
    // tag::semaphore[]
    DistributedLock workers = client.semaphore("report-workers", 3); // maxLeases = 3
    try (Lease permit = workers.acquire(Duration.ofSeconds(10))) {
      process(permit.fencingToken());
    } // returnLease
    // end::semaphore[]
  }

  @Test
  void readWriteLockHasNoDowngrade() throws Exception {
    // tag::read-write[]
    DistributedReadWriteLock rw = client.readWriteLock("config");
    try (Lease write = rw.writeLock().acquire(Duration.ofSeconds(5))) {
      // no downgrade: the read side fails at once while this thread holds the write side
      assertThatThrownBy(() -> rw.readLock().acquire(Duration.ofSeconds(1)))
          .isInstanceOf(IllegalStateException.class);
    }
    try (Lease read = rw.readLock().acquire(Duration.ofSeconds(5))) { // after the write lease
      process(read.fencingToken());
    }
    // end::read-write[]
  }

  private static void process(long token) {
    assertThat(token).isPositive();
  }
}
