package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.spi.Claim;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 18: semaphores (rules 18.6 to 18.11; the others in {@link SemaphoreRules}), as tests: the
 * rules of this group in {@code RULES.md}. The kit's {@code @Nested} class {@link
 * LockCompatibilityKit.Semaphores} runs them against the backend under test. Every rule here needs
 * {@link Feature#SEMAPHORES}: without it each is skipped with that reason.
 */
@RequiresFeature(Feature.SEMAPHORES)
interface SemaphoreEdgeRules extends KitRules {
  @Test
  @DisplayName(
      "18.6 MUST: asking with another count while permits are held throws IllegalStateException"
          + " naming both counts and takes nothing; after all releases a new count is accepted")
  default void rule18_6_mismatchedCount() throws Exception {
    String name = name("sem-mismatch");
    Lease held = client().semaphore(name, 3).acquire(Duration.ofSeconds(10));
    LockClient other = client();
    Throwable thrown = catchThrowable(() -> other.semaphore(name, 5).tryAcquire());
    assertThat(thrown)
        .withFailMessage(
            "semaphores broken: tryAcquire() of a semaphore held with 3 permits, asked with 5,"
                + " answered %s instead of throwing IllegalStateException (from"
                + " Claim.permitsInUse): clients that disagree on the count would each admit"
                + " their own number",
            thrown == null ? "normally" : thrown)
        .isInstanceOf(IllegalStateException.class);
    assertThat(thrown.getMessage())
        .withFailMessage(
            "semaphores broken: the mismatch message must name both counts, as "
                + "Claim.permitsInUse words it; it was: %s",
            thrown.getMessage())
        .contains("`permits` was 5")
        .contains("in use with 3");
    long start = System.nanoTime();
    Throwable waited =
        catchThrowable(() -> other.semaphore(name, 5).acquire(Duration.ofSeconds(5)));
    assertThat(waited)
        .withFailMessage(
            "semaphores broken: acquire(5 s) with another count than the held one answered %s "
                + "instead of IllegalStateException",
            waited == null ? "normally" : waited)
        .isInstanceOf(IllegalStateException.class);
    assertThat(ms(System.nanoTime() - start))
        .withFailMessage(
            "semaphores broken: acquire(5 s) with another count waited "
                + "%d ms before it failed: the mismatch must fail at once",
            ms(System.nanoTime() - start))
        .isLessThanOrEqualTo(limits().tolerance().toMillis());
    List<Lease> more = new ArrayList<>(List.of(held));
    for (int i = 0; i < 2; i++) {
      Optional<Lease> got = other.semaphore(name, 3).tryAcquire();
      assertThat(got)
          .withFailMessage(
              "semaphores broken: after refused asks with another count, permit %d of 3 could not"
                  + " be taken: a refused ask must take nothing",
              i + 2)
          .isPresent();
      more.add(got.get());
    }
    Optional<Lease> fourth = other.semaphore(name, 3).tryAcquire();
    fourth.ifPresent(Lease::release);
    assertThat(fourth)
        .withFailMessage(
            "semaphores broken: a 4th permit of a semaphore of 3 was granted after asks with "
                + "another count (did an ask with 5 change the count?)")
        .isEmpty();
    releaseAll(more);
    Optional<Lease> recounted;
    try {
      recounted = other.semaphore(name, 1).tryAcquire();
    } catch (IllegalStateException e) {
      throw new AssertionError(
          "semaphores broken: once every permit was released, a new count (1) was refused: the"
              + " count belongs to the live leases, and goes with the last of them; it said: "
              + e.getMessage(),
          e);
    }
    assertThat(recounted)
        .withFailMessage(
            "semaphores broken: once every permit was released, a new count (1) was refused"
                + " (found it full): the count belongs to the live leases, and goes with the last"
                + " of them")
        .isPresent();
    Throwable now = catchThrowable(() -> client().semaphore(name, 3).tryAcquire());
    assertThat(now)
        .withFailMessage(
            "semaphores broken: the semaphore re-counted to 1 and held was asked with 3 and"
                + " answered %s instead of IllegalStateException",
            now == null ? "normally" : now)
        .isInstanceOf(IllegalStateException.class);
    assertThat(now.getMessage()).as("the mismatch message").contains("in use with 1");
    assertThat(recounted.get().release()).isTrue();
  }

  @Test
  @DisplayName(
      "18.7 MUST: a lock, a semaphore and a read-write lock of one name are separate resources")
  default void rule18_7_resourcesOfOneNameAreSeparate() throws Exception {
    boolean rw = guarantees().has(Feature.READ_WRITE_LOCKS);
    String name = name("one-name");
    // leases that outlast the rule without renewal: it checks separation, not renewal, and a
    // short renewed lease can run out on a loaded machine (its release then answers false)
    LockClient a = client(longLease());
    LockClient b = client(longLease());
    Lease lock = a.lock(name).acquire(Duration.ofSeconds(10));
    Optional<Lease> sem = b.semaphore(name, 1).tryAcquire();
    assertThat(sem)
        .withFailMessage(
            "semaphores broken: a semaphore could not be taken while only the lock of the same"
                + " name was held: a lock, a semaphore and a read-write lock of one name must be"
                + " separate resources (separate keys)")
        .isPresent();
    Optional<Lease> write = rw ? a.readWriteLock(name).writeLock().tryAcquire() : Optional.empty();
    if (rw) {
      assertThat(write)
          .withFailMessage(
              "semaphores broken: the write lock of a read-write lock could not be taken while"
                  + " only the lock and the semaphore of the same name were held: they must be"
                  + " separate resources")
          .isPresent();
    }
    LockClient c = client(longLease());
    assertThat(c.lock(name).tryAcquire()).as("the lock while held").isEmpty();
    // looked at before the release too: a grant then is an over-grant, not something the lock's
    // release freed
    Optional<Lease> semBefore = c.semaphore(name, 1).tryAcquire();
    semBefore.ifPresent(Lease::release);
    assertThat(semBefore)
        .withFailMessage(
            "semaphores broken: a second permit of a semaphore of 1 was granted to another client"
                + " while its one permit was held, before anything was released (an over-grant)")
        .isEmpty();
    if (rw) {
      Optional<Lease> readBefore = c.readWriteLock(name).readLock().tryAcquire();
      readBefore.ifPresent(Lease::release);
      assertThat(readBefore)
          .withFailMessage(
              "read-write locks broken: a reader of another client was granted while the write "
                  + "lock was held, before anything was released (an over-grant)")
          .isEmpty();
    }
    assertThat(lock.release()).isTrue();
    Optional<Lease> semAfter = c.semaphore(name, 1).tryAcquire();
    semAfter.ifPresent(Lease::release);
    assertThat(semAfter)
        .withFailMessage(
            "semaphores broken: releasing the lock freed the semaphore of the same name (refused "
                + "just before the release, granted just after)")
        .isEmpty();
    if (rw) {
      Optional<Lease> readAfter = c.readWriteLock(name).readLock().tryAcquire();
      readAfter.ifPresent(Lease::release);
      assertThat(readAfter)
          .withFailMessage(
              "semaphores broken: releasing the lock freed the read-write lock of the same name "
                  + "(refused just before the release, granted just after)")
          .isEmpty();
    }
    assertThat(sem.get().release()).isTrue();
    Optional<Lease> lockAgain = c.lock(name).tryAcquire();
    assertThat(lockAgain).as("the lock after its release").isPresent();
    lockAgain.get().release();
    write.ifPresent(Lease::release);
  }

  @Test
  @DisplayName(
      "18.8 MUST: permits 0, -1 and 10,001 are rejected with IllegalArgumentException naming"
          + " `permits`; 10,000 is accepted")
  default void rule18_8_badPermits() throws Exception {
    String name = name("sem-bad");
    LockClient c = client();
    for (int bad : new int[] {0, -1, 10_001}) {
      Throwable thrown = catchThrowable(() -> c.semaphore(name, bad));
      assertThat(thrown)
          .withFailMessage(
              "bad input broken: semaphore(name, %d) answered %s instead of "
                  + "IllegalArgumentException",
              bad, thrown == null ? "normally" : thrown)
          .isInstanceOf(IllegalArgumentException.class);
      assertThat(thrown.getMessage())
          .as("the message for permits %d", bad)
          .contains("`permits`")
          .contains(Integer.toString(bad));
    }
    Optional<Lease> most = c.semaphore(name, 10_000).tryAcquire();
    assertThat(most).as("a permit of a semaphore of 10,000").isPresent();
    assertThat(most.get().release()).isTrue();
  }

  @Test
  @DisplayName(
      "18.11 MUST: a permit taken after the semaphore went idle (every permit released, or"
          + " expired) gets a token above every earlier permit's")
  default void rule18_11_tokensIncreaseAcrossIdleSemaphores() throws Exception {
    requireFeature(Feature.FENCING, "18.11");
    String name = name("sem-idle-tokens");
    LockClient released = client();
    LockClient lapsing = client(expiring());
    LockClient later = client();
    long last = 0;
    for (String how : List.of("released", "expired")) {
      LockClient holder = how.equals("released") ? released : lapsing;
      List<Lease> both =
          List.of(
              holder.semaphore(name, 2).acquire(Duration.ofSeconds(10)),
              holder.semaphore(name, 2).acquire(Duration.ofSeconds(10)));
      long grantedAt = System.nanoTime();
      for (Lease l : both) {
        last = Math.max(last, l.fencingToken());
      }
      if (how.equals("released")) {
        releaseAll(both);
      } else {
        // past the bound by which every backend has freed an unrenewed permit (rule 18.3)
        Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
        Thread.sleep(Math.max(0, bound.toMillis() - ms(System.nanoTime() - grantedAt)));
      }
      Lease next = later.semaphore(name, 2).acquire(Duration.ofSeconds(10));
      long token = next.fencingToken();
      assertThat(next.release())
          .as("release() of the permit taken after the semaphore went idle")
          .isTrue();
      if (token <= last) {
        fail(
            "fencing broken: a permit taken after a semaphore of 2 went idle (all its permits "
                + how
                + ") got token "
                + token
                + " after token "
                + last
                + ": the semaphore's counter must outlive its last permit (one counter per"
                + " semaphore, never reset), so that every permit's token is above every earlier"
                + " permit's");
      }
      last = token;
    }
  }

  @Test
  @DisplayName(
      "18.9 MUST: a waiter on a full semaphore gets a released permit within the wake-up bound"
          + " (median of 7)")
  default void rule18_9_waiterIsWokenByARelease() throws Exception {
    requireFeature(Feature.NOTIFIED_WAKEUP, Guarantees.Primitive.SEMAPHORE, "18.9");
    String name = name("sem-wake");
    LockClient holder = client();
    LockClient waiterClient = client();
    Lease always = holder.semaphore(name, 2).acquire(Duration.ofSeconds(10));
    Random random = new Random();
    List<Long> handOffs = new ArrayList<>();
    for (int i = 0; i < 7; i++) {
      Lease lease = holder.semaphore(name, 2).acquire(Duration.ofSeconds(10));
      AtomicLong grantedAt = new AtomicLong();
      DistributedLock sem = waiterClient.semaphore(name, 2);
      int polled = probe().polls(name, Claim.Kind.PERMIT);
      Thread waiter =
          background(
              "sem-wake-" + i,
              () -> {
                try (Lease l = sem.acquire(Duration.ofSeconds(30))) {
                  grantedAt.set(System.nanoTime());
                }
              });
      awaitQueued(waiter, name, Claim.Kind.PERMIT, polled, "the semaphore waiter blocks");
      Thread.sleep(random.nextInt(50));
      long releasedAt = System.nanoTime();
      assertThat(lease.release()).isTrue();
      waiter.join(TimeUnit.SECONDS.toMillis(30));
      assertThat(grantedAt.get()).as("semaphores broken: hand-off " + i + " happened").isNotZero();
      handOffs.add(grantedAt.get() - releasedAt);
    }
    always.release();
    Collections.sort(handOffs);
    long median = ms(handOffs.get(handOffs.size() / 2));
    assertThat(median)
        .withFailMessage(
            "semaphores broken: median hand-off from the release of a permit to a waiting"
                + " client's grant was %d ms (wake-up bound %d ms); all in ms: %s: a release of a"
                + " permit must wake the semaphore's waiters",
            median,
            limits().wakeUp().toMillis(),
            handOffs.stream().map(n -> ms(n)).collect(Collectors.toList()))
        .isLessThanOrEqualTo(limits().wakeUp().toMillis());
  }

  @Test
  @DisplayName(
      "18.10 MUST: a waiter on a full semaphore sleeps until it is woken: it polls about once per"
          + " recheck interval, not in a loop")
  default void rule18_10_waiterDoesNotPoll() throws Exception {
    requireFeature(Feature.NOTIFIED_WAKEUP, Guarantees.Primitive.SEMAPHORE, "18.10");
    String name = name("sem-no-polling");
    LockClient holder = client(longLease());
    List<Lease> held =
        List.of(
            holder.semaphore(name, 2).acquire(Duration.ofSeconds(10)),
            holder.semaphore(name, 2).acquire(Duration.ofSeconds(10)));
    LockClient waiterClient = client();
    try {
      assertClaimWaiterSleeps(
          name, Claim.Kind.PERMIT, waiterClient.semaphore(name, 2), waiterClient, "semaphores");
    } finally {
      releaseAll(held);
    }
  }
}
