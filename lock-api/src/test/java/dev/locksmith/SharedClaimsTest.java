package dev.locksmith;

import static dev.locksmith.Kept.keep;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.Guarantees.Feature;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What the core does for semaphores and read-write locks whatever the backend: argument checks, the
 * feature check, reentrancy per claim, the refused upgrade and downgrade, and lease control kept to
 * exclusive locks. Backend behaviour itself is the kit's (rules 18 and 19).
 */
class SharedClaimsTest {
  private final LockClient client = Locks.connect("local:claims-" + UUID.randomUUID());

  @AfterEach
  void close() {
    client.close();
  }

  private static LockOptions nonReentrant() {
    return LockOptions.builder().reentrant(false).build();
  }

  @Test
  void permitsOutOfRangeAreRefusedNamingThemAndTheRange() {
    for (int bad : new int[] {0, -1, 10_001, Integer.MIN_VALUE}) {
      assertThatThrownBy(() -> client.semaphore("s", bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`permits` was " + bad)
          .hasMessageContaining("from 1 to 10000");
    }
    assertThat(client.semaphore("s", 10_000).name()).isEqualTo("s");
  }

  @Test
  void badNamesAndOptionsAreRefusedForBothKinds() {
    assertThatThrownBy(() -> client.semaphore(null, 2))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`name`");
    assertThatThrownBy(() -> client.semaphore("", 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`name`");
    assertThatThrownBy(() -> client.readWriteLock("a\nb"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`name`");
    assertThatThrownBy(() -> client.semaphore("s", 2, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`options`");
    assertThatThrownBy(() -> client.readWriteLock("rw", null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`options`");
  }

  @Test
  void aBackendWithoutTheFeaturesSaysSoWhenTheTypeIsAskedFor() {
    try (LockClient plain =
        Locks.connect(
            LockConfig.fromUri("local:claims-plain-" + UUID.randomUUID()),
            new LeaseControlTest.Wrapped(false, Feature.SEMAPHORES, Feature.READ_WRITE_LOCKS))) {
      assertThatThrownBy(() -> plain.semaphore("s", 2))
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessageContaining("SEMAPHORES");
      assertThatThrownBy(() -> plain.readWriteLock("rw"))
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessageContaining("READ_WRITE_LOCKS");
      assertThat(plain.lock("s").tryAcquire()).isPresent();
    }
  }

  @Test
  void aSemaphoreTakesAPermitPerAcquireByDefaultAndGivesTheThreadItsOwnBackWhenReentrant()
      throws Exception {
    DistributedLock plain = client.semaphore("sem", 2);
    assertThat(plain.options().reentrant()).isFalse();
    Lease first = plain.acquire(Duration.ofSeconds(1));
    Lease second =
        plain.acquire(
            Duration.ofSeconds(1)); // the same thread: a second permit, no self-wait error
    assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
    assertThat(plain.tryAcquire()).isEmpty();
    first.release();
    second.release();

    DistributedLock reentrant = client.semaphore("sem", 2, LockOptions.defaults());
    Lease outer = reentrant.acquire(Duration.ofSeconds(1));
    Lease inner = reentrant.acquire(Duration.ofSeconds(1));
    assertThat(inner.fencingToken()).isEqualTo(outer.fencingToken());
    assertThat(plain.tryAcquire()).isPresent(); // the reentrant holding took one permit only
  }

  @Test
  void anotherPermitCountWhileHeldIsAnErrorNamingBothAndTakesNothing() throws Exception {
    Lease held = client.semaphore("count", 3).acquire(Duration.ofSeconds(1));
    assertThatThrownBy(() -> client.semaphore("count", 2).tryAcquire())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("`permits` was 2")
        .hasMessageContaining("in use with 3 permits");
    assertThat(keep(client.semaphore("count", 3).tryAcquire())).isPresent();
    assertThat(keep(client.semaphore("count", 3).tryAcquire())).isPresent();
    assertThat(client.semaphore("count", 3).tryAcquire())
        .isEmpty(); // the failed attempt took no permit
    held.release();
  }

  @Test
  void theCountCanChangeOnceNoPermitIsHeld() throws Exception {
    client.semaphore("change", 1).acquire(Duration.ofSeconds(1)).release();
    Lease a = client.semaphore("change", 2).acquire(Duration.ofSeconds(1));
    Lease b = client.semaphore("change", 2).acquire(Duration.ofSeconds(1));
    assertThat(a.fencingToken()).isLessThan(b.fencingToken());
  }

  @Test
  void aLockASemaphoreAndAReadWriteLockOfOneNameAreApart() throws Exception {
    assertThat(keep(client.lock("same").tryAcquire())).isPresent();
    assertThat(keep(client.semaphore("same", 1).tryAcquire())).isPresent();
    assertThat(keep(client.readWriteLock("same").writeLock().tryAcquire())).isPresent();
    assertThat(client.semaphore("same", 1).tryAcquire()).isEmpty();
  }

  @Test
  void upgradingIsRefusedAtOnceAndTryAcquireAnswersEmpty() throws Exception {
    DistributedReadWriteLock rw = client.readWriteLock("up");
    Lease read = rw.readLock().acquire(Duration.ofSeconds(1));
    long start = System.nanoTime();
    assertThatThrownBy(() -> rw.writeLock().acquire(Duration.ofSeconds(30)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("holds the read lock of read-write lock 'up'")
        .hasMessageContaining("upgrading is not supported");
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(10_000);
    assertThat(rw.writeLock().tryAcquire()).isEmpty();
    assertThat(rw.writeLock().tryAcquire(Duration.ZERO)).isEmpty();
    read.release();
    assertThat(rw.writeLock().tryAcquire()).isPresent();
  }

  @Test
  void downgradingIsRefusedAtOnceWhateverTheReentrancy() throws Exception {
    DistributedReadWriteLock rw = client.readWriteLock("down", nonReentrant());
    Lease write = rw.writeLock().acquire(Duration.ofSeconds(1));
    assertThatThrownBy(() -> rw.readLock().acquire())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("downgrading is not supported");
    assertThat(rw.readLock().tryAcquire()).isEmpty();
    // another thread is an ordinary waiter, not refused
    CompletableFuture<Lease> other = rw.readLock().acquireAsync(Duration.ofSeconds(5));
    assertThat(other).isNotDone();
    write.release();
    assertThat(other.get(5, TimeUnit.SECONDS).isValid()).isTrue();
  }

  @Test
  void eachSideIsReentrantPerThreadAsTheOptionsSay() throws Exception {
    DistributedReadWriteLock rw = client.readWriteLock("re");
    Lease w1 = rw.writeLock().acquire(Duration.ofSeconds(1));
    Lease w2 = rw.writeLock().acquire(Duration.ofSeconds(1));
    assertThat(w2.fencingToken()).isEqualTo(w1.fencingToken());
    w2.release();
    assertThat(client.readWriteLock("re").readLock().acquireAsync(Duration.ZERO))
        .failsWithin(Duration.ofSeconds(5)); // still held by the outer holding
    w1.release();

    DistributedReadWriteLock strict = client.readWriteLock("re-strict", nonReentrant());
    Lease w = strict.writeLock().acquire(Duration.ofSeconds(1));
    assertThatThrownBy(() -> strict.writeLock().acquire(Duration.ofSeconds(5)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("write lock of 're-strict' is already held by the calling thread");
    w.release();
  }

  @Test
  void aWaitingWriterHoldsBackNewReadersUntilItWithdraws() throws Exception {
    DistributedReadWriteLock rw = client.readWriteLock("pref");
    Lease reader = rw.readLock().acquire(Duration.ofSeconds(1));
    CompletableFuture<Lease> writer = rw.writeLock().acquireAsync(Duration.ofSeconds(30));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    // the writer's first poll marks it waiting; a new reader is held back from then on
    Optional<Lease> late = Optional.empty();
    while (System.nanoTime() < deadline) {
      CompletableFuture<Lease> probe = rw.readLock().acquireAsync(Duration.ZERO);
      late = Optional.ofNullable(probe.handle((l, e) -> l).get(5, TimeUnit.SECONDS));
      if (late.isEmpty()) {
        break;
      }
      late.get().release();
      Thread.sleep(5);
    }
    assertThat(late).as("a new reader while a writer waits").isEmpty();
    writer.cancel(true);
    Lease after = rw.readLock().acquireAsync(Duration.ofSeconds(5)).get(5, TimeUnit.SECONDS);
    assertThat(after.fencingToken()).isGreaterThan(reader.fencingToken());
  }

  @Test
  void lastingControlIsForExclusiveLocksAndStateIsUnknown() throws Exception {
    LockOptions unrenewed =
        LockOptions.builder().autoRenew(false).lease(Duration.ofSeconds(5)).build();
    Lease permit = client.semaphore("ctl", 2, unrenewed).acquire(Duration.ofSeconds(1));
    assertThatThrownBy(() -> permit.extend(Duration.ofSeconds(10)))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("semaphore 'ctl'");
    assertThatThrownBy(() -> permit.releaseAfter(Duration.ofSeconds(10)))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("exclusive locks");
    assertThat(permit.isValid()).isTrue();
    assertThat(client.semaphore("ctl", 2).state()).isEqualTo(LockState.unknown());
    assertThat(client.readWriteLock("ctl").writeLock().state()).isEqualTo(LockState.unknown());
  }

  @Test
  void theLockViewOfASemaphoreHoldsOnePermitPerThread() throws Exception {
    DistributedLock sem = client.semaphore("view", 1);
    Lock view = sem.asLock();
    view.lock();
    view.lock(); // reentrant per thread, as every Lock view
    assertThat(sem.tryAcquire()).isEmpty();
    view.unlock();
    view.unlock();
    assertThatThrownBy(view::unlock)
        .isInstanceOf(IllegalMonitorStateException.class)
        .hasMessageContaining("semaphore 'view'");
    assertThat(sem.tryAcquire()).isPresent();
  }
}
