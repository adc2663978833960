package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.spi.Abandonable;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 18: semaphores (rules 18.1 to 18.5; the others in {@link SemaphoreEdgeRules}), as tests: the
 * rules of this group in {@code RULES.md}. The kit's {@code @Nested} class {@link
 * LockCompatibilityKit.Semaphores} runs them against the backend under test. Every rule here needs
 * {@link Feature#SEMAPHORES}: without it each is skipped with that reason.
 */
@RequiresFeature(Feature.SEMAPHORES)
interface SemaphoreRules extends KitRules {
  @Test
  @DisplayName(
      "18.1 MUST: at most N holders at once under contention from 8 threads over 2 clients, and"
          + " more than one really at once")
  default void rule18_1_atMostNHoldersUnderContention() throws Exception {
    // short rechecks: without notified wake-up, waiters still look again often enough to contend
    LockClient[] cs = {
      client(renewing(), Duration.ofMillis(50)), client(renewing(), Duration.ofMillis(50))
    };
    String name = name("sem-contended");
    int permits = 3;
    long deadline = System.nanoTime() + limits().tolerance().multipliedBy(3).toNanos();
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger peak = new AtomicInteger();
    AtomicInteger holds = new AtomicInteger();
    AtomicReference<String> overGrant = new AtomicReference<>();
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < 8; t++) {
      DistributedLock sem = cs[t % cs.length].semaphore(name, permits);
      workers.add(
          background(
              "sem-contender-" + t,
              () -> {
                go.await();
                for (int held = 0; held < 20 && System.nanoTime() - deadline < 0; ) {
                  Optional<Lease> got;
                  try {
                    got =
                        sem.tryAcquire(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
                  } catch (BackendUnavailableException e) {
                    continue; // a server too slow under this load is not this rule's property
                  }
                  if (got.isEmpty()) {
                    break;
                  }
                  int now = inside.incrementAndGet();
                  peak.accumulateAndGet(now, Math::max);
                  if (now > permits) {
                    overGrant.compareAndSet(
                        null,
                        now + " holders at once (tokens up to " + got.get().fencingToken() + ")");
                  }
                  Thread.sleep(3);
                  inside.decrementAndGet();
                  got.get().release();
                  held++;
                  holds.incrementAndGet();
                }
              }));
    }
    go.countDown();
    for (Thread w : workers) {
      w.join(limits().tolerance().multipliedBy(10).toMillis());
    }
    assertThat(overGrant.get())
        .withFailMessage(
            "semaphores broken: a semaphore of %d permits had %s under contention from 8 threads"
                + " over 2 clients: the server granted more permits than the count (a check and a"
                + " take that are not one atomic step, or an off-by-one)",
            permits, overGrant.get())
        .isNull();
    assertThat(holds.get())
        .as(
            "semaphores broken: permits held under contention in %d ms",
            limits().tolerance().multipliedBy(3).toMillis())
        .isPositive();
    assertThat(peak.get())
        .withFailMessage(
            "semaphores broken: 8 threads contending for a semaphore of %d permits never held"
                + " more than one at once (%d holds): a semaphore must let its permits be held"
                + " together, not act as a mutex",
            permits, holds.get())
        .isGreaterThanOrEqualTo(2);
  }

  @Test
  @DisplayName(
      "18.2 MUST: exactly N tryAcquire() succeed, the next finds it full, one release lets the"
          + " next in, and a stale release frees nothing")
  default void rule18_2_exactlyNPermits() throws Exception {
    String name = name("sem-count");
    int permits = 3;
    LockClient[] cs = {client(), client()};
    LockClient other = client();
    List<Lease> held = new ArrayList<>();
    for (int i = 0; i < permits; i++) {
      Optional<Lease> got = cs[i % 2].semaphore(name, permits).tryAcquire();
      assertThat(got)
          .withFailMessage(
              "semaphores broken: tryAcquire() of permit %d of a semaphore of %d found it full"
                  + " with %d held: all N permits must be usable at once (a semaphore that is a"
                  + " mutex, or counts a lease twice)",
              i + 1, permits, i)
          .isPresent();
      held.add(got.get());
    }
    Optional<Lease> extra = other.semaphore(name, permits).tryAcquire();
    extra.ifPresent(Lease::release);
    assertThat(extra)
        .withFailMessage(
            "semaphores broken: tryAcquire() of permit %d of a semaphore of %d succeeded while"
                + " all %d were held: the server granted one permit too many (N+1)",
            permits + 1, permits, permits)
        .isEmpty();
    Lease gone = held.remove(1);
    assertThat(gone.release()).as("semaphores broken: release() of a held permit").isTrue();
    Optional<Lease> next = other.semaphore(name, permits).tryAcquire();
    assertThat(next)
        .withFailMessage(
            "semaphores broken: after one of %d held permits was released, tryAcquire() found the"
                + " semaphore still full: a release must free its permit (a permit leak)",
            permits)
        .isPresent();
    held.add(next.get());
    boolean again = releaseAgain(name, Claim.Kind.PERMIT, gone);
    Optional<Lease> intruder = other.semaphore(name, permits).tryAcquire();
    intruder.ifPresent(Lease::release);
    assertThat(intruder)
        .withFailMessage(
            "semaphores broken: the release of a permit already released, sent to the server"
                + " again (a delayed or repeated request), freed a permit another lease holds (it"
                + " answered %s): a release must be owner-checked per lease on the server, not"
                + " counted",
            again)
        .isEmpty();
    assertThat(again)
        .withFailMessage(
            "semaphores broken: the release of a permit already released, sent to the server"
                + " again, answered true: a release must say whether this lease still held a"
                + " permit")
        .isFalse();
    releaseAll(held);
  }

  @Test
  @DisplayName(
      "18.3 MUST: permits of holders that vanish or stop renewing come back within lease + expiry"
          + " slack; renewal keeps a permit past 3 leases; stale releases free nothing")
  default void rule18_3_permitsOfVanishedHoldersComeBack() throws Exception {
    String name = name("sem-expiry");
    int permits = 4;
    LockClient renewed = client();
    LockClient doomed = client();
    LockClient doomedUnrenewed = client(expiring());
    LockClient unrenewed = client(expiring());
    Lease kept = renewed.semaphore(name, permits).acquire(Duration.ofSeconds(10));
    long keptAt = System.nanoTime();
    List<Lease> stale = new ArrayList<>();
    stale.add(doomed.semaphore(name, permits).acquire(Duration.ofSeconds(10)));
    stale.add(doomedUnrenewed.semaphore(name, permits).acquire(Duration.ofSeconds(10)));
    stale.add(unrenewed.semaphore(name, permits).acquire(Duration.ofSeconds(10)));
    LockClient watcher = client();
    DistributedLock sem = watcher.semaphore(name, permits);
    assertThat(sem.tryAcquire())
        .as("semaphores broken: tryAcquire() of a full semaphore")
        .isEmpty();
    ((Abandonable) doomed).abandon();
    ((Abandonable) doomedUnrenewed).abandon();
    long start = System.nanoTime();
    Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
    List<Lease> back = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      long left = bound.plus(limits().tolerance()).toNanos() - (System.nanoTime() - start);
      Optional<Lease> got = sem.tryAcquire(Duration.ofNanos(Math.max(1, left)));
      assertThat(got.isPresent() && ms(System.nanoTime() - start) <= bound.toMillis())
          .withFailMessage(
              "semaphores broken: only %d of the 3 permits whose holders vanished (a renewed one,"
                  + " an unrenewed one) or stopped renewing (a live client, lease %d ms without"
                  + " renewal) came back within %d ms (lease + expiry slack + tolerance); permit"
                  + " %d %s: a permit must be freed by its lease when its holder is gone (a"
                  + " permit leak)",
              i,
              limits().lease().toMillis(),
              bound.toMillis(),
              i + 1,
              got.isPresent()
                  ? "came only after " + ms(System.nanoTime() - start) + " ms"
                  : "never came")
          .isTrue();
      back.add(got.get());
    }
    if (guarantees().has(Feature.RENEWAL)) {
      long watch =
          limits().lease().multipliedBy(7).dividedBy(2).toNanos() - (System.nanoTime() - keptAt);
      Optional<Lease> intruder = sem.tryAcquire(Duration.ofNanos(Math.max(1, watch)));
      intruder.ifPresent(Lease::release);
      assertThat(intruder)
          .withFailMessage(
              "semaphores broken: a permit renewed by its live client was given to another client"
                  + " %d ms after it was taken (lease %d ms): renewal must keep a permit held"
                  + " past its lease",
              ms(System.nanoTime() - keptAt), limits().lease().toMillis())
          .isEmpty();
      assertThat(kept.isValid())
          .as("semaphores broken: isValid() of a permit renewed for 3.5 leases")
          .isTrue();
    } else {
      assertThat(sem.tryAcquire())
          .withFailMessage(
              "semaphores broken: a 5th permit of a semaphore of 4 was granted after the "
                  + "3 stale permits came back")
          .isEmpty();
    }
    for (Lease s : stale) {
      BackendLease old = granted(name, Claim.Kind.PERMIT, s);
      boolean answered = releaseAgain(name, Claim.Kind.PERMIT, s);
      Optional<Lease> intruder = sem.tryAcquire();
      intruder.ifPresent(Lease::release);
      assertThat(intruder)
          .withFailMessage(
              "semaphores broken: the release of a lease whose permit had run out and been given"
                  + " to another holder (token %d) freed a permit someone else holds (the server"
                  + " answered %s): a release must be owner-checked per lease",
              old.fencingToken(), answered)
          .isEmpty();
      assertThat(answered)
          .withFailMessage(
              "semaphores broken: the release of a lease whose permit had run out (token %d) "
                  + "answered true: it must say whether this lease still held a permit",
              old.fencingToken())
          .isFalse();
    }
    assertThat(kept.release()).as("semaphores broken: release() of the renewed permit").isTrue();
    Optional<Lease> last = sem.tryAcquire(limits().tolerance());
    assertThat(last)
        .withFailMessage("semaphores broken: the renewed permit was not free after its release")
        .isPresent();
    back.add(last.get());
    releaseAll(back);
  }

  @Test
  @DisplayName(
      "18.4 MUST: waiters that time out, are interrupted or are cancelled leave nothing behind:"
          + " every released permit can be taken at once")
  default void rule18_4_withdrawnWaitersLeaveNoGhost() throws Exception {
    String name = name("sem-withdrawn");
    int permits = 2;
    LockClient holder = client();
    Lease first = holder.semaphore(name, permits).acquire(Duration.ofSeconds(10));
    Lease second = holder.semaphore(name, permits).acquire(Duration.ofSeconds(10));
    LockClient waiters = client();
    assertThat(waiters.semaphore(name, permits).tryAcquire(Duration.ofMillis(50)))
        .as("tryAcquire(50 ms) of a full semaphore")
        .isEmpty();
    DistributedLock interrupted = waiters.semaphore(name, permits);
    AtomicReference<Throwable> outcome = new AtomicReference<>();
    int polled = probe().polls(name, Claim.Kind.PERMIT);
    Thread waiter =
        background(
            "sem-interrupted",
            () -> {
              try {
                interrupted.acquire(Duration.ofSeconds(60)).release();
                outcome.set(
                    new AssertionError("acquire returned a permit although it was interrupted"));
              } catch (Throwable e) {
                outcome.set(e);
              }
            });
    awaitQueued(waiter, name, Claim.Kind.PERMIT, polled, "a semaphore waiter blocks");
    waiter.interrupt();
    waiter.join(limits().tolerance().toMillis());
    assertThat(outcome.get())
        .as("what the interrupted acquire of a semaphore threw")
        .isInstanceOf(InterruptedException.class);
    int polledAsync = probe().polls(name, Claim.Kind.PERMIT);
    CompletableFuture<Lease> cancelled =
        waiters.semaphore(name, permits).acquireAsync(Duration.ofSeconds(60));
    await(
        Duration.ofSeconds(10),
        "the asynchronous waiter polls",
        () -> probe().polls(name, Claim.Kind.PERMIT) > polledAsync);
    assertThat(cancelled.cancel(true)).isTrue();
    await(
        limits().tolerance(),
        "the three waiters withdraw",
        () -> probe().abandons(name, Claim.Kind.PERMIT) >= 3);
    List<Lease> taken = new ArrayList<>();
    LockClient next = client();
    for (Lease released : List.of(first, second)) {
      assertThat(released.release()).as("release() of a held permit").isTrue();
      Optional<Lease> got = next.semaphore(name, permits).tryAcquire();
      assertThat(got)
          .withFailMessage(
              "semaphores broken: after %d of %d permits were released, tryAcquire() found the"
                  + " semaphore full: a waiter that timed out, was interrupted or was cancelled"
                  + " left a ghost behind (a permit or a place in line it never gave back)",
              taken.size() + 1, permits)
          .isPresent();
      taken.add(got.get());
    }
    Optional<Lease> extra = next.semaphore(name, permits).tryAcquire();
    extra.ifPresent(Lease::release);
    assertThat(extra)
        .withFailMessage(
            "semaphores broken: a 3rd permit of a semaphore of 2 was granted after withdrawn"
                + " waiters")
        .isEmpty();
    releaseAll(taken);
  }

  @Test
  @DisplayName(
      "18.5 MUST: tokens are above zero and strictly increase across all the semaphore's grants,"
          + " of several clients")
  default void rule18_5_tokensIncreaseAcrossGrants() throws Exception {
    requireFeature(Feature.FENCING, "18.5");
    String name = name("sem-tokens");
    LockClient[] cs = {client(), client(), client()};
    List<Lease> live = new ArrayList<>();
    long last = 0;
    for (int i = 0; i < 20; i++) {
      if (live.size() == 2) {
        live.remove(i % 2).release();
      }
      Lease lease = cs[i % cs.length].semaphore(name, 2).acquire(Duration.ofSeconds(10));
      if (lease.fencingToken() <= last) {
        fail(
            "fencing broken: grant "
                + (i + 1)
                + " of a semaphore of 2 permits got token "
                + lease.fencingToken()
                + " after token "
                + last
                + ": every grant of a semaphore needs a token above every earlier grant's (one"
                + " counter per semaphore, never reset)");
      }
      last = lease.fencingToken();
      live.add(lease);
    }
    releaseAll(live);
  }
}
