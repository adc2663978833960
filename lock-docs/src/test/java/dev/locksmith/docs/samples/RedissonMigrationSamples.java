package dev.locksmith.docs.samples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.DistributedLock;
import dev.locksmith.DistributedReadWriteLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The Locksmith side of the Redisson migration guide, run on {@code local:}. */
class RedissonMigrationSamples {
  private LockClient client;

  @BeforeEach
  void connect() {
    client = Locks.connect("local:docs-redisson");
  }

  @AfterEach
  void close() {
    client.close();
  }

  @Test
  void lockRenewedWhileHeld() throws Exception {
    // tag::lock[]
    DistributedLock lock = client.lock("orders:42"); // lease 30 s, renewed every 10 s while held
    try (Lease lease = lock.acquire()) {
      process(lease.fencingToken());
    }
    // end::lock[]
    assertThat(lock.tryAcquire().map(Lease::release)).contains(true);
  }

  @Test
  void fixedLeaseWithoutRenewal() throws Exception {
    // tag::fixed-lease[]
    LockOptions tenSeconds =
        LockOptions.builder().lease(Duration.ofSeconds(10)).autoRenew(false).build();
    DistributedLock lock = client.lock("orders:42", tenSeconds);
    Optional<Lease> lease = lock.tryAcquire(Duration.ofSeconds(3)); // wait 3 s, hold 10 s at most
    lease.ifPresent(
        held -> {
          try (held) {
            process(held.fencingToken());
          }
        });
    // end::fixed-lease[]
    assertThat(lease).isPresent();
    assertThat(lease.get().isValid()).isFalse(); // released by the try block
  }

  @Test
  void fixedLeaseRunsOut() throws Exception {
    // tag::lease-runs-out[]
    LockOptions short_ =
        LockOptions.builder().lease(Duration.ofMillis(300)).autoRenew(false).build();
    Lease lease = client.lock("orders:43", short_).acquire(Duration.ofSeconds(5));
    lease
        .lost()
        .toCompletableFuture()
        .get(30, TimeUnit.SECONDS); // the lease ran out: told, not silent
    boolean stillOurs = lease.release(); // false: someone else's lock is never touched
    // end::lease-runs-out[]
    assertThat(stillOurs).isFalse();
  }

  @Test
  void asJavaLock() throws Exception {
    // tag::as-lock[]
    Lock lock =
        client.lock("orders:42").asLock(); // java.util.concurrent.locks.Lock, reentrant per thread
    if (lock.tryLock(3, TimeUnit.SECONDS)) {
      try {
        process(0);
      } finally {
        lock.unlock();
      }
    }
    // end::as-lock[]
  }

  @Test
  void releaseFromAnotherThread() throws Exception {
    // tag::other-thread[]
    Lease lease = client.lock("export").acquire(Duration.ofSeconds(5));
    CompletableFuture<Boolean> released = CompletableFuture.supplyAsync(lease::release);
    // the lease, not the thread, owns the lock: any thread holding it may release it
    // end::other-thread[]
    assertThat(released.get(30, TimeUnit.SECONDS)).isTrue();
  }

  @Test
  void readWriteLockAndSemaphore() throws Exception {
    // tag::read-write[]
    DistributedReadWriteLock rw = client.readWriteLock("prices");
    try (Lease read = rw.readLock().acquire(Duration.ofSeconds(5))) {
      show(read.fencingToken());
    }
    try (Lease write = rw.writeLock().acquire(Duration.ofSeconds(5))) {
      store(write.fencingToken());
    }
    // end::read-write[]

    // tag::semaphore[]
    DistributedLock slots = client.semaphore("report-workers", 5); // same N on every client
    try (Lease permit =
        slots.acquire(Duration.ofSeconds(30))) { // a leased permit: a crash frees it
      process(permit.fencingToken());
    }
    // end::semaphore[]

    // tag::expirable-permit[]
    LockOptions twoSeconds =
        LockOptions.builder().lease(Duration.ofSeconds(2)).autoRenew(false).build();
    DistributedLock limited = client.semaphore("api-calls", 5, twoSeconds);
    Lease permit = limited.acquire(Duration.ofSeconds(5)); // the Lease is the permit id
    permit.release(); // or leave it: the permit comes back 2 s after the acquire
    // end::expirable-permit[]
    assertThat(permit.isValid()).isFalse();
  }

  @Test
  void fencedLock() throws Exception {
    long earlier;
    try (Lease first = client.lock("ledger").acquire()) {
      earlier = first.fencingToken();
    }
    // tag::fenced[]
    try (Lease lease = client.lock("ledger").acquire(Duration.ofSeconds(5))) {
      long token = lease.fencingToken(); // every lock has one: above every earlier holder's
      store(token);
    }
    // end::fenced[]
    try (Lease later = client.lock("ledger").acquire()) {
      assertThat(later.fencingToken()).isGreaterThan(earlier);
    }
  }

  private static void process(long token) {}

  private static void show(long token) {}

  private static void store(long token) {
    assertThat(token).isPositive();
  }
}
