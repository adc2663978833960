package dev.locksmith;

import static dev.locksmith.Kept.keep;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.local.LocalLockProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link LockClient#locks}: several names, all or none, on the local: backend. */
class MultiLockTest {
  private static boolean held(String space, String name) {
    return LocalLockProvider.isHeld(space, name);
  }

  @Test
  void aSetHoldsEveryNameAndReleasesThemAllInOneCall() throws Exception {
    try (LockClient c = Locks.connect("local:multi-all");
        LockClient other = Locks.connect("local:multi-all")) {
      Lease lease = c.locks(List.of("b", "a", "c", "a")).acquire(Duration.ofSeconds(1));
      assertThat(lease.lockNames())
          .as("one global order, duplicates once")
          .containsExactly("a", "b", "c");
      for (String n : List.of("a", "b", "c")) {
        assertThat(held("multi-all", n)).as("'%s' held", n).isTrue();
        assertThat(other.lock(n).tryAcquire())
            .as("a single lock of '%s' while the set holds it", n)
            .isEmpty();
      }
      assertThat(lease.fencingToken()).isEqualTo(lease.fencingToken("a"));
      assertThatThrownBy(() -> lease.fencingToken("d"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`name` was 'd'")
          .hasMessageContaining("[a, b, c]");
      assertThat(lease.release()).isTrue();
      for (String n : List.of("a", "b", "c")) {
        assertThat(held("multi-all", n)).as("'%s' after release", n).isFalse();
      }
      assertThat(lease.release()).as("a second release").isFalse();
    }
  }

  @Test
  void eachNamesTokenIsAboveEverySingleHoldersBefore() throws Exception {
    try (LockClient c = Locks.connect("local:multi-tokens")) {
      long a;
      long b;
      try (Lease single = c.lock("a").acquire(Duration.ofSeconds(1))) {
        a = single.fencingToken();
      }
      try (Lease single = c.lock("b").acquire(Duration.ofSeconds(1))) {
        b = single.fencingToken();
      }
      long setA;
      try (Lease set = c.locks(List.of("a", "b")).acquire(Duration.ofSeconds(1))) {
        setA = set.fencingToken("a");
        assertThat(setA).isGreaterThan(a);
        assertThat(set.fencingToken("b")).isGreaterThan(b);
      }
      try (Lease single = c.lock("a").acquire(Duration.ofSeconds(1))) {
        assertThat(single.fencingToken()).as("a single holder after the set").isGreaterThan(setA);
      }
    }
  }

  @Test
  void aBusyNameMakesTryAcquireGetNoneAndKeepNone() throws Exception {
    try (LockClient c = Locks.connect("local:multi-busy");
        LockClient other = Locks.connect("local:multi-busy")) {
      Lease c1 = other.lock("c").acquire(Duration.ofSeconds(1));
      assertThat(c.locks(List.of("a", "b", "c")).tryAcquire()).isEmpty();
      assertThat(held("multi-busy", "a")).as("'a' after the set found 'c' busy").isFalse();
      assertThat(held("multi-busy", "b")).as("'b' after the set found 'c' busy").isFalse();
      assertThatThrownBy(() -> c.locks(List.of("a", "b", "c")).acquire(Duration.ofMillis(50)))
          .isInstanceOf(LockTimeoutException.class)
          .hasMessageContaining("[a, b, c]");
      assertThat(held("multi-busy", "a")).as("'a' after the timeout").isFalse();
      assertThat(held("multi-busy", "b")).as("'b' after the timeout").isFalse();
      assertThat(c.locks(List.of("a", "b", "c")).tryAcquire(Duration.ofMillis(50))).isEmpty();
      assertThat(held("multi-busy", "a")).isFalse();
      c1.release();
      assertThat(c.locks(List.of("a", "b", "c")).tryAcquire()).isPresent();
    }
  }

  @Test
  void anInterruptedWaiterKeepsNoneOfTheSet() throws Exception {
    try (LockClient c = Locks.connect("local:multi-interrupt");
        LockClient other = Locks.connect("local:multi-interrupt")) {
      keep(other.lock("z").acquire(Duration.ofSeconds(1)));
      AtomicReference<Throwable> outcome = new AtomicReference<>();
      Thread waiter =
          new Thread(
              () -> {
                try {
                  c.locks(List.of("x", "y", "z")).acquire();
                } catch (Throwable e) {
                  outcome.set(e);
                }
              });
      waiter.start();
      awaitHeld("multi-interrupt", "y");
      waiter.interrupt();
      waiter.join(5_000);
      assertThat(outcome.get()).isInstanceOf(InterruptedException.class);
      assertThat(held("multi-interrupt", "x"))
          .as("'x' when the interrupted acquire returned")
          .isFalse();
      assertThat(held("multi-interrupt", "y"))
          .as("'y' when the interrupted acquire returned")
          .isFalse();
    }
  }

  @Test
  void aCancelledAsyncSetKeepsNoneOfItWhenCancelReturns() throws Exception {
    try (LockClient c = Locks.connect("local:multi-cancel");
        LockClient other = Locks.connect("local:multi-cancel")) {
      keep(other.lock("z").acquire(Duration.ofSeconds(1)));
      CompletableFuture<Lease> set =
          c.locks(List.of("x", "y", "z")).acquireAsync(Duration.ofHours(1));
      awaitHeld("multi-cancel", "y");
      assertThat(set.cancel(true)).isTrue();
      assertThat(held("multi-cancel", "x")).as("'x' when cancel returned").isFalse();
      assertThat(held("multi-cancel", "y")).as("'y' when cancel returned").isFalse();
      assertThatThrownBy(set::join).isInstanceOf(CancellationException.class);
    }
  }

  @Test
  void anAsyncSetTimesOutNamingTheSetAndKeepsNone() throws Exception {
    // releases that take 50 ms, as on a slow server: a set that signalled its failure before
    // giving 'a' back would let get() return while 'a' is still held
    ClientCoreTest.Counting slowReleases = new ClientCoreTest.Counting();
    slowReleases.releaseDelayMillis = 50;
    try (LockClient c =
            Locks.connect(
                LockConfig.builder().uri("local:multi-async-timeout").build(), slowReleases);
        LockClient other = Locks.connect("local:multi-async-timeout")) {
      keep(other.lock("b").acquire(Duration.ofSeconds(1)));
      for (int round = 0; round < 5; round++) {
        CompletableFuture<Lease> set =
            c.locks(List.of("a", "b")).acquireAsync(Duration.ofMillis(30));
        assertThatThrownBy(() -> set.get(5, TimeUnit.SECONDS))
            .isInstanceOf(ExecutionException.class)
            .cause()
            .isInstanceOf(LockTimeoutException.class)
            .hasMessageContaining("[a, b]");
        assertThat(held("multi-async-timeout", "a"))
            .as("'a' when the timed-out set's get() returned, round %d", round)
            .isFalse();
      }
      CompletableFuture<Lease> free =
          c.locks(List.of("a", "c")).acquireAsync(Duration.ofSeconds(5));
      Lease lease = free.get(5, TimeUnit.SECONDS);
      assertThat(lease.lockNames()).containsExactly("a", "c");
      assertThat(lease.release()).isTrue();
    }
  }

  /**
   * Two clients take {a, b} and {b, a} in a loop while two others take single locks of a and b:
   * nobody waits forever, and no name is ever held twice at once.
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void reversedOrdersAndSingleLocksNeverDeadlockOrOverlap() throws Exception {
    AtomicInteger inA = new AtomicInteger();
    AtomicInteger inB = new AtomicInteger();
    AtomicInteger overlaps = new AtomicInteger();
    List<Thread> threads = new ArrayList<>();
    List<LockClient> clients = new ArrayList<>();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<List<String>> work =
        List.of(List.of("a", "b"), List.of("b", "a"), List.of("a"), List.of("b"));
    for (List<String> names : work) {
      LockClient c = Locks.connect("local:multi-deadlock");
      clients.add(c);
      DistributedLock lock = names.size() == 1 ? c.lock(names.get(0)) : c.locks(names);
      Thread t =
          new Thread(
              () -> {
                try {
                  for (int i = 0; i < 200; i++) {
                    try (Lease lease = lock.acquire(Duration.ofSeconds(20))) {
                      boolean a = lease.lockNames().contains("a");
                      boolean b = lease.lockNames().contains("b");
                      if ((a && inA.incrementAndGet() > 1) | (b && inB.incrementAndGet() > 1)) {
                        overlaps.incrementAndGet();
                      }
                      Thread.onSpinWait();
                      if (a) {
                        inA.decrementAndGet();
                      }
                      if (b) {
                        inB.decrementAndGet();
                      }
                    }
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              });
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join(50_000);
      assertThat(t.isAlive()).as("a contender still waiting: a deadlock").isFalse();
    }
    clients.forEach(LockClient::close);
    assertThat(failure.get()).as("a contender failed").isNull();
    assertThat(overlaps.get()).as("times a name was held twice at once").isZero();
  }

  @Test
  void losingAnyNameIsLosingTheLeaseAndNamesIt() throws Exception {
    try (LockClient c =
        Locks.connect(
            LockConfig.builder().uri("local:multi-lost").lease(Duration.ofMillis(300)).build())) {
      Lease lease = c.locks(List.of("p", "q")).acquire(Duration.ofSeconds(1));
      LocalLockProvider.revoke("multi-lost", "q");
      LeaseLostException lost = lease.lost().toCompletableFuture().get(5, TimeUnit.SECONDS);
      assertThat(lost.getMessage()).contains("'q'");
      assertThat(lease.isValid()).isFalse();
      assertThat(lease.release()).as("release after losing one name").isFalse();
      assertThat(held("multi-lost", "p")).as("'p' after the release").isFalse();
    }
  }

  @Test
  void theLockViewTakesAndGivesBackTheWholeSet() throws Exception {
    try (LockClient c = Locks.connect("local:multi-view");
        LockClient other = Locks.connect("local:multi-view")) {
      var view = c.locks(List.of("m", "n")).asLock();
      view.lock();
      assertThat(held("multi-view", "m")).isTrue();
      assertThat(held("multi-view", "n")).isTrue();
      view.unlock();
      assertThat(held("multi-view", "m")).isFalse();
      keep(other.lock("n").acquire(Duration.ofSeconds(1)));
      assertThat(view.tryLock(50, TimeUnit.MILLISECONDS)).isFalse();
      assertThat(held("multi-view", "m")).as("'m' after tryLock found 'n' busy").isFalse();
      assertThatThrownBy(view::unlock).isInstanceOf(IllegalMonitorStateException.class);
    }
  }

  @Test
  void aSetOfOneIsThatLock() throws Exception {
    try (LockClient c = Locks.connect("local:multi-one");
        LockClient other = Locks.connect("local:multi-one")) {
      Lease lease = c.locks(List.of("solo")).acquire(Duration.ofSeconds(1));
      assertThat(lease.lockNames()).containsExactly("solo");
      assertThat(other.lock("solo").tryAcquire()).isEmpty();
      assertThat(lease.release()).isTrue();
      assertThat(other.lock("solo").tryAcquire()).isPresent();
    }
  }

  @Test
  void tenThousandNamesAreOneSetAndOneMoreIsRefused() throws Exception {
    try (LockClient c = Locks.connect("local:multi-many")) {
      List<String> names =
          IntStream.range(0, LockClient.MAX_NAMES_PER_SET)
              .mapToObj(i -> "n" + i)
              .collect(Collectors.toList());
      Lease lease = c.locks(names).acquire(Duration.ofSeconds(30));
      assertThat(lease.lockNames()).hasSize(LockClient.MAX_NAMES_PER_SET);
      assertThat(held("multi-many", "n9999")).isTrue();
      assertThat(lease.release()).isTrue();
      assertThat(held("multi-many", "n0")).isFalse();
      CompletableFuture<Lease> async = c.locks(names).acquireAsync(Duration.ofSeconds(30));
      assertThat(async.get(30, TimeUnit.SECONDS).release()).isTrue();
      List<String> tooMany = new ArrayList<>(names);
      tooMany.add("one-more");
      assertThatThrownBy(() -> c.locks(tooMany))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("`names` held 10001 distinct lock names but a set holds at most 10000");
    }
  }

  @Test
  void badInputIsRefusedNamingTheParameter() throws Exception {
    try (LockClient c = Locks.connect("local:multi-bad")) {
      assertThatThrownBy(() -> c.locks(null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageStartingWith("`names` was null but it must be");
      assertThatThrownBy(() -> c.locks(List.of()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("`names` was empty but it must hold 1 to 10000 lock names");
      assertThatThrownBy(() -> c.locks(Arrays.asList("a", null)))
          .isInstanceOf(NullPointerException.class)
          .hasMessageStartingWith("`names` element 1 (`name`) was null");
      assertThatThrownBy(() -> c.locks(List.of("a", "")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("`names` element 1 (`name`) was ''");
      assertThatThrownBy(() -> c.locks(List.of("a\nb")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("`names` element 0 (`name`)");
      assertThatThrownBy(() -> c.locks(List.of("a"), null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageStartingWith("`options` was null");
      assertThatThrownBy(() -> c.locks(Collections.singleton("a")).acquire(Duration.ofSeconds(-1)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`timeout`");
      // a wait of 999999999999d: the deadline saturates, it does not overflow into no wait
      Duration forever = Duration.ofDays(999_999_999_999L);
      try (LockClient blocker = Locks.connect("local:multi-bad")) {
        Lease h2 = blocker.lock("h2").acquire(Duration.ofSeconds(1));
        CompletableFuture<Lease> async = c.locks(List.of("h1", "h2")).acquireAsync(forever);
        releaseLater(h2);
        Lease got = async.get(10, TimeUnit.SECONDS);
        assertThat(got.lockNames()).as("granted once 'h2' was released").hasSize(2);
        got.release();
        Lease h2again = blocker.lock("h2").acquire(Duration.ofSeconds(1));
        releaseLater(h2again);
        try (Lease sync = c.locks(List.of("h1", "h2")).acquire(forever)) {
          assertThat(sync.lockNames()).as("sync, granted once 'h2' was released").hasSize(2);
        }
      }
      Optional<Lease> lease = c.locks(List.of("a", "b")).tryAcquire();
      assertThat(lease).isPresent();
      assertThatThrownBy(() -> lease.get().extend(null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageStartingWith("`lease` was null");
      assertThatThrownBy(() -> lease.get().releaseAfter(Duration.ofDays(8)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("`keep` was '192h'");
      assertThat(held("multi-bad", "a")).as("refused calls change nothing").isTrue();
      lease.get().release();
    }
    try (LockClient closed = Locks.connect("local:multi-bad")) {
      closed.close();
      assertThatThrownBy(() -> closed.locks(List.of("a")))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("closed");
    }
  }

  /** Releases {@code lease} from another thread 300 ms from now. */
  private static void releaseLater(Lease lease) {
    new Thread(
            () -> {
              try {
                Thread.sleep(300);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              lease.release();
            })
        .start();
  }

  private static void awaitHeld(String space, String name) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!held(space, name)) {
      assertThat(System.nanoTime() - deadline).as("'%s' held within 5 s", name).isNegative();
      Thread.sleep(2);
    }
  }
}
