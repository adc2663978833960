package dev.locksmith.reactor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.DistributedLock;
import dev.locksmith.DistributedReadWriteLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockTimeoutException;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * What {@link ReactiveLocks} promises, run against one backend by each subclass. Subscriptions,
 * bodies and cancellations happen on {@link Schedulers#parallel()} wherever it matters: with
 * BlockHound installed (blockhound-junit-platform), a release or a withdrawal that ran on that
 * non-blocking thread instead of being handed to boundedElastic fails the test, either as the error
 * of the publisher or as a lock that stays held.
 */
abstract class ReactiveLocksContract {
  /** Long enough to never run out on a loaded CI machine; a lock left held makes it run out. */
  static final Duration LONG = Duration.ofSeconds(30);

  static final Duration VERIFY = Duration.ofSeconds(60);

  LockClient client;
  LockClient other;
  ReactiveLocks locks;
  String name;

  /**
   * @return the backend's URI
   */
  abstract String uri();

  @BeforeEach
  void open(TestInfo test) {
    // Leases far longer than LONG: a lock left held is found held, never freed by its expiry.
    String leased = uri() + (uri().contains("?") ? "&" : "?") + "lease=300s";
    client = Locks.connect(leased);
    other = Locks.connect(leased);
    locks = ReactiveLocks.of(client);
    name = "reactor-" + test.getTestMethod().orElseThrow().getName() + "-" + System.nanoTime();
  }

  @AfterEach
  void close() {
    client.close();
    other.close();
  }

  @BeforeEach
  @AfterEach
  void noBlockingCallOnANonBlockingThread() {
    assertThat(BlockingCalls.installed()).as("BlockHound installed").isTrue();
    assertThat(BlockingCalls.drain()).as("blocking calls on non-blocking threads").isEmpty();
  }

  @Test
  void acquireGivesALeaseThatReleaseGivesBack() {
    AtomicReference<Lease> got = new AtomicReference<>();
    StepVerifier.create(locks.acquire(name, LONG).subscribeOn(Schedulers.parallel()))
        .assertNext(
            lease -> {
              got.set(lease);
              assertThat(lease.lockName()).isEqualTo(name);
              assertThat(lease.fencingToken()).isPositive();
              assertThat(lease.isValid()).isTrue();
            })
        .expectComplete()
        .verify(VERIFY);
    assertHeld(name);

    StepVerifier.create(locks.release(got.get()).subscribeOn(Schedulers.parallel()))
        .expectNext(true)
        .expectComplete()
        .verify(VERIFY);
    assertFreeNow(name);
    StepVerifier.create(locks.release(got.get())).expectNext(false).expectComplete().verify(VERIFY);
  }

  @Test
  void anElectionsCandidateCampaignsReactivelyUnderItsIdentity() {
    dev.locksmith.Election seen = other.election(name);
    StepVerifier.create(
            locks
                .withLockMono(
                    client.election(name).candidate("reactive-1"),
                    LONG,
                    lease ->
                        Mono.fromCallable(() -> seen.leader().orElseThrow())
                            .subscribeOn(Schedulers.boundedElastic())
                            .map(
                                l ->
                                    l.identity().orElse("?")
                                        + "@"
                                        + (l.term().orElse(-1) == lease.fencingToken())))
                .subscribeOn(Schedulers.parallel()))
        .assertNext(leader -> assertThat(leader).isEqualTo("reactive-1@true"))
        .expectComplete()
        .verify(VERIFY);
    assertFreeNow(name);
  }

  @Test
  void theLeaseAndTheBodyArriveWhereBlockingIsAllowed() {
    StepVerifier.create(
            locks
                .acquire(name, LONG)
                .subscribeOn(Schedulers.parallel())
                .flatMap(lease -> locks.release(lease).thenReturn(where())))
        .assertNext(
            thread -> assertThat(thread).containsIgnoringCase("boundedElastic").endsWith("|false"))
        .expectComplete()
        .verify(VERIFY);
    StepVerifier.create(
            locks
                .withLockMono(name, LONG, lease -> Mono.fromCallable(ReactiveLocksContract::where))
                .subscribeOn(Schedulers.parallel()))
        .assertNext(
            thread -> assertThat(thread).containsIgnoringCase("boundedElastic").endsWith("|false"))
        .expectComplete()
        .verify(VERIFY);
    assertFreeNow(name);
  }

  @Test
  void tryAcquireIsEmptyWhileHeldAndALeaseWhenFree() throws Exception {
    try (Lease held = other.lock(name).acquire(LONG)) {
      StepVerifier.create(locks.tryAcquire(name).subscribeOn(Schedulers.parallel()))
          .expectComplete()
          .verify(VERIFY);
      StepVerifier.create(locks.tryAcquire(client.lock(name))).expectComplete().verify(VERIFY);
      assertThat(held.isValid()).isTrue();
    }
    StepVerifier.create(locks.tryAcquire(name).flatMap(locks::release))
        .expectNext(true)
        .expectComplete()
        .verify(VERIFY);
    assertFreeNow(name);
  }

  @Test
  void aTimeoutIsLockTimeoutExceptionAndLeavesNothingBehind() throws Exception {
    try (Lease held = other.lock(name).acquire(LONG)) {
      StepVerifier.create(
              locks.acquire(name, Duration.ofMillis(300)).subscribeOn(Schedulers.parallel()))
          .expectErrorSatisfies(
              e ->
                  assertThat(e).isInstanceOf(LockTimeoutException.class).hasMessageContaining(name))
          .verify(VERIFY);
      AtomicBoolean called = new AtomicBoolean();
      StepVerifier.create(
              locks.withLockMono(
                  name,
                  Duration.ofMillis(300),
                  lease -> {
                    called.set(true);
                    return Mono.just(1);
                  }))
          .expectError(LockTimeoutException.class)
          .verify(VERIFY);
      assertThat(called).as("the body of a lock not acquired").isFalse();
    }
    assertFreeNow(name);
  }

  @Test
  void cancellingWhileWaitingWithdrawsTheWaiter() throws Exception {
    CountingLock lock = new CountingLock(client.lock(name));
    AtomicReference<Lease> delivered = new AtomicReference<>();
    Lease held = other.lock(name).acquire(LONG);
    Disposable waiting =
        locks
            .acquire(lock, Duration.ofMinutes(10))
            .subscribeOn(Schedulers.parallel())
            .subscribe(delivered::set);
    // one attempt that finds the lock busy, then the wait
    await("the waiter to start", () -> lock.asyncCalls() == 2);
    assertThat(lock.futures.get(0)).as("the first attempt").isCompletedExceptionally();
    Schedulers.parallel().schedule(waiting::dispose); // cancelled from a non-blocking thread
    await("the future to be cancelled", () -> lock.futures.get(1).isCancelled());
    held.release();

    // Had the waiter stayed, it would get the lock for up to ten minutes; it is gone instead.
    Optional<Lease> next = other.lock(name).tryAcquire(LONG);
    assertThat(next).as("the lock, once its holder released it").isPresent();
    next.get().release();
    assertThat(delivered.get()).as("a lease delivered after the cancel").isNull();
    // The client may still grant the withdrawn waiter for a moment as it leaves, and then releases
    // that grant itself (acquireAsync's contract): free soon, and not held for the 300 s lease.
    assertFree(name);
  }

  /**
   * @return how many grants {@link #aCancelRacingTheGrantNeverLeavesTheLockHeld} races a cancel
   *     against: enough that the grant lands inside Reactor's own cancel in some of them (at 2,000
   *     on {@code local:} a sink that drops the lease then leaves it held every time)
   */
  int raceRounds() {
    return Integer.getInteger("rounds", 200);
  }

  @Test
  void aCancelRacingTheGrantNeverLeavesTheLockHeld() {
    for (int i = 0; i < raceRounds(); i++) {
      Disposable run =
          locks
              .withLock(name, LONG, lease -> Flux.never())
              .subscribeOn(Schedulers.parallel())
              .subscribe();
      run.dispose();
      // A subscriber that releases a lease reaching it after its cancel, as acquire() asks of
      // it: subscribe(Consumer) would drop such a lease, unseen by anything upstream.
      BaseSubscriber<Lease> acquire =
          new BaseSubscriber<>() {
            @Override
            protected void hookOnNext(Lease lease) {
              lease.release();
            }
          };
      locks.acquire(name, LONG).subscribe(acquire);
      acquire.dispose();
    }
    assertFree(name);
  }

  @Test
  void withLockHoldsWhileTheBodyRunsAndReleasesBeforeCompleting() {
    StepVerifier.create(
            locks
                .withLock(
                    name,
                    LONG,
                    lease ->
                        Flux.just(lease.isValid())
                            .concatWith(Mono.fromCallable(() -> isHeld(name)))
                            .publishOn(Schedulers.parallel()))
                .subscribeOn(Schedulers.parallel()))
        .expectNext(true, true)
        .expectComplete()
        .verify(VERIFY);
    assertFreeNow(name); // released before onComplete, so at once
  }

  @Test
  void withLockReleasesWhenTheBodyFails() {
    StepVerifier.create(
            locks
                .withLock(
                    name,
                    LONG,
                    lease ->
                        Flux.just(1)
                            .concatWith(
                                Mono.delay(Duration.ofMillis(5))
                                    .then(Mono.error(new IllegalStateException("boom")))))
                .subscribeOn(Schedulers.parallel()))
        .expectNext(1)
        .expectErrorMessage("boom")
        .verify(VERIFY);
    assertFreeNow(name);

    StepVerifier.create(
            locks.withLock(
                name,
                LONG,
                lease -> {
                  throw new IllegalStateException("thrown by the body");
                }))
        .expectErrorMessage("thrown by the body")
        .verify(VERIFY);
    assertFreeNow(name);
  }

  @Test
  void withLockReleasesWhenCancelled() {
    // take(2) cancels the body on the parallel thread of Flux.interval
    StepVerifier.create(
            locks.withLock(name, LONG, lease -> Flux.interval(Duration.ofMillis(5))).take(2))
        .expectNext(0L, 1L)
        .expectComplete()
        .verify(VERIFY);
    assertFree(name);

    CountDownLatch running = new CountDownLatch(1);
    StepVerifier.create(
            locks.withLockMono(
                name, LONG, lease -> Mono.never().doOnSubscribe(s -> running.countDown())))
        .then(() -> awaitLatch(running))
        .then(() -> assertHeld(name))
        .thenCancel()
        .verify(VERIFY);
    assertFree(name);
  }

  @Test
  void withLockMonoSignalsTheValueAfterTheRelease() {
    StepVerifier.create(
            locks
                .withLockMono(name, LONG, lease -> Mono.just(lease.fencingToken()))
                .subscribeOn(Schedulers.parallel()))
        .assertNext(
            token -> {
              assertThat(token).isPositive();
              assertFreeNow(name);
            })
        .expectComplete()
        .verify(VERIFY);
    StepVerifier.create(locks.withLockMono(name, LONG, lease -> Mono.empty()))
        .expectComplete()
        .verify(VERIFY);
    assertFreeNow(name);
  }

  @Test
  void aLeaseLostWhileTheBodyRunsIsSeenThroughLost() {
    CountDownLatch running = new CountDownLatch(1);
    StepVerifier.create(
            locks.withLockMono(
                name,
                LONG,
                lease ->
                    Mono.fromCompletionStage(lease.lost())
                        .doOnSubscribe(s -> running.countDown())
                        .map(lost -> lost.getClass().getSimpleName())))
        .then(() -> awaitLatch(running))
        .then(client::close) // every lease of the client is lost
        .expectNext("LeaseLostException")
        .expectComplete()
        .verify(VERIFY);
    assertFree(name);
  }

  @Test
  void semaphoresWorkThroughTheLockOverloads() {
    DistributedLock workers = client.semaphore(name, 2);
    Lease first = locks.acquire(workers, LONG).block(VERIFY);
    Lease second = locks.acquire(workers, LONG).subscribeOn(Schedulers.parallel()).block(VERIFY);
    assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
    StepVerifier.create(locks.tryAcquire(workers)).expectComplete().verify(VERIFY);
    assertThat(other.semaphore(name, 2).tryAcquire()).as("a third permit").isEmpty();

    assertThat(locks.release(first).block(VERIFY)).isTrue();
    StepVerifier.create(
            locks.withLockMono(
                workers,
                LONG,
                permit -> Mono.fromCallable(() -> other.semaphore(name, 2).tryAcquire().isEmpty())))
        .expectNext(true)
        .expectComplete()
        .verify(VERIFY);
    assertThat(locks.release(second).block(VERIFY)).isTrue();
    try (Lease a = other.semaphore(name, 2).tryAcquire().orElseThrow();
        Lease b = other.semaphore(name, 2).tryAcquire().orElseThrow()) {
      assertThat(a.isValid() && b.isValid()).as("both permits free again").isTrue();
    }
  }

  @Test
  void readWriteLocksWorkThroughTheLockOverloads() {
    DistributedReadWriteLock prices = client.readWriteLock(name);
    Lease reader = locks.acquire(prices.readLock(), LONG).block(VERIFY);
    StepVerifier.create(
            locks.withLockMono(
                prices.readLock(), LONG, second -> Mono.just(second.isValid() && reader.isValid())))
        .expectNext(true)
        .expectComplete()
        .verify(VERIFY);
    StepVerifier.create(locks.tryAcquire(prices.writeLock())).expectComplete().verify(VERIFY);
    assertThat(locks.release(reader).block(VERIFY)).isTrue();

    StepVerifier.create(
            locks.withLockMono(
                prices.writeLock(),
                LONG,
                writer ->
                    Mono.fromCallable(
                        () -> other.readWriteLock(name).readLock().tryAcquire().isEmpty())))
        .expectNext(true)
        .expectComplete()
        .verify(VERIFY);
    Optional<Lease> write = other.readWriteLock(name).writeLock().tryAcquire();
    assertThat(write).as("the write lock, once every lease is released").isPresent();
    write.get().release();
  }

  @Test
  void setsOfLocksWorkThroughTheLockOverloads() {
    String a = name + "-a";
    String b = name + "-b";
    StepVerifier.create(
            locks
                .withLockMono(
                    client.locks(List.of(b, a)),
                    LONG,
                    both ->
                        Mono.fromCallable(
                            () -> both.lockNames() + " " + isHeld(a) + " " + isHeld(b)))
                .subscribeOn(Schedulers.parallel()))
        .expectNext(List.of(a, b) + " true true")
        .expectComplete()
        .verify(VERIFY);
    assertFreeNow(a);
    assertFreeNow(b);

    try (Lease held = other.lock(b).acquire(LONG)) {
      StepVerifier.create(locks.tryAcquire(client.locks(List.of(a, b))))
          .expectComplete()
          .verify(VERIFY);
      assertFreeNow(a); // all or none: the busy b kept nothing of a
      assertThat(held.isValid()).isTrue();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void cancellingASetWhileItWaitsGivesBackTheNamesItTook() throws Exception {
    String a = name + "-a";
    String b = name + "-b";
    AtomicReference<Lease> delivered = new AtomicReference<>();
    Lease heldB = other.lock(b).acquire(LONG);
    Disposable waiting =
        locks
            .acquire(client.locks(List.of(a, b)), Duration.ofMinutes(10))
            .subscribeOn(Schedulers.parallel())
            .subscribe(delivered::set);
    await("the set to take a and wait for b", () -> other.lock(a).state().isHeld());
    Schedulers.parallel().schedule(waiting::dispose); // cancelled from a non-blocking thread
    assertFree(a);
    heldB.release();
    assertFree(b);
    assertThat(delivered.get()).as("a lease delivered after the cancel").isNull();
  }

  /** The calling thread's name and whether Reactor counts it as non-blocking. */
  static String where() {
    return Thread.currentThread().getName() + "|" + Schedulers.isInNonBlockingThread();
  }

  /** Whether another client finds {@code lock} held now (one attempt, released at once). */
  boolean isHeld(String lock) {
    Optional<Lease> lease = other.lock(lock).tryAcquire();
    lease.ifPresent(Lease::release);
    return lease.isEmpty();
  }

  void assertHeld(String lock) {
    assertThat(isHeld(lock)).as("lock %s held", lock).isTrue();
  }

  /** Free at once: for releases that complete before the publisher does. */
  void assertFreeNow(String lock) {
    assertThat(isHeld(lock)).as("lock %s free at once", lock).isFalse();
  }

  /** Free within {@link #LONG}: for releases made in the background after a cancel. */
  void assertFree(String lock) {
    try {
      Optional<Lease> lease = other.lock(lock).tryAcquire(LONG);
      assertThat(lease).as("lock %s free within %s", lock, LONG).isPresent();
      lease.get().release();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  static void await(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + LONG.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail("waited " + LONG + " for " + what);
      }
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    }
  }

  static void awaitLatch(CountDownLatch latch) {
    try {
      assertThat(latch.await(LONG.toSeconds(), TimeUnit.SECONDS)).as("the body started").isTrue();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }
}
