package dev.locksmith.docs.samples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.DistributedLock;
import dev.locksmith.DistributedReadWriteLock;
import dev.locksmith.Guarantees;
import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.Locks;
import dev.locksmith.local.LocalLockProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The samples of the overview and the getting-started page, each run on {@code local:} and checked
 * for what the page says about it. The text between {@code tag::} and {@code end::} markers is what
 * the site shows.
 */
class GettingStartedSamples {

  /** Stands in for the store a lock protects: it refuses a write with a lower token than it saw. */
  static final class FencedStore {
    private final AtomicLong highest = new AtomicLong();
    private final List<String> rows = new ArrayList<>();

    synchronized boolean write(String row, long token) {
      if (token < highest.get()) {
        return false;
      }
      highest.set(token);
      rows.add(row);
      return true;
    }

    synchronized List<String> rows() {
      return List.copyOf(rows);
    }
  }

  @Test
  void firstLock() throws Exception {
    FencedStore store = new FencedStore();
    // tag::first-lock[]
    try (LockClient client = Locks.connect("local:")) { // later: "redis://localhost:6379", ...
      DistributedLock lock = client.lock("stock:sku-123");
      try (Lease lease = lock.acquire(Duration.ofSeconds(5))) { // LockTimeoutException after 5 s
        store.write("sku-123 -1", lease.fencingToken()); // the store refuses lower tokens
      }
    }
    // end::first-lock[]
    assertThat(store.rows()).containsExactly("sku-123 -1");
  }

  @Test
  void tryAcquireAnswersEmptyWhileHeld() throws Exception {
    try (LockClient client = Locks.connect("local:docs-try")) {
      Lease first = client.lock("nightly-report").acquire();
      // tag::try-acquire[]
      DistributedLock lock = client.lock("nightly-report");
      Optional<Lease> lease = lock.tryAcquire(Duration.ofMillis(200)); // wait at most 200 ms
      if (lease.isEmpty()) {
        System.out.println("someone else runs the report; skip it this time");
      }
      // end::try-acquire[]
      // The holder here is the same thread, and locks are reentrant per thread by default: a
      // second thread sees the lock held.
      CompletableFuture<Optional<Lease>> other =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return lock.tryAcquire(Duration.ofMillis(200));
                } catch (InterruptedException e) {
                  throw new IllegalStateException(e);
                }
              });
      assertThat(other.get(30, TimeUnit.SECONDS)).isEmpty();
      assertThat(lease).isPresent(); // reentrant: the holding thread got its own lock back
      lease.get().close();
      first.close();
    }
  }

  @Test
  void tokensGrowAndALostLeaseIsSignalled() throws Exception {
    // A 1 s lease, renewed every third of it, so that the loss below is noticed within a second.
    try (LockClient client = Locks.connect("local:docs-lost?lease=1s")) {
      long firstToken;
      try (Lease lease = client.lock("orders").acquire(Duration.ofSeconds(5))) {
        firstToken = lease.fencingToken();
      }
      // tag::lost[]
      Lease lease = client.lock("orders").acquire(Duration.ofSeconds(5));
      CompletableFuture<LeaseLostException> lost = lease.lost().toCompletableFuture();
      lost.thenAccept(e -> System.out.println("stop writing: " + e.getMessage()));
      // end::lost[]
      assertThat(lease.fencingToken()).isGreaterThan(firstToken);
      // The test injects the loss that a real server would cause (an expiry, a failover):
      // tag::revoke[]
      LocalLockProvider.revoke("docs-lost", "orders"); // as if the server had dropped the lease
      // end::revoke[]
      LeaseLostException reason = lost.get(30, TimeUnit.SECONDS);
      assertThat(reason.lockName()).isEqualTo("orders");
      assertThat(lease.isValid()).isFalse();
      assertThat(lease.release()).isFalse(); // no longer ours: nothing is touched
    }
  }

  @Test
  void manualLeaseAndReleaseAfter() throws Exception {
    try (LockClient client = Locks.connect("local:docs-manual")) {
      // tag::release-after[]
      LockOptions manual =
          LockOptions.builder().lease(Duration.ofMinutes(1)).autoRenew(false).build();
      Optional<Lease> run = client.lock("nightly-report", manual).tryAcquire();
      run.ifPresent(
          lease -> {
            buildReport(lease.fencingToken());
            lease.releaseAfter(Duration.ofMinutes(10)); // nobody runs it again for 10 minutes
          });
      // end::release-after[]
      assertThat(run).isPresent();
      assertThat(client.lock("nightly-report", manual).tryAcquire()).isEmpty();
    }
  }

  @Test
  void extendAManualLease() throws Exception {
    try (LockClient client = Locks.connect("local:docs-extend")) {
      List<String> batches = List.of("a", "b", "c");
      List<String> done = new ArrayList<>();
      // tag::extend[]
      LockOptions manual =
          LockOptions.builder().lease(Duration.ofSeconds(30)).autoRenew(false).build();
      try (Lease lease = client.lock("import", manual).acquire(Duration.ofSeconds(5))) {
        for (String batch : batches) {
          if (!lease.extend(Duration.ofSeconds(30))) {
            break; // the lease is no longer ours: stop
          }
          done.add(batch);
        }
      }
      // end::extend[]
      assertThat(done).containsExactly("a", "b", "c");
    }
  }

  @Test
  void semaphoreAndReadWriteLock() throws Exception {
    try (LockClient client = Locks.connect("local:docs-sem")) {
      // tag::semaphore[]
      DistributedLock workers = client.semaphore("report-workers", 2); // at most 2 leases at once
      Lease one = workers.acquire(Duration.ofSeconds(5));
      Lease two = workers.acquire(Duration.ofSeconds(5));
      Optional<Lease> three = workers.tryAcquire(); // empty: both permits are taken
      two.close();
      try (Lease again = workers.acquire(Duration.ofSeconds(5))) { // the freed permit
        assert again.fencingToken() > two.fencingToken(); // one counter per semaphore
      }
      one.close();
      // end::semaphore[]
      assertThat(three).isEmpty();

      // tag::read-write[]
      DistributedReadWriteLock prices = client.readWriteLock("prices");
      try (Lease read1 = prices.readLock().acquire(Duration.ofSeconds(5));
          Lease read2 = prices.readLock().acquireAsync(Duration.ofSeconds(5)).join()) {
        // readers share; a writer waits until both are gone
      }
      try (Lease write = prices.writeLock().acquire(Duration.ofSeconds(5))) {
        // excludes every other lease; its token is above every earlier reader's
      }
      // end::read-write[]
    }
  }

  @Test
  void noUpgradeFromReadToWrite() throws Exception {
    try (LockClient client = Locks.connect("local:docs-upgrade")) {
      DistributedReadWriteLock prices = client.readWriteLock("prices");
      try (Lease read = prices.readLock().acquire(Duration.ofSeconds(5))) {
        // tag::no-upgrade[]
        // holding the read side: asking for the write side fails at once instead of waiting for
        // ever
        assertThatThrownBy(() -> prices.writeLock().acquire(Duration.ofSeconds(5)))
            .isInstanceOf(IllegalStateException.class);
        assertThat(prices.writeLock().tryAcquire()).isEmpty();
        // end::no-upgrade[]
      }
    }
  }

  @Test
  void guaranteesAreData() {
    try (LockClient client = Locks.connect("local:")) {
      // tag::guarantees[]
      Guarantees g = client.guarantees();
      boolean fenced = g.has(Guarantees.Feature.FENCING);
      boolean semaphoresWakeOnRelease =
          g.has(Guarantees.Feature.NOTIFIED_WAKEUP, Guarantees.Primitive.SEMAPHORE);
      // end::guarantees[]
      assertThat(fenced).isTrue();
      assertThat(semaphoresWakeOnRelease).isTrue();
    }
  }

  private static void buildReport(long token) {
    assertThat(token).isPositive();
  }
}
