package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.LockTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 20: lock sets ({@code client.locks(names)}), as tests: the rules of this group in {@code
 * RULES.md}. The kit's {@code @Nested} class {@link LockCompatibilityKit.LockSets} runs them
 * against the backend under test. A set is each of its names' own lock, so every backend has them.
 */
interface LockSetRules extends KitRules {
  @Test
  @DisplayName(
      "20.1 MUST: a set excludes every single holder and every other set of its names, and they"
          + " exclude it; a set of one is that lock")
  default void rule20_1_setsExcludePerName() throws Exception {
    String a = name("set-a");
    String b = name("set-b");
    String c = name("set-c");
    LockClient one = client(longLease());
    LockClient other = client(longLease());
    try (Lease set = one.locks(List.of(a, b)).acquire(Duration.ofSeconds(10))) {
      for (String n : List.of(a, b)) {
        if (other.lock(n).tryAcquire().map(Lease::release).isPresent()) {
          fail("lock sets broken: '" + n + "' was granted to a single lock while a set held it");
        }
      }
      if (other.locks(List.of(b, c)).tryAcquire().map(Lease::release).isPresent()) {
        fail("lock sets broken: a set sharing '" + b + "' was granted while another set held it");
      }
      try (Lease disjoint = other.lock(c).acquire(Duration.ofSeconds(10))) {
        assertThat(disjoint.isValid())
            .as("lock sets broken: a name outside the set was blocked")
            .isTrue();
      }
    }
    try (Lease single = other.lock(a).acquire(Duration.ofSeconds(10))) {
      if (one.locks(List.of(a, c)).tryAcquire().map(Lease::release).isPresent()) {
        fail("lock sets broken: a set was granted '" + a + "' while a single lock held it");
      }
      if (one.locks(List.of(a)).tryAcquire().map(Lease::release).isPresent()) {
        fail("lock sets broken: a set of one was granted '" + a + "' while its lock was held");
      }
    }
    try (Lease solo = one.locks(List.of(a)).acquire(Duration.ofSeconds(10))) {
      if (other.lock(a).tryAcquire().map(Lease::release).isPresent()) {
        fail("lock sets broken: '" + a + "' was granted to its lock while a set of one held it");
      }
      assertThat(solo.release()).as("lock sets broken: release() of a set of one").isTrue();
    }
    assertThat(other.lock(a).tryAcquire().map(Lease::release))
        .as("lock sets broken: '%s' after the set of one was released", a)
        .isPresent();
  }

  @Test
  @DisplayName(
      "20.2 MUST: sets taken in opposite orders, mixed with single locks of their names, never"
          + " deadlock and never hold a name twice")
  default void rule20_2_oppositeOrdersNeverDeadlock() throws Exception {
    String a = name("order-a");
    String b = name("order-b");
    Map<String, AtomicInteger> inside = new ConcurrentHashMap<>();
    inside.put(a, new AtomicInteger());
    inside.put(b, new AtomicInteger());
    AtomicInteger overlaps = new AtomicInteger();
    AtomicInteger unavailable = new AtomicInteger();
    List<String> errors = new CopyOnWriteArrayList<>();
    int rounds = 20;
    List<List<String>> shapes = List.of(List.of(a, b), List.of(b, a), List.of(a), List.of(b));
    List<Thread> workers = new ArrayList<>();
    // every contender starts at once: one that started late could run its rounds alone
    java.util.concurrent.CountDownLatch ready =
        new java.util.concurrent.CountDownLatch(shapes.size());
    for (List<String> shape : shapes) {
      LockClient c = client(longLease());
      DistributedLock lock = shape.size() == 1 ? c.lock(shape.get(0)) : c.locks(shape);
      workers.add(
          background(
              "set " + shape.size(),
              () -> {
                ready.countDown();
                ready.await();
                for (int i = 0; i < rounds; i++) {
                  try (Lease lease = lock.acquire(Duration.ofSeconds(30))) {
                    for (String n : lease.lockNames()) {
                      if (inside.get(n).incrementAndGet() > 1) {
                        overlaps.incrementAndGet();
                      }
                    }
                    spin(TimeUnit.MILLISECONDS.toNanos(1));
                    for (String n : lease.lockNames()) {
                      inside.get(n).decrementAndGet();
                    }
                  } catch (BackendUnavailableException e) {
                    unavailable.incrementAndGet(); // a loaded server: not a deadlock or overlap
                  } catch (LockTimeoutException e) {
                    errors.add(
                        "a "
                            + (shape.size() == 1 ? "single lock" : "set")
                            + " waited 30 s: "
                            + e.getMessage());
                    return;
                  }
                }
              }));
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    for (Thread w : workers) {
      w.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
      if (w.isAlive()) {
        fail("lock sets broken: a contender was still waiting after 60 s (a deadlock)");
      }
    }
    assertThat(errors).as("lock sets broken: contenders that never got their locks").isEmpty();
    assertThat(overlaps.get())
        .withFailMessage(
            "lock sets broken: a name was held by two holders at once %d time(s) under opposite"
                + " orders",
            overlaps.get())
        .isZero();
    assertThat(unavailable.get())
        .as("every acquire failed with BackendUnavailableException")
        .isLessThan(rounds * shapes.size());
  }

  @Test
  @DisplayName(
      "20.3 MUST: a set that times out, is interrupted or is cancelled holds none of its names"
          + " when the call returns")
  default void rule20_3_nothingHeldAfterGivingUp() throws Exception {
    String a = name("give-up-a");
    String b = name("give-up-b");
    String z = name("give-up-z"); // taken last: every attempt below waits for it
    LockClient holder = client(longLease());
    LockClient c = client(longLease());
    LockClient probe = client(longLease());
    Lease blocker = holder.lock(z).acquire(Duration.ofSeconds(10));
    List<String> names = List.of(a, b, z);

    try {
      c.locks(names).acquire(Duration.ofMillis(300));
      fail("lock sets broken: a set was granted while another client held '" + z + "'");
    } catch (LockTimeoutException expected) {
      assertFree(probe, List.of(a, b), "the timed-out acquire of the set returned");
    }

    AtomicReference<Throwable> outcome = new AtomicReference<>();
    Thread waiter =
        background(
            "set waiter",
            () -> {
              try {
                c.locks(names).acquire();
              } catch (InterruptedException e) {
                outcome.set(e);
              }
            });
    // the set holds its first names and waits for the last before the interrupt
    await(Duration.ofSeconds(10), "the set to take its first names", () -> held(probe, b));
    waiter.interrupt();
    waiter.join(TimeUnit.SECONDS.toMillis(10));
    assertThat(outcome.get())
        .as("lock sets broken: what an interrupted set acquire threw")
        .isInstanceOf(InterruptedException.class);
    assertFree(probe, List.of(a, b), "the interrupted acquire of the set returned");

    // four names: once the third is held on the server, the set has kept the first two (it asks
    // for a name only after keeping the one before); the third may still be on its way into the
    // set as cancel() runs, and is then given back as a single lock's grant racing a cancel is
    String c3 = name("give-up-c");
    List<String> four = List.of(a, b, c3, z);
    CompletableFuture<Lease> future = c.locks(four).acquireAsync(Duration.ofSeconds(30));
    // the set holds its first names and waits for the last before the cancel
    await(Duration.ofSeconds(10), "the async set to take its first names", () -> held(probe, c3));
    future.cancel(true);
    assertFree(probe, List.of(a, b), "cancel() of the async set returned");
    await(
        limits().tolerance(),
        "lock sets broken: '" + c3 + "', the name in flight at the cancel, to be given back",
        () -> !held(probe, c3));
    try {
      future.join();
      fail("lock sets broken: a cancelled set completed with a lease");
    } catch (CancellationException expected) {
      // as cancelled
    }
    blocker.release();
  }

  @Test
  @DisplayName(
      "20.4 MUST: each name's token in a set is above every earlier holder's of that name, single"
          + " or set, and below every later one's")
  default void rule20_4_tokensPerName() throws Exception {
    requireFeature(Feature.FENCING, "20.4");
    String a = name("tokens-a");
    String b = name("tokens-b");
    LockClient[] cs = {client(), client(), client()};
    Map<String, Long> last = new ConcurrentHashMap<>(Map.of(a, 0L, b, 0L));
    for (int i = 0; i < 12; i++) {
      LockClient c = cs[i % cs.length];
      boolean set = i % 2 == 0;
      try (Lease lease =
          set
              ? c.locks(List.of(a, b)).acquire(Duration.ofSeconds(10))
              : c.lock(i % 4 == 1 ? a : b).acquire(Duration.ofSeconds(10))) {
        for (String n : lease.lockNames()) {
          long token = lease.fencingToken(n);
          long before = last.get(n);
          if (token <= before) {
            fail(
                "lock sets broken: '"
                    + n
                    + "' got token "
                    + token
                    + (set ? " in a set" : " as a single lock")
                    + " after token "
                    + before);
          }
          last.put(n, token);
        }
      }
    }
  }

  @Test
  @DisplayName(
      "20.5 MUST: losing one name of a set is losing the set: lost() names it and release()"
          + " frees the rest")
  default void rule20_5_losingOneNameLosesTheSet() throws Exception {
    requireFeature(Feature.LOSS_DETECTION, "20.5");
    String a = name("lose-a");
    String b = name("lose-b");
    Lease set = client().locks(List.of(a, b)).acquire(Duration.ofSeconds(10));
    hook("20.5", () -> faults().revoke(b));
    LeaseLostException loss =
        awaitLossAfterRevoke(
            set,
            "lock sets broken: a set whose name '"
                + b
                + "' was revoked was not reported lost within lease + expiry slack + tolerance");
    // a backend whose revoke ends the holder's session loses both names: either may come first
    assertThat(loss.lockName()).as("lock sets broken: the name the set's loss gives").isIn(a, b);
    assertThat(set.isValid()).as("lock sets broken: isValid() of a set that lost a name").isFalse();
    set.release();
    LockClient probe = client();
    assertFree(probe, List.of(a), "the release of the set that lost '" + b + "' returned");
  }

  @Test
  @DisplayName(
      "20.6 MUST (ATOMIC_LOCK_SETS): a set that finds one of its names held takes none of the"
          + " others, not even for a moment, and a set of free names is granted at once")
  default void rule20_6_aBusySetTakesNoneOfItsNames() throws Exception {
    requireFeature(Feature.ATOMIC_LOCK_SETS, "20.6");
    String a = name("atomic-a");
    String b = name("atomic-b");
    String z = name("atomic-z");
    LockClient holder = client(longLease());
    LockClient setter = client(longLease());
    LockClient single = client(longLease());
    try (Lease free = setter.locks(List.of(a, b)).tryAcquire().orElse(null)) {
      if (free == null) {
        fail("lock sets broken: tryAcquire() of a set of free names was refused");
      }
    }
    Lease blocker = holder.lock(z).acquire(Duration.ofSeconds(10));
    DistributedLock set = setter.locks(List.of(a, b, z));
    int rounds = 300;
    int observed = 200;
    AtomicInteger setRounds = new AtomicInteger();
    AtomicInteger granted = new AtomicInteger();
    AtomicInteger refused = new AtomicInteger();
    AtomicInteger tries = new AtomicInteger();
    java.util.concurrent.atomic.AtomicBoolean done =
        new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.CountDownLatch ready = new java.util.concurrent.CountDownLatch(2);
    Thread sets =
        background(
            "busy set",
            () -> {
              ready.countDown();
              ready.await();
              try {
                // at least `rounds` tries of the set, and on until the observer tried `a` often
                // enough to see a hold of a moment (a loaded machine can starve either thread)
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                for (int i = 0;
                    i < rounds || (tries.get() < observed && System.nanoTime() - until < 0);
                    i++) {
                  set.tryAcquire()
                      .ifPresent(
                          l -> {
                            granted.incrementAndGet();
                            l.release();
                          });
                  setRounds.incrementAndGet();
                }
              } finally {
                done.set(true);
              }
            });
    Thread singles =
        background(
            "single lock",
            () -> {
              ready.countDown();
              ready.await();
              DistributedLock one = single.lock(a);
              while (!done.get()) {
                tries.incrementAndGet();
                Optional<Lease> got = one.tryAcquire();
                if (got.isEmpty()) {
                  refused.incrementAndGet();
                } else {
                  got.get().release();
                }
                // leave the name free most of the time: a set that found it held by this
                // observer would be busy on it, and never take it for the moment looked for
                java.util.concurrent.locks.LockSupport.parkNanos(
                    TimeUnit.MICROSECONDS.toNanos(500));
              }
            });
    sets.join(TimeUnit.SECONDS.toMillis(60));
    singles.join(TimeUnit.SECONDS.toMillis(10));
    blocker.release();
    if (sets.isAlive() || singles.isAlive()) {
      fail("lock sets broken: %d tryAcquire() of a set took over 60 s", setRounds.get());
    }
    assertThat(granted.get())
        .as("lock sets broken: a set granted while another client held '%s'", z)
        .isZero();
    assertThat(setRounds.get()).as("tryAcquire() rounds of the set").isGreaterThanOrEqualTo(rounds);
    assertThat(tries.get())
        .as("tryAcquire() of '%s' beside the set (30 s were not enough)", a)
        .isGreaterThanOrEqualTo(observed);
    assertThat(refused.get())
        .withFailMessage(
            "lock sets broken: a set that found '%s' held took '%s' for a moment: %d of %d"
                + " tryAcquire() of '%s' alone were refused while nobody but the busy set asked"
                + " for it (ATOMIC_LOCK_SETS is declared: a busy set takes none of its names)",
            z, a, refused.get(), tries.get(), a)
        .isZero();
  }

  private static boolean held(LockClient probe, String name) {
    Optional<Lease> taken = probe.lock(name).tryAcquire();
    taken.ifPresent(Lease::release);
    return taken.isEmpty();
  }

  private static void assertFree(LockClient probe, List<String> names, String when) {
    for (String n : names) {
      if (held(probe, n)) {
        fail("lock sets broken: '" + n + "' was still held when " + when);
      }
    }
  }
}
