package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

/**
 * The plumbing every rule group of the kit shares: the group interfaces ({@link
 * MutualExclusionRules}, {@link SemaphoreRules}, ...) extend it, and the kit's {@code @Nested}
 * classes implement them and give {@link #kit()}, the kit instance whose test is running. Its state
 * (clients, threads, child processes, the probe) lives in that instance and is torn down by it
 * after each test; the methods here only reach it.
 */
interface KitRules {
  /**
   * @return the kit instance whose test is running
   */
  LockCompatibilityKit kit();

  // ------------------------------------------------------------------ the kit's own, as it offers
  // them to subclasses

  /** As {@link LockCompatibilityKit#limits()}. */
  default TckTimeouts limits() {
    return kit().limits();
  }

  /** As {@link LockCompatibilityKit#renewing()}. */
  default LockOptions renewing() {
    return kit().renewing();
  }

  /** As {@link LockCompatibilityKit#expiring()}. */
  default LockOptions expiring() {
    return kit().expiring();
  }

  /** As {@link LockCompatibilityKit#client()}. */
  default LockClient client() {
    return kit().client();
  }

  /** As {@link LockCompatibilityKit#client(LockOptions)}. */
  default LockClient client(LockOptions options) {
    return kit().client(options);
  }

  /**
   * @param options default options of the client
   * @param recheck the longest its waiters sleep without a wake-up; null for the URI's setting
   * @return a new client, closed after the test
   */
  default LockClient client(LockOptions options, Duration recheck) {
    return kit().client(options, recheck);
  }

  /**
   * @param application the client's {@code application} setting
   * @return a new client with {@link LockCompatibilityKit#renewing()} options, closed after the
   *     test
   */
  default LockClient clientOf(String application) {
    return kit().client(kit().renewing(), null, application);
  }

  /** As {@link LockCompatibilityKit#name(String)}. */
  default String name(String what) {
    return kit().name(what);
  }

  /** As {@link LockCompatibilityKit#uri()}. */
  default String uri() {
    return kit().uri();
  }

  /** As {@link LockCompatibilityKit#faults()}. */
  default FaultHooks faults() {
    return kit().faults();
  }

  /** As {@link LockCompatibilityKit#background(String, LockCompatibilityKit.Body)}. */
  default Thread background(String name, LockCompatibilityKit.Body body) {
    return kit().background(name, body);
  }

  /** As {@link LockCompatibilityKit#await(Duration, String, BooleanSupplier)}. */
  default void await(Duration within, String what, BooleanSupplier condition)
      throws InterruptedException {
    LockCompatibilityKit.await(within, what, condition);
  }

  /**
   * @return what every call of this test's clients to the backend passed through
   */
  default KitProbe probe() {
    return kit().probe;
  }

  /**
   * @return the threads the kit interrupts and joins after the test
   */
  default List<Thread> threads() {
    return kit().threads;
  }

  /**
   * @return the {@code HELD <token>} line each holding process of this test printed
   */
  default Map<Process, String> childLines() {
    return kit().childLines;
  }

  // ------------------------------------------------------------------ helpers of the rules

  /**
   * @return what the backend under test declares
   */
  default Guarantees guarantees() {
    return client().guarantees();
  }

  /** Skips a rule for a feature the backend does not declare. */
  default void requireFeature(Feature feature, String rule) {
    assumeTrue(
        guarantees().has(feature),
        () -> "rule " + rule + " skipped: the backend does not declare " + feature);
  }

  /**
   * Skips a rule for a feature the backend declares but excepts for this primitive (see {@code
   * Guarantees.Builder#except}).
   */
  default void requireFeature(Feature feature, Guarantees.Primitive primitive, String rule) {
    assumeTrue(
        guarantees().has(feature, primitive),
        () ->
            "rule "
                + rule
                + " skipped: the backend does not declare "
                + feature
                + (guarantees().has(feature)
                    ? " for " + primitive + " (it declares it for locks only)"
                    : ""));
  }

  /** Runs a fault hook, skipping the rule when the backend does not offer it. */
  default void hook(String rule, Runnable action) {
    try {
      action.run();
    } catch (UnsupportedOperationException e) {
      assumeTrue(
          false,
          () ->
              "rule "
                  + rule
                  + " skipped: the backend offers no fault hook '"
                  + e.getMessage()
                  + "'");
    }
  }

  /**
   * Waits until a thread is parked waiting for a lock (blocked in the core's wait, not running).
   */
  default void awaitParked(Thread t, String what) throws InterruptedException {
    await(
        Duration.ofSeconds(10),
        what + " (thread " + t.getName() + " parked, waiting for the lock)",
        () -> {
          Thread.State s = t.getState();
          return s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING;
        });
  }

  /**
   * Waits for a lease whose lock the server forgot to be reported lost: within lease + expiry slack
   * + tolerance, the renewal that finds it gone and the signal included.
   *
   * @param brokenIfNot the failure message if it is not reported in time
   * @return the loss
   */
  default LeaseLostException awaitLossAfterRevoke(Lease lease, String brokenIfNot)
      throws Exception {
    try {
      return lease
          .lost()
          .toCompletableFuture()
          .get(
              limits().lease().plus(limits().expirySlack()).plus(limits().tolerance()).toMillis(),
              TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new AssertionError(brokenIfNot);
    }
  }

  /**
   * @return options holding a lock for a minute without renewal: the client believes it holds it
   *     throughout
   */
  default LockOptions longLease() {
    return LockOptions.builder().lease(Duration.ofSeconds(60)).autoRenew(false).build();
  }

  /** Busy-waits, for delays too short for sleep. */
  default void spin(long nanos) {
    long until = System.nanoTime() + nanos;
    while (System.nanoTime() - until < 0) {
      Thread.onSpinWait();
    }
  }

  /**
   * The loss reasons a revoked lease may honestly be reported with (the contract of {@link
   * FaultHooks#revoke}): TAKEN, and SESSION_LOST for a lease granted for a session, since a backend
   * may revoke by ending the holder's session.
   */
  default List<LeaseLostException.Reason> revokedAllowed(String name, Lease lease) {
    return probe().sessionGrant(name, lease.fencingToken())
        ? List.of(LeaseLostException.Reason.TAKEN, LeaseLostException.Reason.SESSION_LOST)
        : List.of(LeaseLostException.Reason.TAKEN);
  }

  /**
   * @return the indexes of the leases whose loss has been signalled
   */
  default List<Integer> lostOnes(List<Lease> leases) {
    List<Integer> lost = new ArrayList<>();
    for (int i = 0; i < leases.size(); i++) {
      if (leases.get(i).lost().toCompletableFuture().isDone()) {
        lost.add(i);
      }
    }
    return lost;
  }

  /**
   * @return {@code prefix} padded with x to {@code length} characters
   */
  default String pad(String prefix, int length) {
    return prefix + "x".repeat(Math.max(0, length - prefix.length()));
  }

  /**
   * Waits until a waiter has queued: one more poll of the lock has come back from the backend (a
   * thread blocked in a synchronous client call looks parked before its request is even answered)
   * and the thread is parked in the core's wait.
   */
  default void awaitQueued(Thread t, String name, int pollsBefore, String what)
      throws InterruptedException {
    // its own poll: a poll again by a waiter queued before it (a wake, a watch confirmed) would
    // otherwise let the next
    // waiter start while this one's first poll is still on its way to the server, and queue ahead
    // of it
    await(
        Duration.ofSeconds(10),
        what + " (a poll of lock '" + name + "' by its thread came back)",
        () -> probe().polls(name) > pollsBefore && probe().pollsBy(name, t) > 0);
    awaitParked(t, what);
  }

  /**
   * Starts a {@link HoldingProcess} that takes {@code name} and prints {@code HELD <token>}.
   *
   * @param extra more arguments for it (a hold after release, in ms)
   * @return the process, once it printed that line (kept in {@link #childLines()})
   */
  default Process holdInChild(String name, String... extra) throws Exception {
    String java =
        System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    List<String> command =
        new ArrayList<>(
            List.of(
                java,
                "-cp",
                System.getProperty("java.class.path"),
                HoldingProcess.class.getName(),
                name,
                Long.toString(limits().lease().toMillis())));
    command.addAll(List.of(extra));
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.environment().put("LOCKSMITH_URI", uri());
    pb.redirectErrorStream(true);
    Process child = pb.start();
    kit().processes.add(child);
    BufferedReader out =
        new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
    CompletableFuture<String> held =
        CompletableFuture.supplyAsync(
            () -> {
              StringBuilder seen = new StringBuilder();
              try {
                for (String line; (line = out.readLine()) != null; ) {
                  if (line.startsWith("HELD ")) {
                    return line;
                  }
                  seen.append(line).append('\n');
                }
              } catch (Exception e) {
                seen.append(e);
              }
              throw new IllegalStateException(
                  "the holding process ended without taking the lock; it printed:\n" + seen);
            });
    try {
      childLines().put(child, held.get(60, TimeUnit.SECONDS));
    } catch (TimeoutException e) {
      throw new AssertionError("the holding process did not take the lock within 60 s");
    } catch (ExecutionException e) {
      throw new AssertionError(e.getCause().getMessage());
    }
    return child;
  }

  /**
   * @return nanoseconds in whole milliseconds
   */
  default long ms(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(nanos);
  }

  /**
   * Waits until a waiter of this kind has queued: one more poll of that claim came back, and the
   * thread is parked.
   */
  default void awaitQueued(Thread t, String name, Claim.Kind kind, int pollsBefore, String what)
      throws InterruptedException {
    // its acquire returned without waiting, before its poll came back or before it parked: granted
    // although what is
    // held leaves nothing (or it failed)
    Runnable stillWaiting =
        () -> {
          if (!t.isAlive()) {
            Throwable error =
                kit().backgroundErrors.stream()
                    .filter(e -> e.getStackTrace().length > 0)
                    .findFirst()
                    .orElse(null);
            throw new AssertionError(
                (kind == Claim.Kind.PERMIT ? "semaphores" : "read-write locks")
                    + " broken: the "
                    + kind
                    + " waiter on '"
                    + name
                    + "' did not wait: its acquire returned at once "
                    + (error == null
                        ? "with a grant, although what is held leaves no room for it (an"
                            + " over-grant)"
                        : "with " + error));
          }
        };
    await(
        Duration.ofSeconds(10),
        what + " (a " + kind + " poll of '" + name + "' by its thread came back)",
        () -> {
          stillWaiting.run();
          return probe().polls(name, kind) > pollsBefore && probe().pollsBy(name, kind, t) > 0;
        });
    await(
        Duration.ofSeconds(10),
        what + " (thread " + t.getName() + " parked, waiting for the lock)",
        () -> {
          stillWaiting.run();
          Thread.State state = t.getState();
          return state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING;
        });
  }

  /**
   * A waiter for {@code kind} on {@code name}, kept out by what the caller holds, must sleep until
   * it is woken: while nothing changes it polls about once per recheck interval, as rule 11.2 asks
   * of a lock's waiter.
   */
  default void assertClaimWaiterSleeps(
      String name, Claim.Kind kind, DistributedLock waiting, LockClient waiterClient, String broken)
      throws InterruptedException {
    Duration recheck = waiterClient.config().recheck();
    int before = probe().polls(name, kind);
    Thread waiter =
        background(
            "patient-" + kind,
            () -> {
              try (Lease l = waiting.acquire(Duration.ofSeconds(60))) {
                l.isValid();
              }
            });
    awaitQueued(waiter, name, kind, before, "the " + kind + " waiter blocks");
    int queuedAt = settledPolls(() -> probe().polls(name, kind), recheck);
    long from = System.nanoTime();
    Thread.sleep(limits().tolerance().multipliedBy(2).toMillis());
    int polls = probe().polls(name, kind) - queuedAt;
    long watchedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - from);
    String timeline = probe().pollTimeline(name, kind, from);
    long allowed = allowedPolls(watchedMs, recheck);
    waiter.interrupt();
    waiter.join(TimeUnit.SECONDS.toMillis(30));
    assertThat((long) polls)
        .withFailMessage(
            "%s broken: a %s waiter polled %d times in %d ms while nothing it waits for was"
                + " released, once it had settled (at most %d: one per recheck interval of %d ms,"
                + " one more for where the interval falls, one to spare): a waiter must sleep until"
                + " a release wakes it, not poll in a loop; a backend whose %s waiters poll must"
                + " not declare NOTIFIED_WAKEUP for them (Guarantees.Builder#except); the polls"
                + " came back at %s",
            broken,
            kind,
            polls,
            watchedMs,
            allowed,
            recheck.toMillis(),
            kind == Claim.Kind.PERMIT ? "semaphore" : "read-write",
            timeline)
        .isLessThanOrEqualTo(allowed);
  }

  /**
   * Waits until a queued waiter has settled: no poll for a third of the recheck interval (the polls
   * its subscriptions' or watches' confirmations bring, one per server for Redlock, are over), for
   * at most 5 s; a waiter that polls in a loop never settles, and is then counted from where it is.
   *
   * @return the poll count once settled
   */
  default int settledPolls(java.util.function.IntSupplier count, Duration recheck)
      throws InterruptedException {
    long quietNanos = Math.max(TimeUnit.MILLISECONDS.toNanos(100), recheck.toNanos() / 3);
    long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    int last = count.getAsInt();
    long lastChange = System.nanoTime();
    while (System.nanoTime() - giveUp < 0) {
      Thread.sleep(10);
      int now = count.getAsInt();
      if (now != last) {
        last = now;
        lastChange = System.nanoTime();
      } else if (System.nanoTime() - lastChange >= quietNanos) {
        break;
      }
    }
    return last;
  }

  /**
   * @return the polls a settled waiter may make in {@code watchedMs}: one per recheck interval, one
   *     more for where the first interval falls in the window, one to spare (measured on a loaded
   *     machine, the window is the time that passed, not the sleep asked for)
   */
  default long allowedPolls(long watchedMs, Duration recheck) {
    return 2 + watchedMs / Math.max(1, recheck.toMillis());
  }

  /**
   * @return the lease the backend granted with this token, as the core hands it back for release
   */
  default BackendLease granted(String name, Claim.Kind kind, Lease lease) {
    return probe()
        .grant(name, kind, lease.fencingToken())
        .orElseThrow(
            () ->
                new AssertionError(
                    "the kit saw no "
                        + kind
                        + " grant of '"
                        + name
                        + "' with token "
                        + lease.fencingToken()));
  }

  /**
   * Sends a stale lease's release to the server once more (see {@link KitProbe#releaseAgain}). A
   * backend may refuse it with an exception (the lease's connection is gone, say): then it freed
   * nothing, which is all the rule asks, so that counts as false.
   */
  default boolean releaseAgain(String name, Claim.Kind kind, Lease lease) {
    return releaseAgain(granted(name, kind, lease));
  }

  /** As {@link #releaseAgain(String, Claim.Kind, Lease)}, for a grant the rule picked itself. */
  default boolean releaseAgain(BackendLease stale) {
    try {
      return probe().releaseAgain(stale);
    } catch (RuntimeException e) {
      return false;
    }
  }

  /** Releases what is there, for clean-up after a rule's check. */
  default void releaseAll(List<Lease> leases) {
    for (Lease l : leases) {
      l.release();
    }
  }

  /** The read lock of {@code name}'s read-write lock. */
  default DistributedLock read(LockClient c, String name) {
    return c.readWriteLock(name).readLock();
  }

  /** The write lock of {@code name}'s read-write lock. */
  default DistributedLock write(LockClient c, String name) {
    return c.readWriteLock(name).writeLock();
  }
}
