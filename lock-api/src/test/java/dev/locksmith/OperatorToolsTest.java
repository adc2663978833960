package dev.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.Guarantees.Feature;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The operator's calls of the core on {@code local:}: {@link LockClient#list} and {@link
 * LockClient#breakLock}, their bad input and what a backend without the feature answers. Their
 * behaviour on every backend is the kit's rule groups 22 and 23.
 */
class OperatorToolsTest {

  private static LockClient connect() {
    return Locks.connect("local:operator-" + UUID.randomUUID());
  }

  @Test
  void listingPagesThroughTheHeldLocksUnderThePrefixInNameOrder() throws Exception {
    try (LockClient c = connect()) {
      List<Lease> held = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        held.add(c.lock("jobs/" + i).acquire(Duration.ofSeconds(5)));
      }
      held.add(c.lock("jobsX").acquire(Duration.ofSeconds(5)));
      c.lock("jobs/free").acquire(Duration.ofSeconds(5)).release();
      List<String> names = new ArrayList<>();
      String cursor = null;
      int pages = 0;
      do {
        LockPage page = c.list("jobs/", cursor, 2);
        assertThat(page.locks()).hasSizeLessThanOrEqualTo(2);
        page.locks().forEach(l -> names.add(l.name()));
        for (HeldLock l : page.locks()) {
          LockState now = c.lock(l.name()).state();
          assertThat(l.state().isHeld()).isTrue();
          assertThat(l.state().fencingToken()).isEqualTo(now.fencingToken());
          assertThat(l.state().holder()).isEqualTo(now.holder());
        }
        cursor = page.next().orElse(null);
        pages++;
      } while (cursor != null);
      assertThat(names).containsExactly("jobs/0", "jobs/1", "jobs/2", "jobs/3", "jobs/4");
      assertThat(pages).isEqualTo(3);
      assertThat(c.list("", null, 1000).locks()).hasSize(6);
      assertThat(c.list("nothing/", null, 10).locks()).isEmpty();
      assertThat(c.list("nothing/", null, 10).next()).isEmpty();
      held.forEach(Lease::release);
      assertThat(c.list("", null, 1000).locks()).isEmpty();
    }
  }

  @Test
  void badListingInputIsRefusedNamingTheParameter() {
    try (LockClient c = connect()) {
      assertThatThrownBy(() -> c.list(null, null, 10))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("`prefix` was null");
      assertThatThrownBy(() -> c.list("a\u0001", null, 10))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`prefix` was 'a\\u0001'")
          .hasMessageContaining("control character");
      assertThatThrownBy(() -> c.list("x".repeat(256), null, 10))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`prefix` was");
      for (int bad : new int[] {0, -1, 1001, Integer.MAX_VALUE}) {
        assertThatThrownBy(() -> c.list("", null, bad))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("`limit` was " + bad + " but it must be from 1 to 1000");
      }
      assertThatThrownBy(() -> c.list("", "", 10))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`cursor` was ''");
      assertThatThrownBy(() -> c.list("", "c".repeat(5000), 10))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`cursor` was 'cccc");
      for (String forged : new String[] {"no-colon", "X:1", ":", "LL:a"}) {
        assertThatThrownBy(() -> c.list("", forged, 10))
            .as("cursor %s", forged)
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("`cursor` was '" + forged + "' but it must be null");
      }
    }
  }

  @Test
  void stateAndListingCountTheWaiters() throws Exception {
    try (LockClient a = connect();
        LockClient b = Locks.connect(a.config().uri().toString())) {
      Lease held = a.lock("q/lock").acquire(Duration.ofSeconds(5));
      Lease permit = a.semaphore("q/pool", 1).acquire(Duration.ofSeconds(5));
      assertThat(a.lock("q/lock").state().waiting()).hasValue(0);
      var waiter = b.lock("q/lock").acquireAsync(Duration.ofSeconds(30));
      var permitWaiter = b.semaphore("q/pool", 1).acquireAsync(Duration.ofSeconds(30));
      // each waiter queues on its own thread: wait until both are counted
      long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
      LockPage page = a.list("q/", null, 100);
      while (!page.locks().stream().allMatch(l -> l.waiting().orElse(-1) == 1)
          && System.nanoTime() < deadline) {
        Thread.sleep(5);
        page = a.list("q/", null, 100);
      }
      assertThat(a.lock("q/lock").state().waiting()).hasValue(1);
      assertThat(page.locks())
          .extracting(l -> l.name() + " " + l.waiting().orElse(-1))
          .containsExactly("q/lock 1", "q/pool 1");
      waiter.cancel(true);
      permitWaiter.cancel(true);
      deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
      while (a.lock("q/lock").state().waiting().orElse(-1) != 0 && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertThat(a.lock("q/lock").state().waiting()).as("after the waiter gave up").hasValue(0);
      assertThat(held.release()).isTrue();
      assertThat(permit.release()).isTrue();
    }
  }

  @Test
  void listingShowsSemaphoresAndReadWriteLocksWithEveryHolderAfterTheLocks() throws Exception {
    try (LockClient a = connect();
        LockClient b = Locks.connect(a.config().uri().toString())) {
      Lease lock = a.lock("res/lock").acquire(Duration.ofSeconds(5));
      Lease p1 = a.semaphore("res/pool", 3).acquire(Duration.ofSeconds(5));
      Lease p2 = b.semaphore("res/pool", 3).acquire(Duration.ofSeconds(5));
      Lease r1 = a.readWriteLock("res/rw").readLock().acquire(Duration.ofSeconds(5));
      Lease r2 = b.readWriteLock("res/rw").readLock().acquire(Duration.ofSeconds(5));
      Lease w = b.readWriteLock("res/w").writeLock().acquire(Duration.ofSeconds(5));
      LockPage all = a.list("res/", null, 1000);
      assertThat(all.next()).isEmpty();
      assertThat(all.locks())
          .extracting(l -> l.kind() + " " + l.name() + " " + l.holders().size())
          .containsExactly(
              "LOCK res/lock 1", "SEMAPHORE res/pool 2", "READ res/rw 2", "WRITE res/w 1");
      HeldLock pool = all.locks().get(1);
      assertThat(pool.holders())
          .extracting(h -> h.fencingToken().getAsLong())
          .containsExactlyInAnyOrder(p1.fencingToken(), p2.fencingToken());
      assertThat(pool.holders()).allMatch(h -> h.remaining().isPresent() && h.holder().isPresent());
      assertThat(all.locks().get(3).state().fencingToken()).hasValue(w.fencingToken());
      // one entry a page: four pages, the last without a next
      List<String> paged = new ArrayList<>();
      String cursor = null;
      do {
        LockPage page = b.list("res/", cursor, 1);
        assertThat(page.locks()).hasSizeLessThanOrEqualTo(1);
        page.locks().forEach(l -> paged.add(l.name()));
        cursor = page.next().orElse(null);
      } while (cursor != null);
      assertThat(paged).containsExactly("res/lock", "res/pool", "res/rw", "res/w");
      for (Lease l : List.of(lock, p1, p2, r1, r2, w)) {
        assertThat(l.release()).isTrue();
      }
      assertThat(a.list("res/", null, 1000).locks()).isEmpty();
    }
  }

  @Test
  void breakingFreesTheLockTellsTheHolderAndRaisesTheToken() throws Exception {
    try (LockClient holder = connect();
        LockClient operator = Locks.connect(holder.config().uri().toString())) {
      Lease lease =
          holder
              .lock("stuck", LockOptions.builder().lease(Duration.ofMillis(600)).build())
              .acquire(Duration.ofSeconds(5));
      assertThat(operator.breakLock("stuck", "the job hangs")).isTrue();
      LeaseLostException lost =
          lease.lost().toCompletableFuture().get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(lost.getMessage()).contains("stuck");
      try (Lease next = operator.lock("stuck").tryAcquire().orElseThrow()) {
        assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
        assertThat(lease.release()).isFalse();
        assertThat(next.isValid()).isTrue();
      }
      assertThat(operator.breakLock("stuck", "again")).isFalse();
      assertThat(operator.breakLock("never-taken", "why not")).isFalse();
    }
  }

  @Test
  void badBreakInputIsRefusedNamingTheParameterAndChangesNothing() throws Exception {
    try (LockClient c = connect();
        Lease lease = c.lock("held").acquire(Duration.ofSeconds(5))) {
      assertThatThrownBy(() -> c.breakLock("held", null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("`reason` was null");
      for (String bad : new String[] {"", "   ", "r".repeat(501)}) {
        assertThatThrownBy(() -> c.breakLock("held", bad))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("`reason` was '")
            .hasMessageContaining("1 to 500 characters");
      }
      assertThatThrownBy(() -> c.breakLock("", "x"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`name` was ''");
      assertThatThrownBy(() -> c.breakLock(null, "x")).isInstanceOf(NullPointerException.class);
      assertThat(lease.isValid()).isTrue();
      assertThat(c.lock("held").state().isHeld()).isTrue();
      assertThat(c.breakLock("held", "r".repeat(500))).isTrue();
    }
  }

  @Test
  void withoutTheFeaturesBothCallsSaySoAndChangeNothing() throws Exception {
    LeaseControlTest.Wrapped provider =
        new LeaseControlTest.Wrapped(false, Feature.BREAK_GLASS, Feature.LISTING);
    try (LockClient c =
            Locks.connect(
                LockConfig.fromUri("local:operator-plain-" + UUID.randomUUID()), provider);
        Lease lease = c.lock("held").acquire(Duration.ofSeconds(5))) {
      assertThatThrownBy(() -> c.breakLock("held", "x"))
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessageContaining("breakLock()")
          .hasMessageContaining("BREAK_GLASS");
      assertThatThrownBy(() -> c.list("", null, 10))
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessageContaining("list()")
          .hasMessageContaining("LISTING");
      assertThat(lease.isValid()).isTrue();
      assertThat(lease.release()).isTrue();
    }
  }
}
