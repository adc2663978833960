package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.DistributedLock;
import dev.locksmith.DistributedReadWriteLock;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockException;
import dev.locksmith.LockOptions;
import dev.locksmith.LockState;
import dev.locksmith.LockTimeoutException;
import dev.locksmith.Locks;
import dev.locksmith.spi.Abandonable;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.LockProvider;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The compatibility kit: every rule of {@code RULES.md}, as tests. A backend passes the kit by one
 * subclass in its test sources:
 *
 * <pre>{@code
 * class MyLockCompatibilityIT extends LockCompatibilityKit {
 *   @Override protected String uri() { return "mystore://localhost:" + server.port(); }
 *   @Override protected FaultHooks faults() { return myHooks; }   // optional
 * }
 * }</pre>
 *
 * Rules for a feature the backend does not declare in its {@link Guarantees}, or that need a fault
 * hook it does not offer, are skipped with the reason; a declared feature must pass. Errors raised
 * on the kit's own background threads fail the test that started them.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@ExtendWith(RuleFailureWording.class)
public abstract class LockCompatibilityKit {
  private final List<LockClient> clients = new CopyOnWriteArrayList<>();
  private final List<Throwable> backgroundErrors = new CopyOnWriteArrayList<>();
  private final List<Thread> threads = new CopyOnWriteArrayList<>();
  private final List<Process> processes = new CopyOnWriteArrayList<>();
  private TckTimeouts timeouts;
  private String testTag;
  private KitProbe probe;
  private LockProvider provider;

  /**
   * @return the URI of the backend under test; also given to child processes (in {@code
   *     LOCKSMITH_URI}) for the rules that kill a holding process
   */
  protected abstract String uri();

  /**
   * The provider the kit's clients are opened with. Every call to the backend passes through the
   * kit unchanged, so that rules can count a waiter's polls and aim races at the instant a request
   * reaches the backend. Override it when the provider is not found by the URI's scheme (a provider
   * built around a {@code DataSource} the test owns, say); the URI still names the scheme and the
   * settings.
   *
   * @return the provider of the backend under test; by default the one {@link
   *     Locks#provider(LockConfig)} finds for the scheme of {@link #uri()}
   */
  protected LockProvider provider() {
    return Locks.provider(LockConfig.fromUri(uri()));
  }

  /**
   * @return the fault hooks the backend offers; none by default
   */
  protected FaultHooks faults() {
    return FaultHooks.NONE;
  }

  /**
   * @return the time limits; {@link TckTimeouts#fromEnvironment()} by default
   */
  protected TckTimeouts timeouts() {
    return TckTimeouts.fromEnvironment();
  }

  // ------------------------------------------------------------------ plumbing for the rules

  @BeforeEach
  void prepareKit(TestInfo info) {
    timeouts = timeouts();
    testTag = info.getTestMethod().map(m -> m.getName()).orElse("test");
    probe = new KitProbe();
    provider = null;
  }

  @AfterEach
  void tearDownKit() throws Exception {
    for (Thread t : threads) {
      t.interrupt();
    }
    for (Thread t : threads) {
      t.join(TimeUnit.SECONDS.toMillis(10));
    }
    for (Process p : processes) {
      p.destroyForcibly();
    }
    for (LockClient c : clients) {
      c.close();
    }
    threads.clear();
    processes.clear();
    clients.clear();
    if (!backgroundErrors.isEmpty()) {
      AssertionError e =
          new AssertionError("background threads of this test failed: " + backgroundErrors);
      backgroundErrors.forEach(e::addSuppressed);
      backgroundErrors.clear();
      throw e;
    }
  }

  /**
   * @return the time limits of this run
   */
  protected final TckTimeouts limits() {
    return timeouts;
  }

  /**
   * @return kit options: the kit's short lease, auto-renew on, reentrant
   */
  protected final LockOptions renewing() {
    return LockOptions.builder().lease(timeouts.lease()).autoRenew(true).reentrant(true).build();
  }

  /**
   * @return kit options: the kit's short lease, auto-renew off
   */
  protected final LockOptions expiring() {
    return LockOptions.builder().lease(timeouts.lease()).autoRenew(false).reentrant(true).build();
  }

  /**
   * @return a new client with {@link #renewing()} options, closed after the test
   */
  protected final LockClient client() {
    return client(renewing());
  }

  /**
   * @param options default options of the client
   * @return a new client, closed after the test
   */
  protected final LockClient client(LockOptions options) {
    return client(options, null);
  }

  /**
   * @param options default options of the client
   * @param recheck the longest its waiters sleep without a wake-up; null for the URI's setting
   * @return a new client, closed after the test
   */
  private LockClient client(LockOptions options, Duration recheck) {
    if (provider == null) {
      provider = probe.wrap(provider());
    }
    LockConfig.Builder config = LockConfig.builder().uri(uri()).defaults(options);
    if (recheck != null) {
      config.recheck(recheck);
    }
    LockClient c = Locks.connect(config.build(), provider);
    clients.add(c);
    return c;
  }

  /**
   * @param what a word for the lock's role
   * @return a lock name unique to this test and run, so servers that keep state between runs do not
   *     interfere
   */
  protected final String name(String what) {
    return "tck/" + testTag + "/" + what + "/" + UUID.randomUUID().toString().substring(0, 8);
  }

  private Guarantees guarantees() {
    return client().guarantees();
  }

  private void requireFeature(Feature feature, String rule) {
    assumeTrue(
        guarantees().has(feature),
        () -> "rule " + rule + " skipped: the backend does not declare " + feature);
  }

  /**
   * Skips a rule for a feature the backend declares but excepts for this primitive (see {@code
   * Guarantees.Builder#except}).
   */
  private void requireFeature(Feature feature, Guarantees.Primitive primitive, String rule) {
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

  private void hook(String rule, Runnable action) {
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

  /** A body for a background thread that may throw. */
  @FunctionalInterface
  protected interface Body {
    /**
     * @throws Exception anything; it fails the test
     */
    void run() throws Exception;
  }

  /**
   * Starts a thread whose failure fails the test; it is interrupted and joined after the test.
   *
   * @param name the thread's name
   * @param body what it runs
   * @return the started thread
   */
  protected final Thread background(String name, Body body) {
    Thread t =
        new Thread(
            () -> {
              try {
                body.run();
              } catch (InterruptedException e) {
                // the kit interrupts its threads when a test ends
              } catch (Throwable e) {
                backgroundErrors.add(e);
              }
            },
            "tck-" + name);
    t.setDaemon(true);
    threads.add(t);
    t.start();
    return t;
  }

  /**
   * Waits for a condition, polling every few milliseconds, failing with {@code what} at the
   * deadline.
   *
   * @param within the deadline
   * @param what what was expected, for the failure message
   * @param condition the condition
   * @throws InterruptedException if interrupted
   */
  protected static void await(Duration within, String what, BooleanSupplier condition)
      throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        fail("expected within " + within.toMillis() + " ms: " + what);
      }
      Thread.sleep(2);
    }
  }

  /**
   * Waits until a thread is parked waiting for a lock (blocked in the core's wait, not running).
   */
  private static void awaitParked(Thread t, String what) throws InterruptedException {
    await(
        Duration.ofSeconds(10),
        what + " (thread " + t.getName() + " parked, waiting for the lock)",
        () -> {
          Thread.State s = t.getState();
          return s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING;
        });
  }

  /**
   * @return options holding a lock for a minute without renewal: the client believes it holds it
   *     throughout
   */
  private static LockOptions longLease() {
    return LockOptions.builder().lease(Duration.ofSeconds(60)).autoRenew(false).build();
  }

  /** Busy-waits, for delays too short for sleep. */
  private static void spin(long nanos) {
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
  private List<LeaseLostException.Reason> revokedAllowed(String name, Lease lease) {
    return probe.sessionGrant(name, lease.fencingToken())
        ? List.of(LeaseLostException.Reason.TAKEN, LeaseLostException.Reason.SESSION_LOST)
        : List.of(LeaseLostException.Reason.TAKEN);
  }

  private static List<Integer> lostOnes(List<Lease> leases) {
    List<Integer> lost = new ArrayList<>();
    for (int i = 0; i < leases.size(); i++) {
      if (leases.get(i).lost().toCompletableFuture().isDone()) {
        lost.add(i);
      }
    }
    return lost;
  }

  private static String pad(String prefix, int length) {
    return prefix + "x".repeat(Math.max(0, length - prefix.length()));
  }

  /**
   * Waits until a waiter has queued: one more poll of the lock has come back from the backend (a
   * thread blocked in a synchronous client call looks parked before its request is even answered)
   * and the thread is parked in the core's wait.
   */
  private void awaitQueued(Thread t, String name, int pollsBefore, String what)
      throws InterruptedException {
    // its own poll: a poll again by a waiter queued before it (a wake, a watch confirmed) would
    // otherwise let the next
    // waiter start while this one's first poll is still on its way to the server, and queue ahead
    // of it
    await(
        Duration.ofSeconds(10),
        what + " (a poll of lock '" + name + "' by its thread came back)",
        () -> probe.polls(name) > pollsBefore && probe.pollsBy(name, t) > 0);
    awaitParked(t, what);
  }

  private final java.util.Map<Process, String> childLines =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * Starts a {@link HoldingProcess} that takes {@code name} and prints {@code HELD <token>}.
   *
   * @param extra more arguments for it (a hold after release, in ms)
   * @return the process, once it printed that line (kept in {@link #childLines})
   */
  private Process holdInChild(String name, String... extra) throws Exception {
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
    processes.add(child);
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
      childLines.put(child, held.get(60, TimeUnit.SECONDS));
    } catch (TimeoutException e) {
      throw new AssertionError("the holding process did not take the lock within 60 s");
    } catch (ExecutionException e) {
      throw new AssertionError(e.getCause().getMessage());
    }
    return child;
  }

  private static long ms(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(nanos);
  }

  // ------------------------------------------------------------------ the rules

  @Nested
  @DisplayName("Rule 1: mutual exclusion")
  class MutualExclusion {
    @Test
    @DisplayName(
        "1.1 MUST: at most one holder at a time, under contention from 8 threads over 2 clients")
    void rule1_1_atMostOneHolderUnderContention() throws Exception {
      LockClient[] cs = {client(), client()};
      String name = name("contended");
      int threadCount = 8;
      int perThread = 250;
      long budget = limits().tolerance().multipliedBy(60).toNanos();
      long deadline = System.nanoTime() + budget;
      AtomicInteger counter = new AtomicInteger();
      AtomicInteger done = new AtomicInteger();
      HoldLog holds = new HoldLog();
      List<String> contenderErrors = new CopyOnWriteArrayList<>();
      AtomicInteger unavailable = new AtomicInteger();
      CountDownLatch go = new CountDownLatch(1);
      List<Thread> workers = new ArrayList<>();
      for (int t = 0; t < threadCount; t++) {
        int clientIndex = t % cs.length;
        DistributedLock lock = cs[clientIndex].lock(name);
        Thread w =
            new Thread(
                () -> {
                  try {
                    go.await();
                    int held = 0;
                    while (held < perThread && System.nanoTime() - deadline < 0) {
                      Optional<Lease> got;
                      try {
                        got =
                            lock.tryAcquire(
                                Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
                      } catch (BackendUnavailableException e) {
                        // a server too slow under this load is not this rule's property: the
                        // attempt was
                        // withdrawn, nothing is held; try again, and report it only if the run
                        // cannot finish
                        unavailable.incrementAndGet();
                        continue;
                      }
                      if (got.isEmpty()) {
                        break;
                      }
                      try (Lease lease = got.get()) {
                        long start = System.nanoTime();
                        int seen =
                            counter
                                .get(); // an unguarded read-modify-write: only the lock protects it
                        Thread.yield();
                        counter.set(seen + 1);
                        done.incrementAndGet();
                        holds.record(clientIndex, lease.fencingToken(), start, System.nanoTime());
                      }
                      held++;
                    }
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  } catch (Throwable e) {
                    contenderErrors.add(Thread.currentThread().getName() + ": " + e);
                  }
                },
                "tck-contender-" + t);
        w.setDaemon(true);
        threads.add(w);
        workers.add(w);
        w.start();
      }
      go.countDown();
      for (Thread w : workers) {
        w.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()) + 5_000));
      }
      // the property first, whatever else went wrong: lost updates and overlapping holds
      List<String> problems = new ArrayList<>();
      int lost = done.get() - counter.get();
      if (lost != 0) {
        problems.add(
            "mutual exclusion broken: "
                + lost
                + " of "
                + done.get()
                + " unguarded increments were lost (two holders at once)");
      }
      String overlap = holds.firstOverlap();
      if (overlap != null) {
        problems.add("mutual exclusion broken: holds overlapped: " + overlap);
      }
      if (cs[0].guarantees().has(Feature.FENCING)) {
        String inversion = holds.firstTokenInversion();
        if (inversion != null) {
          problems.add("fencing broken under contention: " + inversion);
        }
      }
      if (!contenderErrors.isEmpty()) {
        problems.add(
            "liveness broken: contenders failed: "
                + contenderErrors.subList(0, Math.min(3, contenderErrors.size()))
                + (contenderErrors.size() > 3
                    ? " and " + (contenderErrors.size() - 3) + " more"
                    : ""));
      }
      long alive = workers.stream().filter(Thread::isAlive).count();
      if (done.get() < threadCount * perThread && contenderErrors.isEmpty()) {
        problems.add(
            "liveness broken: only "
                + done.get()
                + " of "
                + threadCount * perThread
                + " acquisitions finished within "
                + TimeUnit.NANOSECONDS.toSeconds(budget)
                + " s"
                + (alive > 0 ? " (" + alive + " contenders still blocked)" : "")
                + (unavailable.get() > 0
                    ? "; " + unavailable.get() + " attempts found the server unavailable"
                    : ""));
      }
      if (!problems.isEmpty()) {
        fail(String.join("; ", problems));
      }
    }

    @Test
    @DisplayName(
        "1.2 MUST: clients racing for a free lock at the same instant: never more than one winner")
    void rule1_2_simultaneousRaceHasOneWinner() throws Exception {
      int n = 8;
      LockClient[] cs = new LockClient[n];
      for (int i = 0; i < n; i++) {
        cs[i] = client();
      }
      String base = name("race");
      long budget = limits().tolerance().multipliedBy(3).toNanos();
      long start = System.nanoTime();
      int rounds = 0;
      int won = 0;
      ExecutorService pool =
          Executors.newFixedThreadPool(
              n,
              r -> {
                Thread t = new Thread(r, "tck-racer");
                t.setDaemon(true);
                return t;
              });
      try {
        for (; rounds < 200 && (rounds < 20 || System.nanoTime() - start < budget); rounds++) {
          String lockName = base + "/" + rounds;
          AtomicLong goAt = new AtomicLong();
          CyclicBarrier ready = new CyclicBarrier(n, () -> goAt.set(System.nanoTime() + 300_000));
          List<Future<Optional<Lease>>> racers = new ArrayList<>();
          for (int i = 0; i < n; i++) {
            DistributedLock lock = cs[i].lock(lockName);
            racers.add(
                pool.submit(
                    () -> {
                      ready.await(10, TimeUnit.SECONDS);
                      while (System.nanoTime() - goAt.get() < 0) {
                        Thread.onSpinWait(); // all start together, so a check-then-set in two steps
                        // overlaps
                      }
                      return lock.tryAcquire();
                    }));
          }
          List<Lease> winners = new ArrayList<>();
          for (Future<Optional<Lease>> f : racers) {
            f.get(30, TimeUnit.SECONDS).ifPresent(winners::add);
          }
          for (Lease l : winners) {
            l.release();
          }
          if (winners.size() > 1) {
            fail(
                "mutual exclusion broken: "
                    + winners.size()
                    + " of "
                    + n
                    + " clients that raced for the free lock '"
                    + lockName
                    + "' at the same instant were all granted it (round "
                    + (rounds + 1)
                    + "; tokens "
                    + winners.stream()
                        .map(l -> Long.toString(l.fencingToken()))
                        .collect(Collectors.joining(", "))
                    + "): taking a lock must be one atomic check-and-set on the server");
          }
          won += winners.size();
        }
      } finally {
        pool.shutdownNow();
      }
      assertThat(won)
          .withFailMessage(
              "liveness broken: in %d races for a free lock nobody was ever granted it", rounds)
          .isPositive();
    }
  }

  @Nested
  @DisplayName("Rule 2: ownership")
  class Ownership {
    @Test
    @DisplayName(
        "2.1 MUST: a release after the lease expired reports false and leaves the new holder's lock"
            + " held")
    void rule2_1_releaseAfterExpiryNeverFreesTheNewHolder() throws Exception {
      String name = name("expired-release");
      LockClient a = client(expiring());
      LockClient b = client();
      Lease stale = a.lock(name).acquire(Duration.ofSeconds(10));
      Lease fresh =
          b.lock(name)
              .acquire(limits().lease().plus(limits().expirySlack()).plus(limits().tolerance()));
      assertThat(stale.release())
          .as("release() of a lease that expired and was taken over")
          .isFalse();
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage(
              "ownership broken: releasing an expired lease freed the new holder's lock")
          .isEmpty();
      assertThat(fresh.isValid()).as("the new holder's lease").isTrue();
      assertThat(fresh.release()).as("the new holder's release").isTrue();
    }

    @Test
    @DisplayName(
        "2.2 MUST: releasing twice is harmless: true, then false, and a later holder keeps its"
            + " lock")
    void rule2_2_doubleReleaseIsHarmless() throws Exception {
      String name = name("double-release");
      LockClient a = client();
      LockClient b = client();
      Lease first = a.lock(name).acquire(Duration.ofSeconds(10));
      assertThat(first.release()).as("first release").isTrue();
      Lease second = b.lock(name).acquire(Duration.ofSeconds(10));
      assertThat(first.release()).as("second release of the same lease").isFalse();
      first.close();
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage("ownership broken: releasing a lease again freed the next holder's lock")
          .isEmpty();
      assertThat(second.release()).isTrue();
    }

    @Test
    @DisplayName(
        "2.3 MUST: unlock() of the Lock view by a thread that does not hold it throws"
            + " IllegalMonitorStateException and frees nothing")
    void rule2_3_unlockByAnotherThreadFails() throws Exception {
      String name = name("foreign-unlock");
      DistributedLock lock = client().lock(name);
      Lock view = lock.asLock();
      assertThat(view.tryLock(10, TimeUnit.SECONDS)).isTrue();
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      Thread other =
          new Thread(
              () -> {
                try {
                  view.unlock();
                } catch (Throwable e) {
                  thrown.set(e);
                }
              });
      other.start();
      other.join();
      assertThat(thrown.get())
          .as("unlock() by a thread that does not hold the lock")
          .isInstanceOf(IllegalMonitorStateException.class);
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage("a foreign unlock() freed the lock")
          .isEmpty();
      view.unlock();
      assertThat(client().lock(name).tryAcquire()).as("after the owner's unlock()").isPresent();
    }

    @Test
    @DisplayName("2.4 MUST: closing another client leaves our lock held")
    void rule2_4_anotherClientCannotFreeOurLock() throws Exception {
      String name = name("other-client");
      Lease mine = client().lock(name).acquire(Duration.ofSeconds(10));
      LockClient other = client();
      assertThat(other.lock(name).tryAcquire()).isEmpty();
      other.close();
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage("closing another client freed our lock")
          .isEmpty();
      assertThat(mine.release()).isTrue();
    }

    @Test
    @DisplayName(
        "2.5 MUST: a holder whose lock the server gave away meanwhile cannot free the new holder's"
            + " lock")
    void rule2_5_releaseAfterTakeoverIsOwnerChecked() throws Exception {
      String name = name("taken-over");
      // a long lease without renewal: the client believes it holds the lock throughout,
      // so its release reaches the server and only the server's owner check protects the new holder
      Lease stale = client(longLease()).lock(name).acquire(Duration.ofSeconds(10));
      hook("2.5", () -> faults().revoke(name));
      Lease fresh = client().lock(name).acquire(Duration.ofSeconds(10));
      assertThat(stale.release())
          .withFailMessage(
              "ownership broken: release() by a holder whose lock was taken over reported true")
          .isFalse();
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage(
              "ownership broken: a release by the previous holder freed the new holder's lock")
          .isEmpty();
      assertThat(fresh.release()).as("the new holder's release").isTrue();
    }

    @Test
    @DisplayName(
        "2.6 MUST: a release after the server forgot the lock, with no new holder, reports false")
    void rule2_6_releaseOfAForgottenLockIsFalse() throws Exception {
      String name = name("forgotten");
      Lease stale = client(longLease()).lock(name).acquire(Duration.ofSeconds(10));
      hook("2.6", () -> faults().revoke(name));
      assertThat(stale.release())
          .withFailMessage(
              "ownership broken: release() reported true for a lock the server no longer held for"
                  + " this lease (revoked, nobody else holding it): release must say whether this"
                  + " lease still held the lock")
          .isFalse();
    }

    @Test
    @DisplayName(
        "2.7 MUST: ownership is per lease, not per client: a revoked lease cannot free the lock"
            + " another lease of its client took")
    void rule2_7_ownershipIsPerLease() throws Exception {
      String name = name("per-lease");
      LockClient c = client(longLease());
      Lease first = c.lock(name).acquire(Duration.ofSeconds(10));
      hook("2.7", () -> faults().revoke(name));
      // the same client takes the lock again, as a second lease (asynchronously, so not a reentrant
      // holding)
      Lease second = c.lock(name).acquireAsync(Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
      assertThat(first.release())
          .withFailMessage(
              "ownership broken: the revoked lease's release() reported true while another lease of"
                  + " the same client held the lock: the owner must be checked per lease (its owner"
                  + " id), not per client")
          .isFalse();
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage(
              "ownership broken: the revoked lease's release freed the lock held by another lease"
                  + " of the same client: the owner must be checked per lease (its owner id), not"
                  + " per client")
          .isEmpty();
      assertThat(second.release())
          .as("ownership broken: release() of the lease that holds the lock")
          .isTrue();
    }

    @Test
    @DisplayName(
        "2.8 MUST: a release is one atomic owner-checked step: racing a takeover, it never frees"
            + " the new holder's lock")
    void rule2_8_releaseIsAtomicUnderATakeoverRace() throws Exception {
      String base = name("release-race");
      LockClient a = client(longLease());
      LockClient b = client(longLease());
      LockClient c = client();
      // skips the rule if there is no revoke hook; asked of a lock that is held, as every revoke of
      // the kit is
      // (FaultHooks: nothing is promised of a revoke of a lock nobody ever took)
      String check = base + "/hook-check";
      client(longLease()).lock(check).acquire(Duration.ofSeconds(10));
      hook("2.8", () -> faults().revoke(check));
      Random random = new Random();
      for (int trial = 0; trial < 20; trial++) {
        String lockName = base + "/" + trial;
        Lease stale = a.lock(lockName).acquire(Duration.ofSeconds(10));
        CountDownLatch releasing = new CountDownLatch(1);
        long window = Math.max(100_000, 2 * probe.lastReleaseNanos());
        long delay = (long) (random.nextDouble() * window);
        AtomicReference<Lease> taken = new AtomicReference<>();
        AtomicReference<RuntimeException> revokeRefused = new AtomicReference<>();
        probe.onRelease(
            n -> {
              if (n.equals(lockName)) {
                releasing.countDown();
              }
            });
        Thread racer =
            background(
                "takeover-" + trial,
                () -> {
                  releasing.await(5, TimeUnit.SECONDS);
                  spin(delay); // somewhere inside the release's round trip
                  try {
                    faults().revoke(lockName);
                  } catch (RuntimeException e) {
                    // the release may have freed the lock already; FaultHooks lets a revoke of a
                    // free lock refuse
                    revokeRefused.set(e);
                  }
                  taken.set(b.lock(lockName).tryAcquire(Duration.ofSeconds(5)).orElse(null));
                });
        String released;
        try {
          released = String.valueOf(stale.release());
        } catch (BackendUnavailableException e) {
          // a revoke that ends the holder's session or connection may fail the release on it: the
          // lock went with it
          released = "failed (" + e.getMessage() + ")";
        }
        racer.join(TimeUnit.SECONDS.toMillis(15));
        probe.onRelease(null);
        Lease fresh = taken.get();
        assertThat(fresh)
            .withFailMessage(
                "liveness broken: after a release and a revoke, another client could not take lock"
                    + " '%s'%s",
                lockName,
                revokeRefused.get() == null
                    ? ""
                    : " (the revoke hook threw "
                        + revokeRefused.get()
                        + ": if the lock was still held, the hook did not revoke it)")
            .isNotNull();
        Optional<Lease> intruder = c.lock(lockName).tryAcquire();
        intruder.ifPresent(Lease::release);
        assertThat(intruder)
            .withFailMessage(
                "ownership broken: a release that raced a takeover freed the new holder's lock"
                    + " (trial %d, the takeover %d µs into the release, which returned %s): a"
                    + " release that reads the owner and then deletes in a second step frees"
                    + " whoever took the lock in between; check and delete must be one atomic step",
                trial + 1, delay / 1000, released)
            .isEmpty();
        assertThat(fresh.release()).as("ownership broken: the new holder's release").isTrue();
      }
    }
  }

  @Nested
  @DisplayName("Rule 3: expiry")
  class Expiry {
    @Test
    @DisplayName(
        "3.1 MUST: without renewal, a lease never released frees the lock within lease + expiry"
            + " slack + tolerance")
    void rule3_1_unrenewedLeaseExpires() throws Exception {
      String name = name("unrenewed");
      Lease lease = client(expiring()).lock(name).acquire(Duration.ofSeconds(10));
      long start = System.nanoTime();
      Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
      Optional<Lease> next = client().lock(name).tryAcquire(bound.plus(limits().tolerance()));
      long took = System.nanoTime() - start;
      assertThat(next)
          .withFailMessage(
              "expiry broken: a lease of %d ms without renewal still held the lock after %d ms",
              limits().lease().toMillis(), ms(took))
          .isPresent();
      assertThat(ms(took))
          .as("expiry broken: ms until the expired lock was acquired")
          .isLessThanOrEqualTo(bound.toMillis());
      assertThat(lease.isValid()).as("expiry broken: isValid() of the expired lease").isFalse();
    }

    @Test
    @DisplayName(
        "3.2 MUST: a client that vanishes without releasing frees its lock within lease + expiry"
            + " slack")
    void rule3_2_vanishedClientFreesItsLock() throws Exception {
      String name = name("vanished");
      LockClient doomed = client();
      doomed.lock(name).acquire(Duration.ofSeconds(10));
      assertThat(client().lock(name).tryAcquire()).isEmpty();
      long start = System.nanoTime();
      ((Abandonable) doomed).abandon();
      Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
      Optional<Lease> next = client().lock(name).tryAcquire(bound.plus(limits().tolerance()));
      assertThat(next)
          .withFailMessage(
              "expiry broken: a vanished client's lock was still held after %d ms",
              ms(System.nanoTime() - start))
          .isPresent();
      assertThat(ms(System.nanoTime() - start))
          .as("expiry broken: ms until the vanished client's lock was acquired")
          .isLessThanOrEqualTo(bound.toMillis());
    }

    @Test
    @DisplayName(
        "3.3 MUST: a holding process killed with SIGKILL frees its lock within lease + expiry"
            + " slack")
    void rule3_3_killedProcessFreesItsLock() throws Exception {
      requireFeature(Feature.SHARED_ACROSS_PROCESSES, "3.3");
      String name = name("killed");
      Process child = holdInChild(name);
      String line = childLines.get(child);
      assertThat(client().lock(name).tryAcquire())
          .as("the lock while the child process holds it")
          .isEmpty();
      long start = System.nanoTime();
      child.destroyForcibly(); // SIGKILL: no shutdown hook, no release
      assertThat(child.waitFor(10, TimeUnit.SECONDS)).as("child exited after SIGKILL").isTrue();
      Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
      Optional<Lease> next = client().lock(name).tryAcquire(bound.plus(limits().tolerance()));
      assertThat(next)
          .withFailMessage(
              "expiry broken: the lock of a process killed %d ms ago (%s) is still held",
              ms(System.nanoTime() - start), line)
          .isPresent();
      assertThat(ms(System.nanoTime() - start))
          .as("expiry broken: ms until the killed process's lock was acquired")
          .isLessThanOrEqualTo(bound.toMillis());
      if (guarantees().has(Feature.FENCING)) {
        assertThat(next.get().fencingToken())
            .as("fencing broken: token after the killed holder's " + line)
            .isGreaterThan(Long.parseLong(line.substring(5).trim()));
      }
    }

    @Test
    @DisplayName(
        "3.4 MUST: a lease that is not a whole number of seconds ends when it should: nobody gets"
            + " the lock before, and it is free soon after")
    void rule3_4_fractionalLeaseEndsOnTime() throws Exception {
      String name = name("fractional");
      Duration lease =
          limits().lease().multipliedBy(5).dividedBy(4); // 1.25 leases: 1250 ms unscaled
      Duration soon = limits().tolerance().dividedBy(4);
      LockOptions opts = LockOptions.builder().lease(lease).autoRenew(false).build();
      LockClient watcher = client();
      long asked = System.nanoTime();
      Lease held = client(opts).lock(name).acquire(Duration.ofSeconds(10));
      long granted = System.nanoTime();
      Optional<Lease> next =
          watcher
              .lock(name)
              .tryAcquire(lease.plus(limits().tolerance()).plus(limits().tolerance()));
      long got = System.nanoTime();
      assertThat(next)
          .withFailMessage(
              "expiry broken: a lease of %d ms without renewal still held the lock after %d ms",
              lease.toMillis(), ms(got - granted))
          .isPresent();
      assertThat(ms(got - asked))
          .withFailMessage(
              "expiry broken: another client got the lock %d ms after the holder asked for a lease"
                  + " of %d ms: the server ended the lease early (rounded down, such as to whole"
                  + " seconds?)",
              ms(got - asked), lease.toMillis())
          .isGreaterThanOrEqualTo(lease.toMillis() - 15);
      assertThat(ms(got - granted))
          .withFailMessage(
              "expiry broken: a lease of %d ms was free only %d ms after it was granted (bound:"
                  + " lease + %d ms): the server kept it too long (rounded up, or a lease clock"
                  + " that runs late)",
              lease.toMillis(), ms(got - granted), soon.toMillis())
          .isLessThanOrEqualTo(lease.plus(soon).toMillis());
      assertThat(held.isValid()).as("expiry broken: isValid() of the ended lease").isFalse();
    }
  }

  @Nested
  @DisplayName("Rule 4: renewal")
  class Renewal {
    @Test
    @DisplayName(
        "4.1 MUST: auto-renew holds a lock for 3 leases and more; no other acquirer succeeds"
            + " meanwhile")
    void rule4_1_autoRenewHoldsBeyondTheLease() throws Exception {
      requireFeature(Feature.RENEWAL, "4.1");
      String name = name("renewed");
      Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
      long holdFor = limits().lease().multipliedBy(3).plus(limits().lease().dividedBy(2)).toNanos();
      long start = System.nanoTime();
      Optional<Lease> intruder = client().lock(name).tryAcquire(Duration.ofNanos(holdFor));
      assertThat(intruder)
          .withFailMessage(
              "renewal broken: another client acquired a renewed lock after %d ms (lease %d ms)",
              ms(System.nanoTime() - start), limits().lease().toMillis())
          .isEmpty();
      assertThat(lease.isValid()).as("isValid() after 3.5 leases of renewal").isTrue();
      assertThat(lease.release()).as("release() after renewals").isTrue();
    }

    @Test
    @DisplayName(
        "4.2 MUST: a waiter blocked on a renewed lock gets it promptly once it is released")
    void rule4_2_renewedLockReleasesCleanly() throws Exception {
      requireFeature(Feature.RENEWAL, "4.2");
      String name = name("renewed-release");
      Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
      DistributedLock other = client().lock(name);
      CompletableFuture<Lease> waiter = other.acquireAsync(Duration.ofSeconds(60));
      Thread.sleep(limits().lease().multipliedBy(3).dividedBy(2).toMillis()); // let renewals happen
      assertThat(waiter)
          .withFailMessage("renewal broken: a waiter got the lock while it was renewed")
          .isNotDone();
      long released = System.nanoTime();
      assertThat(lease.release()).isTrue();
      Lease next =
          waiter.get(
              limits().tolerance().toMillis() + limits().lease().toMillis(), TimeUnit.MILLISECONDS);
      assertThat(ms(System.nanoTime() - released))
          .as("ms from release to the waiter's grant")
          .isLessThanOrEqualTo(limits().tolerance().toMillis() + limits().lease().toMillis());
      assertThat(next.release()).isTrue();
    }

    @Test
    @DisplayName(
        "4.3 MUST: a renewal extends by the lease: a holder that vanishes after renewing frees the"
            + " lock within lease + expiry slack")
    void rule4_3_renewalExtendsByTheLease() throws Exception {
      requireFeature(Feature.RENEWAL, "4.3");
      String name = name("renew-amount");
      LockClient doomed = client();
      Lease lease = doomed.lock(name).acquire(Duration.ofSeconds(10));
      Thread.sleep(limits().lease().multipliedBy(5).dividedBy(2).toMillis()); // several renewals
      assertThat(lease.isValid())
          .as("renewal broken: isValid() after 2.5 leases of renewal")
          .isTrue();
      ((Abandonable) doomed).abandon();
      long start = System.nanoTime();
      Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
      Optional<Lease> next = client().lock(name).tryAcquire(bound.plus(limits().tolerance()));
      long took = ms(System.nanoTime() - start);
      assertThat(next.isPresent() && took <= bound.toMillis())
          .withFailMessage(
              "renewal broken: a holder that vanished after renewing still held the lock %d ms"
                  + " later (bound: lease + expiry slack + tolerance = %d ms): a renewal must"
                  + " extend the lease by the lease time, counted from the renewal (a unit"
                  + " mix-up?)",
              took, bound.toMillis())
          .isTrue();
    }

    @Test
    @DisplayName(
        "4.4 MUST: a renewal finds the owner changed: the lease is lost as TAKEN (SESSION_LOST if"
            + " the revoke ended its session), and the new holder's lease is not extended")
    void rule4_4_renewalOfATakenOverLeaseIsLost() throws Exception {
      requireFeature(Feature.RENEWAL, "4.4");
      String name = name("renew-taken");
      LockClient c = client();
      Lease first = c.lock(name).acquire(Duration.ofSeconds(10));
      hook("4.4", () -> faults().revoke(name));
      // another lease, of the same client even, takes the lock over: only a per-lease owner check
      // tells them apart
      Lease second =
          c.lock(name, expiring()).acquireAsync(Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
      Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
      LeaseLostException loss;
      try {
        loss = first.lost().toCompletableFuture().get(bound.toMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        throw new AssertionError(
            "renewal broken: a renewed lease whose lock another lease (of the same client) took"
                + " over was not reported lost within "
                + bound.toMillis()
                + " ms: a renewal must check the owner per lease and answer lost");
      }
      assertThat(loss.reason())
          .withFailMessage(
              "renewal broken: a lease another owner took over was reported lost with %s, "
                  + "not TAKEN%s: a renewal that finds another owner must answer lost, not retry",
              loss.reason(),
              revokedAllowed(name, first).size() > 1
                  ? " (nor SESSION_LOST, as a session grant whose session the revoke ended may be)"
                  : "")
          .isIn(revokedAllowed(name, first));
      long start = System.nanoTime();
      Optional<Lease> next =
          client()
              .lock(name)
              .tryAcquire(limits().lease().plus(limits().tolerance()).plus(limits().tolerance()));
      assertThat(next)
          .withFailMessage(
              "renewal broken: the new holder's lease of %d ms without renewal still held the lock "
                  + "after %d ms: the old holder's renewals extended it",
              limits().lease().toMillis(), ms(System.nanoTime() - start))
          .isPresent();
      assertThat(second.isValid()).as("the new holder's lease after its end").isFalse();
    }

    @Test
    @DisplayName(
        "4.5 MUST: a batch of renewals with one lease taken over reports exactly that lease lost"
            + " (and the leases of its session, if the revoke ended it)")
    void rule4_5_batchedRenewalAttributesOutcomes() throws Exception {
      requireFeature(Feature.RENEWAL, "4.5");
      String base = name("renew-batch");
      LockClient c = client();
      List<Lease> leases = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        leases.add(c.lock(base + "/" + i).acquire(Duration.ofSeconds(10)));
      }
      int victim = 7;
      hook("4.5", () -> faults().revoke(base + "/" + victim));
      Lease taker = client(longLease()).lock(base + "/" + victim).acquire(Duration.ofSeconds(10));
      Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
      try {
        leases
            .get(victim)
            .lost()
            .toCompletableFuture()
            .get(bound.toMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        throw new AssertionError(
            "renewal broken: lease "
                + victim
                + " of 20, taken over by another client, was not reported "
                + "lost within "
                + bound.toMillis()
                + " ms while the client renewed all 20 together; lost now: "
                + lostOnes(leases));
      }
      Thread.sleep(limits().lease().toMillis()); // more batches of renewals
      List<Integer> lost = lostOnes(leases);
      LeaseLostException victimLoss = leases.get(victim).lost().toCompletableFuture().getNow(null);
      assertThat(victimLoss.reason())
          .withFailMessage(
              "renewal broken: lease %d of 20, taken over by another client, was reported lost with"
                  + " %s: a renewal that finds another owner must answer lost (TAKEN), not retry",
              victim, victimLoss.reason())
          .isIn(revokedAllowed(base + "/" + victim, leases.get(victim)));
      // a revoke that ended the victim's session (FaultHooks.revoke) takes every lease of that
      // session with it: those may be
      // lost too, as SESSION_LOST, if their locks really were freed; any other loss is
      // misattributed
      List<Integer> wrong = new ArrayList<>();
      for (int i : lost) {
        LeaseLostException loss = leases.get(i).lost().toCompletableFuture().getNow(null);
        boolean sameSession =
            victimLoss.reason() == LeaseLostException.Reason.SESSION_LOST
                && loss.reason() == LeaseLostException.Reason.SESSION_LOST
                && probe.sessionGrant(base + "/" + i, leases.get(i).fencingToken());
        if (i != victim && !sameSession) {
          wrong.add(i);
        }
      }
      assertThat(wrong)
          .withFailMessage(
              "renewal broken: only lease %d of 20 was taken over, but the leases reported lost are"
                  + " %s: the outcomes of a batched renewal were attributed to the wrong leases",
              victim, lost)
          .isEmpty();
      LockClient other = client();
      for (int i = 0; i < 20; i++) {
        if (i == victim) {
          continue;
        }
        Optional<Lease> intruder = other.lock(base + "/" + i).tryAcquire();
        if (lost.contains(i)) {
          intruder.ifPresent(Lease::release);
          assertThat(intruder)
              .withFailMessage(
                  "renewal broken: lease %d of 20 was reported lost (SESSION_LOST, with lease %d's"
                      + " session) but its lock was still held: the session's end was attributed to"
                      + " a lease it did not hold",
                  i, victim)
              .isPresent();
        } else {
          assertThat(intruder)
              .withFailMessage(
                  "renewal broken: lease %d of 20 was not renewed (another client took its lock) "
                      + "while lease %d was taken over",
                  i, victim)
              .isEmpty();
        }
      }
      assertThat(taker.release()).isTrue();
    }
  }

  @Nested
  @DisplayName("Rule 5: fencing")
  class Fencing {
    @Test
    @DisplayName(
        "5.1 MUST: tokens are above zero and strictly increase across successive holders of several"
            + " clients")
    void rule5_1_tokensIncreaseAcrossHolders() throws Exception {
      requireFeature(Feature.FENCING, "5.1");
      String name = name("tokens");
      LockClient[] cs = {client(), client(), client()};
      long last = 0;
      for (int i = 0; i < 30; i++) {
        try (Lease lease = cs[i % cs.length].lock(name).acquire(Duration.ofSeconds(10))) {
          long token = lease.fencingToken();
          if (token <= last) {
            fail(
                "fencing broken: holder "
                    + (i + 1)
                    + " got token "
                    + token
                    + " after token "
                    + last);
          }
          last = token;
        }
      }
    }

    @Test
    @DisplayName("5.2 MUST: a holder that takes over an expired lease gets a greater token")
    void rule5_2_tokensIncreaseAfterExpiryTakeover() throws Exception {
      requireFeature(Feature.FENCING, "5.2");
      String name = name("takeover");
      Lease stale = client(expiring()).lock(name).acquire(Duration.ofSeconds(10));
      Lease fresh =
          client()
              .lock(name)
              .acquire(limits().lease().plus(limits().expirySlack()).plus(limits().tolerance()));
      assertThat(fresh.fencingToken())
          .withFailMessage(
              "fencing broken: token %d after an expiry takeover is not above the stale holder's"
                  + " %d",
              fresh.fencingToken(), stale.fencingToken())
          .isGreaterThan(stale.fencingToken());
      assertThat(stale.fencingToken()).as("token").isPositive();
    }
  }

  @Nested
  @DisplayName("Rule 6: timeouts")
  class Timeouts {
    @Test
    @DisplayName("6.1 MUST: tryAcquire() of a held lock returns empty without waiting")
    void rule6_1_tryAcquireDoesNotWait() throws Exception {
      String name = name("try");
      client().lock(name).acquire(Duration.ofSeconds(10));
      long start = System.nanoTime();
      assertThat(client().lock(name).tryAcquire()).isEmpty();
      assertThat(ms(System.nanoTime() - start))
          .as("ms tryAcquire() took")
          .isLessThanOrEqualTo(limits().tolerance().toMillis());
    }

    @Test
    @DisplayName(
        "6.2 MUST: tryAcquire(d) of a held lock returns empty after d, within d + tolerance")
    void rule6_2_tryAcquireWithTimeoutKeepsTime() throws Exception {
      String name = name("try-timeout");
      client().lock(name).acquire(Duration.ofSeconds(10));
      Duration d = Duration.ofMillis(300);
      long start = System.nanoTime();
      assertThat(client().lock(name).tryAcquire(d)).isEmpty();
      long took = ms(System.nanoTime() - start);
      assertThat(took)
          .as("ms tryAcquire(300ms) took")
          .isGreaterThanOrEqualTo(d.toMillis() - 5)
          .isLessThanOrEqualTo(d.plus(limits().tolerance()).toMillis());
    }

    @Test
    @DisplayName("6.3 MUST: acquire(d) of a held lock throws LockTimeoutException naming the lock")
    void rule6_3_acquireWithTimeoutThrows() throws Exception {
      String name = name("acquire-timeout");
      client().lock(name).acquire(Duration.ofSeconds(10));
      DistributedLock lock = client().lock(name);
      assertThatThrownBy(() -> lock.acquire(Duration.ofMillis(100)))
          .isInstanceOf(LockTimeoutException.class)
          .hasMessageContaining(name);
    }

    @Test
    @DisplayName(
        "6.4 MUST: a waiter that timed out leaves nothing behind: the next acquirer gets the lock"
            + " at once")
    void rule6_4_timedOutWaiterLeavesNothing() throws Exception {
      String name = name("timeout-leftovers");
      Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
      LockClient waiters = client();
      for (int i = 0; i < 3; i++) {
        assertThat(waiters.lock(name).tryAcquire(Duration.ofMillis(50))).isEmpty();
      }
      assertThat(lease.release()).isTrue();
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage(
              "a waiter that timed out left something behind: the free lock could not be acquired"
                  + " at once")
          .isPresent();
    }
  }

  @Nested
  @DisplayName("Rule 7: interrupts")
  class Interrupts {
    @Test
    @DisplayName(
        "7.1 MUST: an interrupted waiter throws InterruptedException promptly and leaves nothing"
            + " behind")
    void rule7_1_interruptedWaiterWithdraws() throws Exception {
      String name = name("interrupted");
      Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
      DistributedLock lock = client().lock(name);
      AtomicReference<Throwable> outcome = new AtomicReference<>();
      CountDownLatch done = new CountDownLatch(1);
      Thread waiter =
          new Thread(
              () -> {
                try {
                  lock.acquire(Duration.ofSeconds(60));
                  outcome.set(
                      new AssertionError("acquire returned a lease although it was interrupted"));
                } catch (Throwable e) {
                  outcome.set(e);
                } finally {
                  done.countDown();
                }
              });
      int polled = probe.polls(name);
      waiter.start();
      awaitQueued(waiter, name, polled, "the waiter blocks");
      long start = System.nanoTime();
      waiter.interrupt();
      assertThat(done.await(limits().tolerance().toMillis(), TimeUnit.MILLISECONDS))
          .withFailMessage(
              "an interrupted waiter kept waiting for %d ms", ms(System.nanoTime() - start))
          .isTrue();
      assertThat(outcome.get())
          .as("what the interrupted acquire threw")
          .isInstanceOf(InterruptedException.class);
      assertThat(lease.release()).isTrue();
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage(
              "an interrupted waiter left something behind: the free lock could not be acquired at"
                  + " once")
          .isPresent();
    }

    @Test
    @DisplayName(
        "7.2 MUST: a thread already interrupted gets InterruptedException at once and takes"
            + " nothing")
    void rule7_2_alreadyInterruptedThread() throws Exception {
      String name = name("pre-interrupted");
      DistributedLock lock = client().lock(name);
      Thread.currentThread().interrupt();
      try {
        assertThatThrownBy(() -> lock.acquire(Duration.ofSeconds(5)))
            .isInstanceOf(InterruptedException.class);
      } finally {
        Thread.interrupted();
      }
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage("an interrupted acquire took the lock")
          .isPresent();
    }
  }

  @Nested
  @DisplayName("Rule 8: cancellation and asynchronous acquire")
  class Cancellation {
    @Test
    @DisplayName(
        "8.1 MUST: cancelling acquireAsync withdraws the waiter; the next acquirer gets the lock at"
            + " once")
    void rule8_1_cancelWithdraws() throws Exception {
      String name = name("cancelled");
      Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
      CompletableFuture<Lease> future = client().lock(name).acquireAsync(Duration.ofSeconds(60));
      Thread.sleep(50); // let it start waiting: cancellation must also work mid-wait
      assertThat(future.cancel(true)).isTrue();
      assertThatThrownBy(future::join).isInstanceOf(CancellationException.class);
      assertThat(lease.release()).isTrue();
      // the cancelled waiter withdraws on its own thread, so allow it the tolerance, no more
      long start = System.nanoTime();
      assertThat(client().lock(name).tryAcquire(limits().tolerance()))
          .withFailMessage("a cancelled waiter left something behind or took the lock")
          .isPresent();
      assertThat(ms(System.nanoTime() - start))
          .as("ms until the lock was free after the cancelled waiter withdrew")
          .isLessThan(limits().tolerance().toMillis());
    }

    @Test
    @DisplayName(
        "8.2 MUST: acquireAsync completes with a lease on release, and with LockTimeoutException on"
            + " timeout")
    void rule8_2_asyncCompletes() throws Exception {
      String name = name("async");
      Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
      CompletableFuture<Lease> timesOut = client().lock(name).acquireAsync(Duration.ofMillis(100));
      assertThatThrownBy(() -> timesOut.get(10, TimeUnit.SECONDS))
          .hasCauseInstanceOf(LockTimeoutException.class);
      CompletableFuture<Lease> waits = client().lock(name).acquireAsync(Duration.ofSeconds(30));
      assertThat(lease.release()).isTrue();
      Lease next =
          waits.get(limits().tolerance().plus(limits().lease()).toMillis(), TimeUnit.MILLISECONDS);
      assertThat(next.isValid()).isTrue();
      assertThat(next.release()).isTrue();
    }
  }

  @Nested
  @DisplayName("Rule 9: reentrancy")
  class Reentrancy {
    @Test
    @DisplayName(
        "9.1 MUST: the holding thread acquiring again gets the same token; the lock is freed by the"
            + " last release only")
    void rule9_1_sameThreadSameLease() throws Exception {
      requireFeature(Feature.REENTRANCY, "9.1");
      String name = name("reentrant");
      DistributedLock lock = client().lock(name);
      Lease outer = lock.acquire(Duration.ofSeconds(10));
      Lease inner = lock.acquire(Duration.ofSeconds(1));
      assertThat(inner.fencingToken())
          .as("token of the reentrant acquire")
          .isEqualTo(outer.fencingToken());
      assertThat(inner.release()).as("release of the inner holding").isTrue();
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage("releasing the inner holding freed the lock")
          .isEmpty();
      assertThat(outer.release()).as("release of the outer holding").isTrue();
      assertThat(client().lock(name).tryAcquire()).as("after the last release").isPresent();
    }

    @Test
    @DisplayName(
        "9.2 MUST: asLock() is reentrant per thread; other threads cannot take it meanwhile")
    void rule9_2_lockViewIsReentrant() throws Exception {
      String name = name("lock-view");
      Lock view = client(renewing().toBuilder().reentrant(false).build()).lock(name).asLock();
      view.lock();
      assertThat(view.tryLock()).as("tryLock() by the holding thread").isTrue();
      AtomicReference<Boolean> otherGot = new AtomicReference<>();
      Thread other = new Thread(() -> otherGot.set(view.tryLock()));
      other.start();
      other.join();
      assertThat(otherGot.get()).as("tryLock() by another thread").isFalse();
      view.unlock();
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage("the first unlock() of two freed the lock")
          .isEmpty();
      view.unlock();
      assertThatThrownBy(view::unlock).isInstanceOf(IllegalMonitorStateException.class);
      assertThat(client().lock(name).tryAcquire()).as("after the last unlock()").isPresent();
      assertThatThrownBy(view::newCondition).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    @DisplayName("9.3 MUST: with reentrancy off, the holding thread cannot acquire again")
    void rule9_3_nonReentrantBlocksItsOwnThread() throws Exception {
      String name = name("not-reentrant");
      DistributedLock lock = client().lock(name, renewing().toBuilder().reentrant(false).build());
      Lease lease = lock.acquire(Duration.ofSeconds(10));
      assertThat(lock.tryAcquire())
          .as("a second acquire by the same thread, reentrancy off")
          .isEmpty();
      assertThat(lease.release()).isTrue();
    }
  }

  @Nested
  @DisplayName("Rule 10: FIFO fairness")
  class Fairness {
    /**
     * Queues waiters one after another, each parked before the next starts; each records its index
     * when granted.
     */
    private List<Thread> queue(String name, List<DistributedLock> locks, List<Integer> order)
        throws InterruptedException {
      List<Thread> waiters = new ArrayList<>();
      for (int i = 0; i < locks.size(); i++) {
        int me = i;
        DistributedLock lock = locks.get(i);
        int polled = probe.polls(name);
        Thread t =
            background(
                "fifo-" + i,
                () -> {
                  try (Lease l = lock.acquire(Duration.ofSeconds(60))) {
                    order.add(me);
                  }
                });
        awaitQueued(t, name, polled, "waiter " + i + " queues");
        waiters.add(t);
      }
      return waiters;
    }

    private void joinAll(List<Thread> waiters) throws InterruptedException {
      for (Thread t : waiters) {
        t.join(TimeUnit.SECONDS.toMillis(30));
      }
    }

    @Test
    @DisplayName("10.1 MUST: twelve waiters acquire in the order they started waiting")
    void rule10_1_firstComeFirstServed() throws Exception {
      requireFeature(Feature.FIFO_FAIRNESS, "10.1");
      String name = name("fifo");
      Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
      List<DistributedLock> locks = new ArrayList<>();
      for (int i = 0; i < 12; i++) {
        locks.add(client().lock(name));
      }
      List<Integer> order = Collections.synchronizedList(new ArrayList<>());
      List<Thread> waiters = queue(name, locks, order);
      assertThat(lease.release()).isTrue();
      joinAll(waiters);
      assertThat(order)
          .withFailMessage(
              "FIFO broken: waiters that queued in order 0..11 acquired in order %s "
                  + "(a queue ordered by unpadded numbers puts 10 before 9)",
              order)
          .containsExactly(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    }

    @Test
    @DisplayName("10.2 MUST: a waiter that polls again while it waits keeps its place")
    void rule10_2_repollingKeepsItsPlace() throws Exception {
      requireFeature(Feature.FIFO_FAIRNESS, "10.2");
      String name = name("fifo-repoll");
      Lease lease = client(longLease()).lock(name).acquire(Duration.ofSeconds(10));
      List<DistributedLock> locks = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        // waiters 0 and 2 poll again every 20 ms, at the head of the queue and in its middle
        locks.add((i % 2 == 0 ? client(renewing(), Duration.ofMillis(20)) : client()).lock(name));
      }
      List<Integer> order = Collections.synchronizedList(new ArrayList<>());
      List<Thread> waiters = queue(name, locks, order);
      int polled = probe.polls(name);
      await(
          Duration.ofSeconds(10),
          "the waiters poll again ten times",
          () -> probe.polls(name) >= polled + 10);
      assertThat(lease.release()).isTrue();
      joinAll(waiters);
      assertThat(order)
          .withFailMessage(
              "FIFO broken: waiters 0 and 2 polled again while they waited and lost their place: "
                  + "waiters that queued in order [0, 1, 2, 3] acquired in order %s",
              order)
          .containsExactly(0, 1, 2, 3);
    }

    @Test
    @DisplayName("10.3 MUST: a newcomer never takes a just-released lock ahead of a queued waiter")
    void rule10_3_noBarging() throws Exception {
      requireFeature(Feature.FIFO_FAIRNESS, "10.3");
      String name = name("fifo-barging");
      LockClient holder = client();
      DistributedLock newcomer = client().lock(name);
      DistributedLock queued = client().lock(name);
      for (int trial = 0; trial < 3; trial++) {
        Lease lease = holder.lock(name).acquire(Duration.ofSeconds(10));
        int polled = probe.polls(name);
        CompletableFuture<Lease> waiter =
            queued.acquireAsync(Duration.ofSeconds(60)); // keeps what it gets
        await(Duration.ofSeconds(10), "the waiter queues", () -> probe.polls(name) > polled);
        // hold the woken waiter's next poll until the newcomer has asked, so the newcomer asks
        // first on a loaded machine too: only the queue can then keep the lock for the waiter
        Thread tester = Thread.currentThread();
        CountDownLatch newcomerAsked = new CountDownLatch(1);
        probe.onPoll(
            n -> {
              if (n.equals(name) && Thread.currentThread() != tester) {
                try {
                  newcomerAsked.await(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
            });
        Optional<Lease> barged;
        try {
          assertThat(lease.release()).isTrue();
          barged = newcomer.tryAcquire();
        } finally {
          newcomerAsked.countDown();
          probe.onPoll(null);
        }
        barged.ifPresent(Lease::release);
        assertThat(barged)
            .withFailMessage(
                "FIFO broken: a newcomer's tryAcquire() took the lock the moment it was released, "
                    + "ahead of a waiter queued for it (barging; trial %d)",
                trial + 1)
            .isEmpty();
        Lease next = waiter.get(limits().tolerance().toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.release()).as("FIFO broken: the queued waiter's release").isTrue();
      }
    }

    @Test
    @DisplayName("10.4 MUST: a waiter that gives up in the middle of the queue leaves it")
    void rule10_4_withdrawnWaiterLeavesTheQueue() throws Exception {
      requireFeature(Feature.FIFO_FAIRNESS, "10.4");
      String name = name("fifo-withdrawn");
      Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
      List<Integer> order = Collections.synchronizedList(new ArrayList<>());
      List<Thread> first = queue(name, List.of(client().lock(name)), order);
      int polled = probe.polls(name);
      CompletableFuture<Lease> middle = client().lock(name).acquireAsync(Duration.ofSeconds(60));
      await(Duration.ofSeconds(10), "the middle waiter queues", () -> probe.polls(name) > polled);
      AtomicLong lastGrantedAt = new AtomicLong();
      DistributedLock lastLock = client().lock(name);
      int polledBeforeLast = probe.polls(name);
      Thread last =
          background(
              "fifo-last",
              () -> {
                try (Lease l = lastLock.acquire(Duration.ofSeconds(60))) {
                  lastGrantedAt.set(System.nanoTime());
                  order.add(2);
                }
              });
      awaitQueued(last, name, polledBeforeLast, "the last waiter queues");
      int withdrawn = probe.abandons(name);
      assertThat(middle.cancel(true)).isTrue();
      await(
          Duration.ofSeconds(10),
          "the middle waiter withdraws",
          () -> probe.abandons(name) > withdrawn);
      long released = System.nanoTime();
      assertThat(lease.release()).isTrue();
      joinAll(first);
      last.join(limits().tolerance().multipliedBy(2).toMillis());
      assertThat(
              lastGrantedAt.get() != 0
                  && ms(lastGrantedAt.get() - released) <= limits().tolerance().toMillis())
          .withFailMessage(
              "FIFO broken: a waiter that gave up in the middle of the queue still stood in line:"
                  + " the waiter behind it %s",
              lastGrantedAt.get() == 0
                  ? "never got the lock"
                  : "got the lock only "
                      + ms(lastGrantedAt.get() - released)
                      + " ms after the release")
          .isTrue();
      assertThat(order).as("FIFO broken: grant order").containsExactly(0, 2);
    }
  }

  @Nested
  @DisplayName("Rule 11: notified wake-up")
  class WakeUp {
    @Test
    @DisplayName(
        "11.1 MUST: a waiter in another client gets a released lock within the wake-up bound"
            + " (median of 10, released at random moments)")
    void rule11_1_waiterIsWokenByTheRelease() throws Exception {
      requireFeature(Feature.NOTIFIED_WAKEUP, "11.1");
      String name = name("wake");
      LockClient holderClient = client();
      LockClient waiterClient = client();
      Random random = new Random();
      List<Long> handOffs = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        Lease lease = holderClient.lock(name).acquire(Duration.ofSeconds(10));
        AtomicReference<Long> grantedAt = new AtomicReference<>();
        DistributedLock lock = waiterClient.lock(name);
        int polled = probe.polls(name);
        Thread waiter =
            background(
                "wake-" + i,
                () -> {
                  try (Lease l = lock.acquire(Duration.ofSeconds(30))) {
                    grantedAt.set(System.nanoTime());
                  }
                });
        awaitQueued(waiter, name, polled, "the waiter blocks");
        Thread.sleep(
            random.nextInt(
                100)); // a random phase: a polling loop's hand-off is then half its period on
        // average
        long releasedAt = System.nanoTime();
        assertThat(lease.release()).isTrue();
        waiter.join(TimeUnit.SECONDS.toMillis(30));
        assertThat(grantedAt.get())
            .as("notified wake-up broken: hand-off " + i + " happened")
            .isNotNull();
        handOffs.add(grantedAt.get() - releasedAt);
        if (handOffs.stream().filter(h -> ms(h) > limits().wakeUp().toMillis()).count() > 5) {
          break; // the median is already over the bound
        }
      }
      Collections.sort(handOffs);
      long median = ms(handOffs.get(handOffs.size() / 2));
      assertThat(median)
          .withFailMessage(
              "notified wake-up broken: median hand-off from release to the waiter's grant was %d"
                  + " ms (bound %d ms); all hand-offs in ms: %s",
              median,
              limits().wakeUp().toMillis(),
              handOffs.stream().map(n -> ms(n)).collect(Collectors.toList()))
          .isLessThanOrEqualTo(limits().wakeUp().toMillis());
    }

    @Test
    @DisplayName(
        "11.2 MUST: a waiter sleeps until it is woken: while the lock stays held it polls about"
            + " once per recheck interval, not in a loop")
    void rule11_2_waiterDoesNotPoll() throws Exception {
      requireFeature(Feature.NOTIFIED_WAKEUP, "11.2");
      String name = name("no-polling");
      Lease lease = client(longLease()).lock(name).acquire(Duration.ofSeconds(10));
      LockClient waiterClient = client();
      Duration recheck = waiterClient.config().recheck();
      int before = probe.polls(name);
      DistributedLock lock = waiterClient.lock(name);
      Thread waiter =
          background(
              "patient",
              () -> {
                try (Lease l = lock.acquire(Duration.ofSeconds(60))) {
                  l.isValid();
                }
              });
      awaitQueued(waiter, name, before, "the waiter blocks");
      Duration watched = limits().tolerance().multipliedBy(2);
      Thread.sleep(watched.toMillis());
      int polls = probe.polls(name) - before;
      // the first poll, a few reads again as subscriptions are confirmed (one per server, for
      // Redlock), one per recheck
      long allowed = 6 + watched.toMillis() / Math.max(1, recheck.toMillis());
      assertThat(lease.release()).isTrue();
      waiter.join(TimeUnit.SECONDS.toMillis(30));
      assertThat((long) polls)
          .withFailMessage(
              "notified wake-up broken: a waiter polled %d times in %d ms while the lock stayed"
                  + " held (at most %d: a first poll, a few more as its subscriptions are"
                  + " confirmed, then one per recheck interval of %d ms): a waiter must sleep until"
                  + " a release wakes it, not poll in a loop",
              polls, watched.toMillis(), allowed, recheck.toMillis())
          .isLessThanOrEqualTo(allowed);
    }

    @Test
    @DisplayName(
        "11.3 MUST: a release that lands while the waiter is polling still wakes it (no lost"
            + " wake-up)")
    void rule11_3_noLostWakeUp() throws Exception {
      requireFeature(Feature.NOTIFIED_WAKEUP, "11.3");
      String base = name("lost-wakeup");
      LockClient holderClient = client(longLease());
      LockClient waiterClient =
          client(
              renewing(), Duration.ofMinutes(1)); // only a wake-up can hand the lock over in time
      Duration bound = limits().tolerance();
      Random random = new Random();
      for (int trial = 0; trial < 30; trial++) {
        String lockName = base + "/" + trial;
        Lease lease = holderClient.lock(lockName).acquire(Duration.ofSeconds(10));
        CountDownLatch polling = new CountDownLatch(1);
        long window = Math.max(50_000, 2 * probe.lastPollNanos());
        long delay = (long) (random.nextDouble() * window);
        AtomicLong releasedAt = new AtomicLong();
        probe.onPoll(
            n -> {
              if (n.equals(lockName)) {
                polling.countDown();
              }
            });
        Thread releaser =
            background(
                "releaser-" + trial,
                () -> {
                  polling.await(10, TimeUnit.SECONDS);
                  spin(delay); // somewhere inside the waiter's poll: between its read of the lock
                  // and its subscription
                  lease.release();
                  releasedAt.set(System.nanoTime());
                });
        Optional<Lease> got = waiterClient.lock(lockName).tryAcquire(bound);
        long gotAt = System.nanoTime();
        probe.onPoll(null);
        releaser.join(TimeUnit.SECONDS.toMillis(10));
        got.ifPresent(Lease::release);
        // the core polls once more at the deadline, so judge by when the lock arrived, not only
        // whether
        long late = releasedAt.get() == 0 ? Long.MAX_VALUE : ms(gotAt - releasedAt.get());
        assertThat(got.isPresent() && late <= bound.toMillis() / 2)
            .withFailMessage(
                "notified wake-up broken: lost wake-up: the lock was released %d µs into the"
                    + " waiter's poll and the waiter %s (trial %d): a waiter must subscribe before"
                    + " it reads the lock, or read it again once subscribed",
                delay / 1000,
                got.isPresent()
                    ? "got it only " + late + " ms later, by its last poll at the deadline"
                    : "never got it",
                trial + 1)
            .isTrue();
      }
    }
  }

  @Nested
  @DisplayName("Rule 12: bad input")
  class BadInput {
    @Test
    @DisplayName(
        "12.1 MUST: bad lock names are rejected with a message naming `name`, and nothing is left"
            + " behind")
    void rule12_1_badNames() throws Exception {
      LockClient c = client();
      assertThatThrownBy(() -> c.lock(null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("`name`");
      assertThatThrownBy(() -> c.lock(""))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`name`");
      assertThatThrownBy(() -> c.lock("x".repeat(256)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`name`")
          .hasMessageContaining("256");
      assertThatThrownBy(() -> c.lock("a\u0000b"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`name`")
          .hasMessageContaining("U+0000");
      assertThatThrownBy(() -> c.lock("line\nbreak"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`name`");
      assertThatThrownBy(() -> c.lock("ok", null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("`options`");
      String name = name("after-bad-input");
      try (Lease lease = c.lock(name).acquire(Duration.ofSeconds(10))) {
        assertThat(lease.isValid()).as("the client still works after bad input").isTrue();
      }
    }

    @Test
    @DisplayName(
        "12.2 MUST: null and negative timeouts are rejected with a message naming `timeout`, and"
            + " nothing is left behind")
    void rule12_2_badTimeouts() throws Exception {
      String name = name("bad-timeouts");
      DistributedLock lock = client().lock(name);
      Duration negative = Duration.ofSeconds(-5);
      assertThatThrownBy(() -> lock.acquire(null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("`timeout`");
      assertThatThrownBy(() -> lock.acquire(negative))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`timeout`")
          .hasMessageContaining("-5s");
      assertThatThrownBy(() -> lock.tryAcquire(null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("`timeout`");
      assertThatThrownBy(() -> lock.tryAcquire(negative))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`timeout`");
      assertThatThrownBy(() -> lock.acquireAsync(null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("`timeout`");
      assertThatThrownBy(() -> lock.acquireAsync(negative))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`timeout`");
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage("a rejected call left the lock taken")
          .isPresent();
    }

    @Test
    @DisplayName("12.3 MUST: absurd leases are rejected with a message naming `lease`")
    void rule12_3_badLeases() {
      assertThatThrownBy(() -> LockOptions.builder().lease(null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("`lease`");
      assertThatThrownBy(() -> LockOptions.builder().lease(Duration.ZERO))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`lease`");
      assertThatThrownBy(() -> LockOptions.builder().lease(Duration.ofSeconds(-5)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`lease`")
          .hasMessageContaining("-5s");
      assertThatThrownBy(() -> LockOptions.builder().lease(Duration.ofDays(365)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`lease`");
    }

    @Test
    @DisplayName("12.4 MUST: any other Unicode name is a lock of its own, stored as given")
    void rule12_4_unicodeNamesAreDistinctLocks() throws Exception {
      String base = name("unicode");
      List<String> names =
          List.of(
              base + " spaces and / slashes",
              base + "'; DROP TABLE locks; --",
              base + "\"quoted\" %s %n",
              base + " ключ 鍵 🔒",
              base + "*?[]{}",
              (base + "-max-").concat("y".repeat(255 - base.length() - 5)));
      LockClient c = client();
      List<Lease> leases = new ArrayList<>();
      for (String n : names) {
        Optional<Lease> l = c.lock(n).tryAcquire();
        assertThat(l).as("lock named '%s' is free and distinct from the others", n).isPresent();
        assertThat(l.get().lockName()).isEqualTo(n);
        leases.add(l.get());
      }
      for (String n : names) {
        assertThat(client().lock(n).tryAcquire()).as("lock named '%s' is held", n).isEmpty();
      }
      for (Lease l : leases) {
        assertThat(l.release()).as("release of '%s'", l.lockName()).isTrue();
      }
    }

    @Test
    @DisplayName("12.5 MUST: a closed client refuses new locks; close is idempotent")
    void rule12_5_closedClient() {
      LockClient c = client();
      c.close();
      c.close();
      assertThatThrownBy(() -> c.lock(name("closed")))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("closed");
    }

    @Test
    @DisplayName(
        "12.6 MUST: names that differ only by case, a trailing space, Unicode normal form, one"
            + " non-Latin letter or past the 191st character are distinct locks")
    void rule12_6_nearlyEqualNamesAreDistinct() throws Exception {
      String base = name("near");
      String pad191 = pad(base + "-191-", 191);
      String pad200 = pad(base + "-200-", 200);
      String pad254 = pad(base + "-254-", 254);
      String[][] pairs = {
        {base + "-Case", base + "-case", "case (a case-insensitive collation)"},
        {
          base + "-space", base + "-space ", "a trailing space (a PAD SPACE collation, or trimming)"
        },
        {
          base + "-\u00e9",
          base + "-e\u0301",
          "Unicode normal form (NFC \u00e9 against NFD e + U+0301)"
        },
        {
          base + "-\u044f",
          base + "-\u0436",
          "one Cyrillic letter (a column that stores non-Latin-1 text as '?')"
        },
        {pad191 + "a", pad191 + "b", "the 192nd character (a VARCHAR(191) column)"},
        {pad200 + "a", pad200 + "b", "the 201st character (a name cut to 200 characters)"},
        {pad254 + "a", pad254 + "b", "the 255th character (a name cut short of 255 characters)"}
      };
      LockClient first = client();
      LockClient second = client();
      for (String[] pair : pairs) {
        Optional<Lease> a = first.lock(pair[0]).tryAcquire();
        assertThat(a).as("names broken: lock '%s' is free", pair[0]).isPresent();
        Optional<Lease> b = second.lock(pair[1]).tryAcquire();
        b.ifPresent(Lease::release);
        a.get().release();
        assertThat(b)
            .withFailMessage(
                "names broken: two names that differ only by %s are one lock on this backend ('%s'"
                    + " is held by the holder of '%s'): a name must be stored exactly,"
                    + " case-sensitive, as given, in full",
                pair[2], pair[1], pair[0])
            .isPresent();
        assertThat(b.get().lockName()).as("names broken: Lease.lockName()").isEqualTo(pair[1]);
      }
    }
  }

  @Nested
  @DisplayName("Rule 13: many locks")
  class ManyLocks {
    @Test
    @DisplayName(
        "13.1 MUST: 1,000 locks held at once by one client stay held through renewals and are all"
            + " released cleanly")
    void rule13_1_thousandLocks() throws Exception {
      String base = name("many");
      LockClient c = client();
      List<Lease> leases = new ArrayList<>();
      for (int i = 0; i < 1000; i++) {
        Optional<Lease> l = c.lock(base + "/" + i).tryAcquire(Duration.ofSeconds(10));
        assertThat(l).as("lock %d of 1000", i).isPresent();
        leases.add(l.get());
      }
      if (c.guarantees().has(Feature.RENEWAL)) {
        Thread.sleep(
            limits()
                .lease()
                .multipliedBy(3)
                .dividedBy(2)
                .toMillis()); // past one lease: renewals must keep them
      }
      long invalid = leases.stream().filter(l -> !l.isValid()).count();
      assertThat(invalid)
          .withFailMessage(
              "%d of 1000 leases were no longer valid after 1.5 leases of renewal", invalid)
          .isZero();
      LockClient other = client();
      assertThat(other.lock(base + "/0").tryAcquire()).as("lock 0 while held").isEmpty();
      assertThat(other.lock(base + "/999").tryAcquire()).as("lock 999 while held").isEmpty();
      long releasedFalse = leases.stream().filter(l -> !l.release()).count();
      assertThat(releasedFalse)
          .withFailMessage("%d of 1000 releases reported the lease no longer held", releasedFalse)
          .isZero();
      for (int i = 0; i < 1000; i += 111) {
        assertThat(other.lock(base + "/" + i).tryAcquire())
            .as("lock %d after release", i)
            .isPresent();
      }
    }
  }

  @Nested
  @DisplayName("Rule 14: loss detection")
  class LossDetection {
    @Test
    @DisplayName("14.1 MUST: a lease that runs out without renewal signals lost() with EXPIRED")
    void rule14_1_expiryIsSignalled() throws Exception {
      requireFeature(Feature.LOSS_DETECTION, "14.1");
      Lease lease = client(expiring()).lock(name("expiry-signal")).acquire(Duration.ofSeconds(10));
      LeaseLostException loss =
          lease
              .lost()
              .toCompletableFuture()
              .get(limits().lease().plus(limits().tolerance()).toMillis(), TimeUnit.MILLISECONDS);
      assertThat(loss.reason())
          .as("loss detection broken: the reason an unrenewed lease was lost")
          .isEqualTo(LeaseLostException.Reason.EXPIRED);
      assertThat(lease.isValid())
          .as("loss detection broken: isValid() of an expired lease")
          .isFalse();
      assertThat(lease.release())
          .as("loss detection broken: release() of an expired lease")
          .isFalse();
    }

    @Test
    @DisplayName(
        "14.2 MUST: when the server forgets a renewed lock, the holder is told within lease +"
            + " expiry slack + tolerance")
    void rule14_2_revokedLockIsSignalled() throws Exception {
      requireFeature(Feature.LOSS_DETECTION, "14.2");
      String name = name("revoked");
      Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
      hook("14.2", () -> faults().revoke(name));
      LeaseLostException loss;
      try {
        loss =
            lease
                .lost()
                .toCompletableFuture()
                .get(
                    limits()
                        .lease()
                        .plus(limits().expirySlack())
                        .plus(limits().tolerance())
                        .toMillis(),
                    TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        throw new AssertionError(
            "loss detection broken: a revoked lock was not reported lost within lease + expiry"
                + " slack + tolerance");
      }
      assertThat(loss.lockName())
          .as("loss detection broken: the lost lease's lock name")
          .isEqualTo(name);
      assertThat(lease.isValid())
          .as("loss detection broken: isValid() of a revoked lease")
          .isFalse();
      assertThat(lease.release())
          .as("loss detection broken: release() of a revoked lease")
          .isFalse();
    }

    @Test
    @DisplayName(
        "14.3 MUST: a lease taken just before the server became unreachable is reported lost within"
            + " lease + expiry slack + tolerance")
    void rule14_3_unreachableServerIsSignalled() throws Exception {
      requireFeature(Feature.LOSS_DETECTION, "14.3");
      Lease lease = client().lock(name("unreachable")).acquire(Duration.ofSeconds(10));
      hook("14.3", () -> faults().pauseServer());
      long paused = System.nanoTime();
      try {
        LeaseLostException loss =
            lease
                .lost()
                .toCompletableFuture()
                .get(
                    limits()
                        .lease()
                        .plus(limits().expirySlack())
                        .plus(limits().tolerance())
                        .toMillis(),
                    TimeUnit.MILLISECONDS);
        assertThat(loss.reason())
            .as("loss detection broken: the reason a lease was lost to an unreachable server")
            .isIn(LeaseLostException.Reason.RENEWAL_FAILED, LeaseLostException.Reason.SESSION_LOST);
        assertThat(lease.isValid())
            .as("loss detection broken: isValid() of a lease lost to an unreachable server")
            .isFalse();
      } catch (TimeoutException e) {
        throw new AssertionError(
            "loss detection broken: the server was unreachable for "
                + ms(System.nanoTime() - paused)
                + " ms from just after the grant and the lease was not reported lost (a"
                + " session-held grant needs a bound from the start: Poll.grantedForSession(token,"
                + " validUntilNanos, state))");
      } finally {
        faults().resumeServer();
      }
    }
  }

  @Nested
  @DisplayName("Rule 15: closing")
  class Closing {
    @Test
    @DisplayName(
        "15.1 MUST: closing a client releases its locks at once and signals lost() with"
            + " CLIENT_CLOSED")
    void rule15_1_closeReleases() throws Exception {
      String name = name("close-releases");
      LockClient c = client();
      Lease lease = c.lock(name).acquire(Duration.ofSeconds(10));
      c.close();
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage("closing broken: a closed client's lock was still held")
          .isPresent();
      LeaseLostException loss = lease.lost().toCompletableFuture().get(10, TimeUnit.SECONDS);
      assertThat(loss.reason())
          .as("closing broken: the reason a closed client's lease ended")
          .isEqualTo(LeaseLostException.Reason.CLIENT_CLOSED);
      assertThat(lease.release()).as("closing broken: release() after close").isFalse();
    }

    @Test
    @DisplayName(
        "15.2 MUST: a waiter blocked in acquire() fails with LockException when its client closes")
    void rule15_2_closeStopsWaiters() throws Exception {
      String name = name("close-waiters");
      client().lock(name).acquire(Duration.ofSeconds(10));
      LockClient c = client();
      AtomicReference<Throwable> outcome = new AtomicReference<>();
      Thread waiter =
          new Thread(
              () -> {
                try {
                  c.lock(name).acquire();
                } catch (Throwable e) {
                  outcome.set(e);
                }
              });
      int polled = probe.polls(name);
      waiter.start();
      awaitQueued(waiter, name, polled, "the waiter blocks");
      c.close();
      waiter.join(TimeUnit.SECONDS.toMillis(10));
      assertThat(waiter.isAlive()).as("waiter still blocked after its client closed").isFalse();
      assertThat(outcome.get()).isInstanceOf(LockException.class).hasMessageContaining("closed");
    }
  }

  @Nested
  @DisplayName("Rule 16: state reads")
  class StateReads {
    @Test
    @DisplayName(
        "16.1 MUST: state() of a lock never taken, and of a released lock, is free; of a held lock,"
            + " held with the holder's token")
    void rule16_1_stateFollowsTheHolder() throws Exception {
      requireFeature(Feature.STATE_READS, "16.1");
      String name = name("state");
      LockClient holder = client();
      LockClient observer = client();
      DistributedLock seen = observer.lock(name);
      assertThat(seen.state())
          .withFailMessage("state reads broken: a lock never taken read as %s", seen.state())
          .isEqualTo(LockState.free());
      Lease lease = holder.lock(name).acquire(Duration.ofSeconds(10));
      LockState held = seen.state();
      assertThat(held.isKnown() && held.isHeld())
          .withFailMessage("state reads broken: a held lock read as %s", held)
          .isTrue();
      if (held.fencingToken().isPresent()) {
        assertThat(held.fencingToken().getAsLong())
            .withFailMessage(
                "state reads broken: the holder has token %d but state() read %s",
                lease.fencingToken(), held)
            .isEqualTo(lease.fencingToken());
      }
      held.remaining()
          .ifPresent(
              left ->
                  assertThat(left)
                      .as("state reads broken: the rest of a lease of %s", renewing().lease())
                      .isLessThanOrEqualTo(renewing().lease().plus(limits().tolerance())));
      Optional<String> owner = probe.ownerOf(name, lease.fencingToken());
      if (held.holder().isPresent() && owner.isPresent()) {
        assertThat(held.holder().get())
            .withFailMessage(
                "state reads broken: holder() read '%s' but the lock is held by the "
                    + "lease of owner id '%s'",
                held.holder().get(), owner.get())
            .isEqualTo(owner.get());
      }
      assertThat(lease.release()).isTrue();
      assertThat(seen.state())
          .withFailMessage("state reads broken: a released lock read as %s", seen.state())
          .isEqualTo(LockState.free());
    }

    @Test
    @DisplayName(
        "16.2 MUST: reading the state writes nothing: the next holder's token follows the last"
            + " holder's as if no read happened")
    void rule16_2_readingTakesNothing() throws Exception {
      requireFeature(Feature.STATE_READS, "16.2");
      String name = name("state-no-write");
      LockClient c = client();
      Lease first = c.lock(name).acquire(Duration.ofSeconds(10));
      long token = first.fencingToken();
      assertThat(first.release()).isTrue();
      for (int i = 0; i < 5; i++) {
        assertThat(c.lock(name).state().isHeld()).isFalse();
      }
      try (Lease second = c.lock(name).acquire(Duration.ofSeconds(10))) {
        assertThat(second.fencingToken()).isGreaterThan(token);
        LockState held = c.lock(name).state();
        assertThat(held.isHeld())
            .withFailMessage("state reads broken: a held lock read as %s", held)
            .isTrue();
      }
    }

    @Test
    @DisplayName("16.4 MUST: the remaining lease a state read reports counts down")
    void rule16_4_remainingCountsDown() throws Exception {
      requireFeature(Feature.STATE_READS, "16.4");
      String name = name("state-countdown");
      Duration lease = limits().lease().multipliedBy(3);
      Lease held =
          client(LockOptions.builder().lease(lease).autoRenew(false).build())
              .lock(name)
              .acquire(Duration.ofSeconds(10));
      DistributedLock seen = client().lock(name);
      LockState first = seen.state();
      Duration pause = limits().lease().dividedBy(2);
      Thread.sleep(pause.toMillis());
      LockState later = seen.state();
      if (first.remaining().isPresent() && later.remaining().isPresent()) {
        long dropped = first.remaining().get().minus(later.remaining().get()).toMillis();
        assertThat(dropped)
            .withFailMessage(
                "state reads broken: the remaining lease read %s, then %s %d ms later: it must"
                    + " count down",
                first.remaining().get(), later.remaining().get(), pause.toMillis())
            .isGreaterThanOrEqualTo(pause.toMillis() - 100);
      }
      assertThat(held.release()).isTrue();
    }

    @Test
    @DisplayName("16.5 MUST: a lease that ran out without release reads free")
    void rule16_5_expiredLeaseReadsFree() throws Exception {
      requireFeature(Feature.STATE_READS, "16.5");
      String name = name("state-expired");
      client(expiring()).lock(name).acquire(Duration.ofSeconds(10));
      long start = System.nanoTime();
      DistributedLock seen = client().lock(name);
      Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
      long deadline = start + bound.toNanos();
      LockState state = seen.state();
      while (state.isHeld() && System.nanoTime() - deadline < 0) {
        Thread.sleep(20);
        state = seen.state();
      }
      assertThat(state.isHeld())
          .withFailMessage(
              "state reads broken: a lease of %d ms that ran out without a release still "
                  + "read as held after %d ms: %s",
              limits().lease().toMillis(), ms(System.nanoTime() - start), state)
          .isFalse();
    }

    @Test
    @DisplayName(
        "16.6 MUST: at a lease's end a state read agrees with an acquire: held reads with time left"
            + " above zero, free only once an acquire takes the lock")
    void rule16_6_stateAgreesWithAnAcquireAtTheLeasesEnd() throws Exception {
      requireFeature(Feature.STATE_READS, "16.6");
      String name = name("state-boundary");
      client(expiring()).lock(name).acquire(Duration.ofSeconds(10));
      long start = System.nanoTime();
      LockClient observer = client();
      DistributedLock seen = observer.lock(name);
      long deadline =
          start
              + limits().lease().plus(limits().expirySlack()).plus(limits().tolerance()).toNanos();
      LockState state = seen.state();
      int reads = 1;
      while (state.isHeld() && System.nanoTime() - deadline < 0) {
        LockState held = state;
        state
            .remaining()
            .ifPresent(
                left ->
                    assertThat(left.isNegative() || left.isZero())
                        .withFailMessage(
                            "state reads broken: %d ms after a lease of %d ms was taken, the lock"
                                + " read as held with %s left: while a lock cannot be taken its"
                                + " remaining lease is the time until it can, above zero (a margin"
                                + " the backend keeps past the expiry belongs in it); read %s",
                            ms(System.nanoTime() - start), limits().lease().toMillis(), left, held)
                        .isFalse());
        // read often only near the end: a lease that reports its rest is slept through until
        // shortly before it
        long nap =
            state.remaining().map(left -> left.toMillis() - 50).filter(m -> m > 2).orElse(2L);
        Thread.sleep(Math.min(nap, 200));
        state = seen.state();
        reads++;
      }
      if (state.isHeld()) {
        return; // rule 16.5 reports a lease that never reads free
      }
      long freeAt = ms(System.nanoTime() - start);
      Optional<Lease> got = seen.tryAcquire();
      got.ifPresent(Lease::release);
      assertThat(got)
          .withFailMessage(
              "state reads broken: the lock read free %d ms after a lease of %d ms was taken (read"
                  + " %d times), but a tryAcquire() right after that read was refused: a state read"
                  + " must not say free while an acquire still counts the lease as held (a margin"
                  + " past the expiry must be the same for both)",
              freeAt, limits().lease().toMillis(), reads)
          .isPresent();
    }

    @Test
    @DisplayName(
        "16.3 MUST: a backend that does not declare STATE_READS answers unknown, never a guess")
    void rule16_3_undeclaredMeansUnknown() throws Exception {
      assumeTrue(
          !guarantees().has(Feature.STATE_READS),
          () ->
              "rule 16.3 skipped: the backend declares STATE_READS, which rules 16.1 and 16.2"
                  + " check");
      String name = name("state-unknown");
      try (Lease lease = client().lock(name).acquire(Duration.ofSeconds(10))) {
        assertThat(client().lock(name).state()).isEqualTo(LockState.unknown());
      }
    }
  }

  @Nested
  @DisplayName("Rule 17: lease control")
  class LeaseControl {
    private LockOptions unrenewed(Duration lease) {
      return LockOptions.builder().lease(lease).autoRenew(false).reentrant(true).build();
    }

    @Test
    @DisplayName(
        "17.1 MUST: extend() to a longer lease keeps the lock past its old expiry, and a release"
            + " still frees it at once")
    void rule17_1_extendLonger() throws Exception {
      requireFeature(Feature.EXTEND, "17.1");
      String name = name("extend-longer");
      Duration lease = limits().lease();
      Lease held = client(unrenewed(lease)).lock(name).acquire(Duration.ofSeconds(10));
      long granted = System.nanoTime();
      Thread.sleep(lease.dividedBy(2).toMillis());
      assertThat(held.extend(lease.multipliedBy(4)))
          .as("lease control broken: extend() of a lease held for half its lease")
          .isTrue();
      // watch well past the old expiry, and past the slack a vanished holder would get
      Duration watch =
          lease.plus(lease).plus(lease.dividedBy(2)).minusNanos(System.nanoTime() - granted);
      Optional<Lease> intruder = client().lock(name).tryAcquire(watch);
      assertThat(intruder)
          .withFailMessage(
              "lease control broken: another client got the lock %d ms after the grant, although"
                  + " extend(%d ms) at %d ms had moved its expiry to %d ms: the server's expiry did"
                  + " not move",
              ms(System.nanoTime() - granted),
              lease.multipliedBy(4).toMillis(),
              lease.dividedBy(2).toMillis(),
              lease.multipliedBy(4).plus(lease.dividedBy(2)).toMillis())
          .isEmpty();
      assertThat(held.isValid())
          .as("lease control broken: isValid() of an extended lease within its new expiry")
          .isTrue();
      assertThat(held.release())
          .as("lease control broken: release() of an extended lease")
          .isTrue();
      assertThat(client().lock(name).tryAcquire(limits().tolerance()))
          .as("the lock after the extended lease was released")
          .isPresent();
    }

    @Test
    @DisplayName(
        "17.2 MUST: extend() to a shorter lease frees the lock at the new expiry, not sooner and"
            + " not much later")
    void rule17_2_extendShorter() throws Exception {
      requireFeature(Feature.EXTEND, "17.2");
      String name = name("extend-shorter");
      Duration shorter = limits().lease().multipliedBy(5).dividedBy(4);
      Duration soon = limits().tolerance().dividedBy(4);
      Lease held =
          client(unrenewed(limits().lease().multipliedBy(20)))
              .lock(name)
              .acquire(Duration.ofSeconds(10));
      LockClient watcher = client();
      long asked = System.nanoTime();
      assertThat(held.extend(shorter))
          .as("lease control broken: extend() to a shorter lease")
          .isTrue();
      long answered = System.nanoTime();
      Optional<Lease> next =
          watcher
              .lock(name)
              .tryAcquire(shorter.plus(limits().tolerance()).plus(limits().tolerance()));
      long got = System.nanoTime();
      assertThat(next)
          .withFailMessage(
              "lease control broken: a lease shortened to %d ms still held the lock after %d ms: "
                  + "extend() must move the server's expiry both ways",
              shorter.toMillis(), ms(got - answered))
          .isPresent();
      assertThat(ms(got - asked))
          .withFailMessage(
              "lease control broken: the lock was free %d ms after extend(%d ms) was called: "
                  + "the server ended it early",
              ms(got - asked), shorter.toMillis())
          .isGreaterThanOrEqualTo(shorter.toMillis() - 15);
      assertThat(ms(got - answered))
          .withFailMessage(
              "lease control broken: a lease shortened to %d ms was free only %d ms after "
                  + "extend() returned (bound: + %d ms)",
              shorter.toMillis(), ms(got - answered), soon.toMillis())
          .isLessThanOrEqualTo(shorter.plus(soon).toMillis());
      assertThat(held.isValid())
          .as("isValid() of the shortened lease after its new expiry")
          .isFalse();
    }

    @Test
    @DisplayName(
        "17.3 MUST: extend() of a released lease, or of one the server gave to another client,"
            + " answers false and leaves the new holder's expiry alone")
    void rule17_3_extendOfALeaseNoLongerOurs() throws Exception {
      requireFeature(Feature.EXTEND, "17.3");
      String name = name("extend-released");
      Lease released =
          client(unrenewed(limits().lease())).lock(name).acquire(Duration.ofSeconds(10));
      assertThat(released.release()).isTrue();
      assertThat(released.extend(Duration.ofSeconds(30)))
          .as("lease control broken: extend() after release()")
          .isFalse();

      // a long lease without renewal: the client believes it holds the lock throughout, so its
      // extend
      // reaches the server and only the server's owner check protects the new holder
      String taken = name("extend-taken");
      Lease stale = client(longLease()).lock(taken).acquire(Duration.ofSeconds(10));
      hook("17.3", () -> faults().revoke(taken));
      Lease taker = client(unrenewed(limits().lease())).lock(taken).acquire(Duration.ofSeconds(10));
      long takenAt = System.nanoTime();
      assertThat(stale.extend(Duration.ofSeconds(30)))
          .withFailMessage(
              "lease control broken: extend() by a holder whose lock the server had given to"
                  + " another client answered true: extend must check the owner on the server")
          .isFalse();
      assertThat(taker.isValid())
          .as("ownership broken: the taker's lease after the old holder's extend()")
          .isTrue();
      // the failed extend must not have moved the taker's expiry: a third client gets the lock when
      // the taker's lease ends
      Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
      Optional<Lease> third =
          client()
              .lock(taken)
              .tryAcquire(bound.plus(limits().tolerance()).minusNanos(System.nanoTime() - takenAt));
      assertThat(third)
          .withFailMessage(
              "lease control broken: the taker's lease of %d ms without renewal still held the lock"
                  + " %d ms after it was taken: the old holder's extend() moved someone else's"
                  + " expiry",
              limits().lease().toMillis(), ms(System.nanoTime() - takenAt))
          .isPresent();
      assertThat(ms(System.nanoTime() - takenAt))
          .as("ms until the taker's lease ended")
          .isLessThanOrEqualTo(bound.toMillis());
    }

    @Test
    @DisplayName(
        "17.4 MUST: extend() of an auto-renewed lease and bad durations throw at once, changing"
            + " nothing")
    void rule17_4_extendMisuse() throws Exception {
      requireFeature(Feature.EXTEND, "17.4");
      String name = name("extend-misuse");
      Lease renewed = client().lock(name).acquire(Duration.ofSeconds(10));
      assertThatThrownBy(() -> renewed.extend(Duration.ofSeconds(5)))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining(name);
      Lease unrenewed =
          client(unrenewed(limits().lease().multipliedBy(10)))
              .lock(name("extend-args"))
              .acquire(Duration.ofSeconds(10));
      assertThatThrownBy(() -> unrenewed.extend(null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("`lease`");
      assertThatThrownBy(() -> unrenewed.extend(Duration.ZERO))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`lease`");
      assertThatThrownBy(() -> unrenewed.extend(Duration.ofDays(8)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`lease`");
      assertThatThrownBy(() -> unrenewed.releaseAfter(null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("`keep`");
      assertThatThrownBy(() -> unrenewed.releaseAfter(Duration.ofDays(8)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`keep`");
      assertThat(renewed.isValid() && unrenewed.isValid())
          .as("both leases after the refused calls")
          .isTrue();
      assertThat(renewed.release() && unrenewed.release())
          .as("both leases released after the refused calls")
          .isTrue();
    }

    /**
     * Takes {@code name}, gives it up with a hold of {@code keep}, and returns [asked, answered] in
     * nanos.
     */
    private long[] holdAfterRelease(LockClient holder, String name, Duration keep)
        throws Exception {
      Lease lease = holder.lock(name).acquire(Duration.ofSeconds(10));
      long asked = System.nanoTime();
      assertThat(lease.releaseAfter(keep))
          .as("lease control broken: releaseAfter() of a lease just taken")
          .isTrue();
      long answered = System.nanoTime();
      assertThat(lease.isValid()).as("isValid() after releaseAfter()").isFalse();
      assertThat(lease.release()).as("release() after releaseAfter()").isFalse();
      return new long[] {asked, answered};
    }

    private void assertHeldUntil(String name, Duration keep, long[] at, Duration late, String how)
        throws Exception {
      Optional<Lease> next =
          client().lock(name).tryAcquire(keep.plus(late).plus(limits().tolerance()));
      long got = System.nanoTime();
      assertThat(next)
          .withFailMessage(
              "lease control broken: a hold of %d ms after release (%s) still held the lock %d ms"
                  + " later",
              keep.toMillis(), how, ms(got - at[1]))
          .isPresent();
      assertThat(ms(got - at[0]))
          .withFailMessage(
              "lease control broken: a hold of %d ms after release (%s) let another client "
                  + "take the lock after only %d ms",
              keep.toMillis(), how, ms(got - at[0]))
          .isGreaterThanOrEqualTo(keep.toMillis() - 15);
      assertThat(ms(got - at[1]))
          .withFailMessage(
              "lease control broken: a hold of %d ms after release (%s) was free only %d ms "
                  + "later (bound: + %d ms)",
              keep.toMillis(), how, ms(got - at[1]), late.toMillis())
          .isLessThanOrEqualTo(keep.plus(late).toMillis());
    }

    @Test
    @DisplayName(
        "17.5 MUST: releaseAfter(keep) keeps the lock held until keep, then frees it by itself")
    void rule17_5_holdAfterRelease() throws Exception {
      requireFeature(Feature.HOLD_AFTER_RELEASE, "17.5");
      String name = name("hold");
      Duration keep = limits().lease().multipliedBy(5).dividedBy(4);
      long[] at =
          holdAfterRelease(client(unrenewed(limits().lease().multipliedBy(10))), name, keep);
      assertHeldUntil(name, keep, at, limits().tolerance().dividedBy(4), "holder alive");
    }

    @Test
    @DisplayName("17.6 MUST: a hold after release survives closing the holder's client")
    void rule17_6_holdSurvivesClose() throws Exception {
      requireFeature(Feature.HOLD_AFTER_RELEASE, "17.6");
      String name = name("hold-close");
      Duration keep = limits().lease().multipliedBy(2);
      LockClient holder = client();
      long[] at = holdAfterRelease(holder, name, keep);
      holder.close();
      assertHeldUntil(
          name,
          keep,
          at,
          limits().expirySlack().plus(limits().tolerance()),
          "holder's client closed");
    }

    @Test
    @DisplayName(
        "17.7 MUST: a hold after release survives the holder vanishing (abandon: nothing released,"
            + " connections dropped)")
    void rule17_7_holdSurvivesAbandon() throws Exception {
      requireFeature(Feature.HOLD_AFTER_RELEASE, "17.7");
      String name = name("hold-abandon");
      Duration keep = limits().lease().multipliedBy(2);
      LockClient holder = client();
      long[] at = holdAfterRelease(holder, name, keep);
      ((Abandonable) holder).abandon();
      assertHeldUntil(
          name, keep, at, limits().expirySlack().plus(limits().tolerance()), "holder abandoned");
    }

    @Test
    @DisplayName("17.8 MUST: a hold after release survives SIGKILL of the holding process")
    void rule17_8_holdSurvivesKill() throws Exception {
      requireFeature(Feature.HOLD_AFTER_RELEASE, "17.8");
      requireFeature(Feature.SHARED_ACROSS_PROCESSES, "17.8");
      String name = name("hold-killed");
      Duration keep = limits().lease().multipliedBy(3);
      Process child = holdInChild(name, Long.toString(keep.toMillis()));
      long seen = System.nanoTime();
      child.destroyForcibly();
      assertThat(child.waitFor(10, TimeUnit.SECONDS)).as("child exited after SIGKILL").isTrue();
      assertThat(client().lock(name).tryAcquire())
          .withFailMessage(
              "lease control broken: the hold of %d ms a process set before it "
                  + "was killed was gone %d ms later",
              keep.toMillis(), ms(System.nanoTime() - seen))
          .isEmpty();
      Duration late = limits().expirySlack().plus(limits().tolerance());
      Optional<Lease> next =
          client().lock(name).tryAcquire(keep.plus(late).plus(limits().tolerance()));
      assertThat(next)
          .withFailMessage(
              "lease control broken: the hold of %d ms of a killed process still held the lock %d"
                  + " ms later",
              keep.toMillis(), ms(System.nanoTime() - seen))
          .isPresent();
      assertThat(ms(System.nanoTime() - seen))
          .as("ms until the killed process's hold ended")
          .isLessThanOrEqualTo(keep.plus(late).toMillis());
    }

    @Test
    @DisplayName(
        "17.9 MUST: a lease without auto-renew whose holder vanishes is ended by the server at its"
            + " expiry, not at a session's end")
    void rule17_9_unrenewedLeaseOfAVanishedHolderEndsOnTheServer() throws Exception {
      requireFeature(Feature.EXTEND, "17.9");
      String name = name("unrenewed-vanished");
      LockClient holder = client(expiring());
      holder.lock(name).acquire(Duration.ofSeconds(10));
      long start = System.nanoTime();
      ((Abandonable) holder).abandon();
      Duration slack =
          limits().expirySlack().compareTo(Duration.ofSeconds(2)) < 0
              ? limits().expirySlack()
              : Duration.ofSeconds(2);
      Duration bound = limits().lease().plus(slack).plus(limits().tolerance());
      Optional<Lease> next = client().lock(name).tryAcquire(bound.plus(limits().tolerance()));
      assertThat(next)
          .withFailMessage(
              "lease control broken: a lease of %d ms without renewal whose holder vanished still"
                  + " held the lock %d ms later: the server must end it at its expiry, not when a"
                  + " session times out",
              limits().lease().toMillis(), ms(System.nanoTime() - start))
          .isPresent();
      assertThat(ms(System.nanoTime() - start))
          .as(
              "ms until a vanished holder's unrenewed lease ended (bound: lease + %d ms slack + "
                  + "tolerance)",
              slack.toMillis())
          .isLessThanOrEqualTo(bound.toMillis());
    }

    @Test
    @DisplayName(
        "17.10 MUST: releaseAfter() of a lease the server gave to another client answers false and"
            + " puts no hold on the new holder's lock")
    void rule17_10_holdOfALeaseNoLongerOurs() throws Exception {
      requireFeature(Feature.HOLD_AFTER_RELEASE, "17.10");
      String name = name("hold-foreign");
      Lease stale = client(longLease()).lock(name).acquire(Duration.ofSeconds(10));
      hook("17.10", () -> faults().revoke(name));
      Lease taker = client().lock(name).acquire(Duration.ofSeconds(10));
      assertThat(stale.releaseAfter(Duration.ofSeconds(30)))
          .withFailMessage(
              "lease control broken: releaseAfter() by a holder whose lock the server had given to"
                  + " another client answered true: it must check the owner on the server")
          .isFalse();
      assertThat(taker.isValid())
          .as("ownership broken: the taker's lease after the old holder's releaseAfter()")
          .isTrue();
      assertThat(taker.release())
          .as("ownership broken: the taker's release after the old holder's releaseAfter()")
          .isTrue();
      assertThat(client().lock(name).tryAcquire(limits().tolerance()))
          .withFailMessage(
              "lease control broken: the taker released the lock, but it stayed held: the old"
                  + " holder's releaseAfter() put a hold on a lock that was no longer its own")
          .isPresent();
    }

    @Test
    @DisplayName(
        "17.11 MUST: releaseAfter() of a lock held twice by one thread throws and keeps it held;"
            + " releaseAfter(0) is release()")
    void rule17_11_holdMisuse() throws Exception {
      requireFeature(Feature.HOLD_AFTER_RELEASE, "17.11");
      String name = name("hold-reentrant");
      DistributedLock lock = client().lock(name);
      Lease outer = lock.acquire(Duration.ofSeconds(10));
      Lease inner = lock.acquire(Duration.ofSeconds(10));
      assertThatThrownBy(() -> inner.releaseAfter(Duration.ofSeconds(5)))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining(name);
      assertThat(client().lock(name).tryAcquire())
          .as("the lock after a refused releaseAfter()")
          .isEmpty();
      assertThat(inner.release())
          .as("the inner holding's release after the refused releaseAfter()")
          .isTrue();
      assertThat(outer.releaseAfter(Duration.ZERO))
          .as("releaseAfter(0) of the last holding")
          .isTrue();
      assertThat(client().lock(name).tryAcquire(limits().tolerance()))
          .as("the lock after releaseAfter(0)")
          .isPresent();
    }

    @Test
    @DisplayName(
        "17.12 MUST: extend() of a lease that ran out on the server, with nobody holding the lock"
            + " since, answers false and does not bring it back")
    void rule17_12_extendOfAnExpiredLease() throws Exception {
      requireFeature(Feature.EXTEND, "17.12");
      String name = name("extend-expired");
      Lease lapsed = client(expiring()).lock(name).acquire(Duration.ofSeconds(10));
      long granted = System.nanoTime();
      BackendLease sent = granted(name, Claim.Kind.EXCLUSIVE, lapsed);
      // past the bound by which every backend has ended an unrenewed lease (rule 3.1); nobody asks
      // for the lock meanwhile
      Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
      Thread.sleep(Math.max(0, bound.toMillis() - ms(System.nanoTime() - granted)));
      Duration asked = limits().lease().multipliedBy(30);
      assertThat(lapsed.extend(asked))
          .as("lease control broken: extend() of a lease past its lease")
          .isFalse();
      // the core asks the server only while its own clock says the lease is valid: this is an
      // extend sent in time and
      // delivered late (a delayed or repeated request), so only the server's own check decides
      boolean answered;
      try {
        answered = probe.extendAgain(sent, asked);
      } catch (RuntimeException e) {
        answered =
            false; // refused: the next client's tryAcquire() below tells whether it moved anything
      }
      long sentAt = System.nanoTime();
      assertThat(answered)
          .withFailMessage(
              "lease control broken: extend(%d ms) of a lease of %d ms without renewal, reaching"
                  + " the server %d ms after the grant (the lease had run out and nobody had taken"
                  + " the lock since), answered true: the server's extend must check the lease's"
                  + " expiry as well as its owner, or it brings an expired lease back to life",
              asked.toMillis(), limits().lease().toMillis(), ms(sentAt - granted))
          .isFalse();
      Optional<Lease> next = client().lock(name).tryAcquire(limits().tolerance());
      assertThat(next)
          .withFailMessage(
              "lease control broken: after an extend(%d ms) of a lease that had run out %d ms"
                  + " before (answered false), another client could not take the lock within %d ms:"
                  + " the extend brought the expired lease back on the server",
              asked.toMillis(),
              ms(sentAt - granted) - limits().lease().toMillis(),
              limits().tolerance().toMillis())
          .isPresent();
      next.get().release();
    }

    @Test
    @DisplayName(
        "17.13 MUST: releaseAfter(keep) called a while after the grant keeps the lock held until"
            + " keep after the call")
    void rule17_13_holdCountsFromTheCall() throws Exception {
      requireFeature(Feature.HOLD_AFTER_RELEASE, "17.13");
      String name = name("hold-late");
      Duration keep = limits().lease().multipliedBy(5).dividedBy(4);
      Duration before = limits().lease().dividedBy(2);
      Lease lease =
          client(unrenewed(limits().lease().multipliedBy(10)))
              .lock(name)
              .acquire(Duration.ofSeconds(10));
      long granted = System.nanoTime();
      Thread.sleep(before.toMillis());
      long asked = System.nanoTime();
      assertThat(lease.releaseAfter(keep))
          .as("lease control broken: releaseAfter() of a lease held for %d ms", before.toMillis())
          .isTrue();
      long answered = System.nanoTime();
      Duration late = limits().tolerance().dividedBy(4);
      Optional<Lease> next =
          client().lock(name).tryAcquire(keep.plus(late).plus(limits().tolerance()));
      long got = System.nanoTime();
      assertThat(next)
          .withFailMessage(
              "lease control broken: a hold of %d ms after release, set %d ms after the grant,"
                  + " still held the lock %d ms after the call",
              keep.toMillis(), ms(asked - granted), ms(got - answered))
          .isPresent();
      next.get().release();
      assertThat(ms(got - asked))
          .withFailMessage(
              "lease control broken: releaseAfter(%d ms), called %d ms after the grant, let another"
                  + " client take the lock %d ms after the call (%d ms after the grant): keep must"
                  + " count from the releaseAfter() call, not from the grant",
              keep.toMillis(), ms(asked - granted), ms(got - asked), ms(got - granted))
          .isGreaterThanOrEqualTo(keep.toMillis() - 15);
      assertThat(ms(got - answered))
          .withFailMessage(
              "lease control broken: a hold of %d ms after release, set %d ms after the "
                  + "grant, was free only %d ms after the call returned (bound: + %d ms)",
              keep.toMillis(), ms(asked - granted), ms(got - answered), late.toMillis())
          .isLessThanOrEqualTo(keep.plus(late).toMillis());
    }

    @Test
    @DisplayName(
        "17.14 MUST: the holder after an extended lease is released gets a greater token than the"
            + " extended lease's")
    void rule17_14_tokensIncreaseAfterAnExtend() throws Exception {
      requireFeature(Feature.EXTEND, "17.14");
      requireFeature(Feature.FENCING, "17.14");
      String name = name("extend-fence");
      LockClient holder = client(unrenewed(limits().lease().multipliedBy(10)));
      for (int i = 0; i < 2; i++) {
        assertThat(holder.lock(name).acquire(Duration.ofSeconds(10)).release())
            .as("a release before the extended lease")
            .isTrue();
      }
      Lease extended = holder.lock(name).acquire(Duration.ofSeconds(10));
      assertThat(extended.extend(limits().lease().multipliedBy(20)))
          .as("lease control broken: extend() of a lease just taken")
          .isTrue();
      assertThat(extended.release()).as("release() of the extended lease").isTrue();
      Lease next = client().lock(name).acquire(Duration.ofSeconds(10));
      long token = next.fencingToken();
      next.release();
      if (token <= extended.fencingToken()) {
        fail(
            "fencing broken: the holder after an extended lease (token "
                + extended.fencingToken()
                + ") was released got token "
                + token
                + ": an extend must keep the lock's fence counter (a write that creates the lock's"
                + " record anew resets it), so that every later holder's token is above every"
                + " earlier one's");
      }
    }
  }

  // ------------------------------------------------------------------ semaphores and read-write
  // locks

  /**
   * Waits until a waiter of this kind has queued: one more poll of that claim came back, and the
   * thread is parked.
   */
  private void awaitQueued(Thread t, String name, Claim.Kind kind, int pollsBefore, String what)
      throws InterruptedException {
    // its acquire returned without waiting, before its poll came back or before it parked: granted
    // although what is
    // held leaves nothing (or it failed)
    Runnable stillWaiting =
        () -> {
          if (!t.isAlive()) {
            Throwable error =
                backgroundErrors.stream()
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
          return probe.polls(name, kind) > pollsBefore && probe.pollsBy(name, kind, t) > 0;
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
  private void assertClaimWaiterSleeps(
      String name, Claim.Kind kind, DistributedLock waiting, LockClient waiterClient, String broken)
      throws InterruptedException {
    Duration recheck = waiterClient.config().recheck();
    int before = probe.polls(name, kind);
    Thread waiter =
        background(
            "patient-" + kind,
            () -> {
              try (Lease l = waiting.acquire(Duration.ofSeconds(60))) {
                l.isValid();
              }
            });
    awaitQueued(waiter, name, kind, before, "the " + kind + " waiter blocks");
    int queuedAt = probe.polls(name, kind);
    Duration watched = limits().tolerance().multipliedBy(2);
    Thread.sleep(watched.toMillis());
    int polls = probe.polls(name, kind) - queuedAt;
    // a few reads again as subscriptions are confirmed (one per server, for Redlock), then one per
    // recheck
    long allowed = 5 + watched.toMillis() / Math.max(1, recheck.toMillis());
    waiter.interrupt();
    waiter.join(TimeUnit.SECONDS.toMillis(30));
    assertThat((long) polls)
        .withFailMessage(
            "%s broken: a %s waiter polled %d times in %d ms while nothing it waits for was"
                + " released (at most %d: a few as its subscriptions are confirmed, then one per"
                + " recheck interval of %d ms): a waiter must sleep until a release wakes it, not"
                + " poll in a loop; a backend whose %s waiters poll must not declare"
                + " NOTIFIED_WAKEUP for them (Guarantees.Builder#except)",
            broken,
            kind,
            polls,
            watched.toMillis(),
            allowed,
            recheck.toMillis(),
            kind == Claim.Kind.PERMIT ? "semaphore" : "read-write")
        .isLessThanOrEqualTo(allowed);
  }

  /**
   * @return the lease the backend granted with this token, as the core hands it back for release
   */
  private BackendLease granted(String name, Claim.Kind kind, Lease lease) {
    return probe
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
  private boolean releaseAgain(String name, Claim.Kind kind, Lease lease) {
    return releaseAgain(granted(name, kind, lease));
  }

  /** As {@link #releaseAgain(String, Claim.Kind, Lease)}, for a grant the rule picked itself. */
  private boolean releaseAgain(BackendLease stale) {
    try {
      return probe.releaseAgain(stale);
    } catch (RuntimeException e) {
      return false;
    }
  }

  /** Releases what is there, for clean-up after a rule's check. */
  private static void releaseAll(List<Lease> leases) {
    for (Lease l : leases) {
      l.release();
    }
  }

  @Nested
  @DisplayName("Rule 18: semaphores")
  class Semaphores {
    @Test
    @DisplayName(
        "18.1 MUST: at most N holders at once under contention from 8 threads over 2 clients, and"
            + " more than one really at once")
    void rule18_1_atMostNHoldersUnderContention() throws Exception {
      requireFeature(Feature.SEMAPHORES, "18.1");
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
                          sem.tryAcquire(
                              Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
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
    void rule18_2_exactlyNPermits() throws Exception {
      requireFeature(Feature.SEMAPHORES, "18.2");
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
    void rule18_3_permitsOfVanishedHoldersComeBack() throws Exception {
      requireFeature(Feature.SEMAPHORES, "18.3");
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
    void rule18_4_withdrawnWaitersLeaveNoGhost() throws Exception {
      requireFeature(Feature.SEMAPHORES, "18.4");
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
      int polled = probe.polls(name, Claim.Kind.PERMIT);
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
      int polledAsync = probe.polls(name, Claim.Kind.PERMIT);
      CompletableFuture<Lease> cancelled =
          waiters.semaphore(name, permits).acquireAsync(Duration.ofSeconds(60));
      await(
          Duration.ofSeconds(10),
          "the asynchronous waiter polls",
          () -> probe.polls(name, Claim.Kind.PERMIT) > polledAsync);
      assertThat(cancelled.cancel(true)).isTrue();
      await(
          limits().tolerance(),
          "the three waiters withdraw",
          () -> probe.abandons(name, Claim.Kind.PERMIT) >= 3);
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
    void rule18_5_tokensIncreaseAcrossGrants() throws Exception {
      requireFeature(Feature.SEMAPHORES, "18.5");
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

    @Test
    @DisplayName(
        "18.6 MUST: asking with another count while permits are held throws IllegalStateException"
            + " naming both counts and takes nothing; after all releases a new count is accepted")
    void rule18_6_mismatchedCount() throws Exception {
      requireFeature(Feature.SEMAPHORES, "18.6");
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
    void rule18_7_resourcesOfOneNameAreSeparate() throws Exception {
      requireFeature(Feature.SEMAPHORES, "18.7");
      boolean rw = guarantees().has(Feature.READ_WRITE_LOCKS);
      String name = name("one-name");
      LockClient a = client();
      LockClient b = client();
      Lease lock = a.lock(name).acquire(Duration.ofSeconds(10));
      Optional<Lease> sem = b.semaphore(name, 1).tryAcquire();
      assertThat(sem)
          .withFailMessage(
              "semaphores broken: a semaphore could not be taken while only the lock of the same"
                  + " name was held: a lock, a semaphore and a read-write lock of one name must be"
                  + " separate resources (separate keys)")
          .isPresent();
      Optional<Lease> write =
          rw ? a.readWriteLock(name).writeLock().tryAcquire() : Optional.empty();
      if (rw) {
        assertThat(write)
            .withFailMessage(
                "semaphores broken: the write lock of a read-write lock could not be taken while"
                    + " only the lock and the semaphore of the same name were held: they must be"
                    + " separate resources")
            .isPresent();
      }
      LockClient c = client();
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
    void rule18_8_badPermits() throws Exception {
      requireFeature(Feature.SEMAPHORES, "18.8");
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
    void rule18_11_tokensIncreaseAcrossIdleSemaphores() throws Exception {
      requireFeature(Feature.SEMAPHORES, "18.11");
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
    void rule18_9_waiterIsWokenByARelease() throws Exception {
      requireFeature(Feature.SEMAPHORES, "18.9");
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
        int polled = probe.polls(name, Claim.Kind.PERMIT);
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
        assertThat(grantedAt.get())
            .as("semaphores broken: hand-off " + i + " happened")
            .isNotZero();
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
    void rule18_10_waiterDoesNotPoll() throws Exception {
      requireFeature(Feature.SEMAPHORES, "18.10");
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

  @Nested
  @DisplayName("Rule 19: read-write locks")
  class ReadWriteLocks {
    private DistributedLock read(LockClient c, String name) {
      return c.readWriteLock(name).readLock();
    }

    private DistributedLock write(LockClient c, String name) {
      return c.readWriteLock(name).writeLock();
    }

    @Test
    @DisplayName(
        "19.1 MUST: readers of 2 clients hold the lock at once; a writer excludes readers and"
            + " writers, and readers exclude a writer")
    void rule19_1_readersShareWritersExclude() throws Exception {
      requireFeature(Feature.READ_WRITE_LOCKS, "19.1");
      String name = name("rw-share");
      LockClient a = client();
      LockClient b = client();
      LockClient c = client();
      Lease r1 = read(a, name).acquire(Duration.ofSeconds(10));
      Optional<Lease> r2 = read(b, name).tryAcquire();
      assertThat(r2)
          .withFailMessage(
              "read-write locks broken: a reader of another client was refused while only a reader "
                  + "held the lock: readers must share it")
          .isPresent();
      Optional<Lease> w = write(c, name).tryAcquire();
      w.ifPresent(Lease::release);
      assertThat(w)
          .withFailMessage(
              "read-write locks broken: a writer was granted while 2 readers held the lock")
          .isEmpty();
      assertThat(r1.release()).isTrue();
      w = write(c, name).tryAcquire();
      w.ifPresent(Lease::release);
      assertThat(w)
          .withFailMessage(
              "read-write locks broken: a writer was granted while 1 of 2 readers still held the"
                  + " lock (a release freed the other reader's share too?)")
          .isEmpty();
      assertThat(r2.get().release()).isTrue();
      Optional<Lease> writer = write(c, name).tryAcquire();
      assertThat(writer)
          .withFailMessage(
              "read-write locks broken: the write lock could not be taken after both readers "
                  + "released: a reader's release must give its share back")
          .isPresent();
      Optional<Lease> reader = read(a, name).tryAcquire();
      reader.ifPresent(Lease::release);
      assertThat(reader)
          .withFailMessage(
              "read-write locks broken: a reader was granted while a writer held the lock")
          .isEmpty();
      Optional<Lease> writer2 = write(b, name).tryAcquire();
      writer2.ifPresent(Lease::release);
      assertThat(writer2)
          .withFailMessage(
              "read-write locks broken: a second writer was granted while a writer held the lock")
          .isEmpty();
      assertThat(writer.get().release()).isTrue();
      Optional<Lease> after = read(b, name).tryAcquire();
      assertThat(after)
          .withFailMessage(
              "read-write locks broken: a reader could not get the lock after the writer released"
                  + " it")
          .isPresent();
      after.get().release();
    }

    @Test
    @DisplayName(
        "19.2 MUST: under mixed contention from 2 clients a writer never overlaps anyone, readers"
            + " do overlap, and tokens follow the order of grants")
    void rule19_2_mixedContention() throws Exception {
      requireFeature(Feature.READ_WRITE_LOCKS, "19.2");
      String name = name("rw-contended");
      // short rechecks: without notified wake-up, waiters still look again often enough to contend
      LockClient[] cs = {
        client(renewing(), Duration.ofMillis(50)), client(renewing(), Duration.ofMillis(50))
      };
      long deadline = System.nanoTime() + limits().tolerance().toNanos();
      AtomicInteger readers = new AtomicInteger();
      AtomicInteger writers = new AtomicInteger();
      AtomicInteger peakReaders = new AtomicInteger();
      AtomicInteger writes = new AtomicInteger();
      AtomicReference<String> violation = new AtomicReference<>();
      // each hold: {kind (1 write, 0 read), token, asked, released}
      List<long[]> holds = new CopyOnWriteArrayList<>();
      CountDownLatch go = new CountDownLatch(1);
      List<Thread> workers = new ArrayList<>();
      for (int t = 0; t < 6; t++) {
        boolean writer = t < 2;
        DistributedLock side = writer ? write(cs[t % 2], name) : read(cs[t % 2], name);
        workers.add(
            background(
                "rw-contender-" + t,
                () -> {
                  go.await();
                  while (System.nanoTime() - deadline < 0) {
                    long asked = System.nanoTime();
                    Optional<Lease> got;
                    try {
                      got = side.tryAcquire(Duration.ofNanos(Math.max(1, deadline - asked)));
                    } catch (BackendUnavailableException e) {
                      continue;
                    }
                    if (got.isEmpty()) {
                      break;
                    }
                    if (writer) {
                      int w = writers.incrementAndGet();
                      int r = readers.get();
                      if (w > 1 || r > 0) {
                        violation.compareAndSet(
                            null,
                            "a writer (token "
                                + got.get().fencingToken()
                                + ") held the lock with "
                                + (w - 1)
                                + " other writers and "
                                + r
                                + " readers");
                      }
                      Thread.sleep(2);
                      writers.decrementAndGet();
                      writes.incrementAndGet();
                    } else {
                      peakReaders.accumulateAndGet(readers.incrementAndGet(), Math::max);
                      if (writers.get() > 0) {
                        violation.compareAndSet(
                            null,
                            "a reader (token "
                                + got.get().fencingToken()
                                + ") held the lock with a writer");
                      }
                      Thread.sleep(8);
                      readers.decrementAndGet();
                    }
                    long token = got.get().fencingToken();
                    got.get().release();
                    holds.add(new long[] {writer ? 1 : 0, token, asked, System.nanoTime()});
                    if (writer) {
                      Thread.sleep(15); // leave readers room to overlap
                    }
                  }
                }));
      }
      go.countDown();
      for (Thread w : workers) {
        w.join(limits().tolerance().multipliedBy(10).toMillis());
      }
      assertThat(violation.get())
          .withFailMessage(
              "read-write locks broken: under contention from 2 writers and 4 readers over 2"
                  + " clients, %s: a write lease must exclude every other lease (a check and a take"
                  + " that are not one atomic step?)",
              violation.get())
          .isNull();
      assertThat(writes.get())
          .withFailMessage(
              "read-write locks broken: 2 writers contending with 4 readers never got the "
                  + "lock in %d ms",
              limits().tolerance().toMillis())
          .isPositive();
      assertThat(peakReaders.get())
          .withFailMessage(
              "read-write locks broken: 4 readers never held the lock together under "
                  + "contention (%d holds): readers must share it",
              holds.size())
          .isGreaterThanOrEqualTo(2);
      if (guarantees().has(Feature.FENCING)) {
        for (long[] later : holds) {
          for (long[] earlier : holds) {
            // a lease released before the other was asked for was granted before it
            boolean ordered = earlier[3] - later[2] < 0 && (later[0] == 1 || earlier[0] == 1);
            if (ordered && earlier[1] >= later[1]) {
              fail(
                  "fencing broken: a "
                      + (later[0] == 1 ? "write" : "read")
                      + " lease got token "
                      + later[1]
                      + " although a "
                      + (earlier[0] == 1 ? "write" : "read")
                      + " lease with token "
                      + earlier[1]
                      + " was released before it was asked for: a write token must be above every"
                      + " earlier lease's, a read token above every earlier write's (one counter"
                      + " per read-write lock)");
            }
          }
        }
      }
    }

    @Test
    @DisplayName(
        "19.3 MUST: a writer is not starved by a steady stream of overlapping readers: it gets the"
            + " lock within one recheck interval + 2 tolerances")
    void rule19_3_noWriterStarvation() throws Exception {
      requireFeature(Feature.READ_WRITE_LOCKS, "19.3");
      String name = name("rw-starve");
      LockClient[] cs = {client(), client()};
      int ring = 3;
      Duration hold = Duration.ofMillis(250);
      // a ring of readers: each holds until the next one has the lock (or for at most `hold`), so a
      // backend that lets readers in past a waiting writer always has a reader inside
      AtomicInteger readerHolds = new AtomicInteger();
      java.util.concurrent.atomic.AtomicBoolean stop =
          new java.util.concurrent.atomic.AtomicBoolean();
      java.util.concurrent.Semaphore[] mayGo = new java.util.concurrent.Semaphore[ring];
      for (int i = 0; i < ring; i++) {
        mayGo[i] = new java.util.concurrent.Semaphore(i == 0 ? 1 : 0);
      }
      for (int i = 0; i < ring; i++) {
        int me = i;
        DistributedLock side = read(cs[i % 2], name);
        background(
            "rw-reader-" + i,
            () -> {
              while (!stop.get()) {
                mayGo[me].acquire();
                if (stop.get()) {
                  return;
                }
                Optional<Lease> got = side.tryAcquire(Duration.ofSeconds(30));
                if (got.isEmpty()) {
                  continue;
                }
                readerHolds.incrementAndGet();
                int before = readerHolds.get();
                mayGo[(me + 1) % ring].release(); // the next reader asks while this one holds
                long until = System.nanoTime() + hold.toNanos();
                while (readerHolds.get() == before && System.nanoTime() - until < 0) {
                  Thread.sleep(1);
                }
                got.get().release();
              }
            });
      }
      await(Duration.ofSeconds(10), "readers take turns", () -> readerHolds.get() >= 10);
      LockClient writerClient = client(renewing(), Duration.ofMillis(250));
      Duration bound = writerClient.config().recheck().plus(limits().tolerance().multipliedBy(2));
      long start = System.nanoTime();
      int holdsBefore = readerHolds.get();
      Optional<Lease> w = write(writerClient, name).tryAcquire(bound);
      long took = ms(System.nanoTime() - start);
      int overtaken = readerHolds.get() - holdsBefore;
      stop.set(true);
      for (java.util.concurrent.Semaphore s : mayGo) {
        s.release();
      }
      assertThat(w.isPresent() && took <= bound.toMillis())
          .withFailMessage(
              "read-write locks broken: a writer waiting behind a steady stream of overlapping"
                  + " readers %s (bound: its recheck interval + 2 tolerances = %d ms; %d readers"
                  + " got in meanwhile): no new reader may be granted while a writer waits (writer"
                  + " preference), or a writer can starve",
              w.isPresent() ? "got the lock only after " + took + " ms" : "never got the lock",
              bound.toMillis(),
              overtaken)
          .isTrue();
      assertThat(w.get().release()).isTrue();
      Optional<Lease> after = read(client(), name).tryAcquire();
      after.ifPresent(Lease::release);
      assertThat(after)
          .withFailMessage(
              "read-write locks broken: right after the writer that had waited released the lock, a"
                  + " new reader's tryAcquire() was refused: a writer's mark must go when it is"
                  + " granted, not linger until it expires")
          .isPresent();
    }

    @Test
    @DisplayName(
        "19.4 MUST: no upgrade or downgrade: a waiting acquire of the other side throws"
            + " IllegalStateException at once; tryAcquire() is empty")
    void rule19_4_noUpgradeOrDowngrade() throws Exception {
      requireFeature(Feature.READ_WRITE_LOCKS, "19.4");
      String name = name("rw-upgrade");
      DistributedReadWriteLock rw = client().readWriteLock(name);
      Lease r = rw.readLock().acquire(Duration.ofSeconds(10));
      long start = System.nanoTime();
      Throwable up = catchThrowable(() -> rw.writeLock().acquire(Duration.ofSeconds(5)));
      assertThat(up)
          .withFailMessage(
              "read-write locks broken: a thread holding the read lock asked for the write lock and"
                  + " got %s instead of IllegalStateException",
              up == null ? "it" : up)
          .isInstanceOf(IllegalStateException.class);
      assertThat(ms(System.nanoTime() - start))
          .as("ms until the refused upgrade failed")
          .isLessThanOrEqualTo(limits().tolerance().toMillis());
      assertThat(rw.writeLock().tryAcquire())
          .as("read-write locks broken: tryAcquire() of the write lock while holding the read lock")
          .isEmpty();
      assertThat(r.release()).isTrue();
      Lease w = rw.writeLock().acquire(Duration.ofSeconds(10));
      start = System.nanoTime();
      Throwable down = catchThrowable(() -> rw.readLock().acquire(Duration.ofSeconds(5)));
      assertThat(down)
          .withFailMessage(
              "read-write locks broken: a thread holding the write lock asked for the read lock and"
                  + " got %s instead of IllegalStateException",
              down == null ? "it" : down)
          .isInstanceOf(IllegalStateException.class);
      assertThat(ms(System.nanoTime() - start))
          .as("ms until the refused downgrade failed")
          .isLessThanOrEqualTo(limits().tolerance().toMillis());
      assertThat(rw.readLock().tryAcquire())
          .as("read-write locks broken: tryAcquire() of the read lock while holding the write lock")
          .isEmpty();
      assertThat(w.release()).isTrue();
      Optional<Lease> again = rw.readLock().tryAcquire();
      assertThat(again).as("the read lock after the write lock's release").isPresent();
      again.get().release();
    }

    @Test
    @DisplayName(
        "19.5 MUST: a write token is above every earlier lease's, and a read token above every"
            + " earlier write's")
    void rule19_5_tokens() throws Exception {
      requireFeature(Feature.READ_WRITE_LOCKS, "19.5");
      requireFeature(Feature.FENCING, "19.5");
      String name = name("rw-tokens");
      LockClient[] cs = {client(), client()};
      long lastWrite = 0;
      long lastAny = 0;
      for (int i = 0; i < 5; i++) {
        Lease ra = read(cs[0], name).acquire(Duration.ofSeconds(10));
        Lease rb = read(cs[1], name).acquire(Duration.ofSeconds(10));
        for (Lease r : List.of(ra, rb)) {
          if (r.fencingToken() <= lastWrite) {
            fail(
                "fencing broken: a read lease got token "
                    + r.fencingToken()
                    + " after a write lease's "
                    + lastWrite
                    + ": a read token must be above every earlier write token (one counter per"
                    + " read-write lock)");
          }
        }
        lastAny = Math.max(ra.fencingToken(), rb.fencingToken());
        ra.release();
        rb.release();
        Lease w = write(cs[i % 2], name).acquire(Duration.ofSeconds(10));
        if (w.fencingToken() <= lastAny) {
          fail(
              "fencing broken: a write lease got token "
                  + w.fencingToken()
                  + " after a lease with token "
                  + lastAny
                  + ": a write token must be above every earlier lease's, read or write (one"
                  + " counter per read-write lock)");
        }
        lastWrite = w.fencingToken();
        lastAny = lastWrite;
        w.release();
      }
    }

    @Test
    @DisplayName(
        "19.6 MUST: readers that vanish or stop renewing free the lock for a writer within lease +"
            + " expiry slack, and a vanished writer frees it for readers")
    void rule19_6_vanishedHoldersFreeTheLock() throws Exception {
      requireFeature(Feature.READ_WRITE_LOCKS, "19.6");
      String name = name("rw-vanished");
      LockClient doomedReader = client();
      LockClient unrenewed = client(expiring());
      read(doomedReader, name).acquire(Duration.ofSeconds(10));
      read(unrenewed, name).acquire(Duration.ofSeconds(10));
      Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
      ((Abandonable) doomedReader).abandon();
      long start = System.nanoTime();
      LockClient doomedWriter = client();
      Optional<Lease> w = write(doomedWriter, name).tryAcquire(bound.plus(limits().tolerance()));
      long took = ms(System.nanoTime() - start);
      assertThat(w.isPresent() && took <= bound.toMillis())
          .withFailMessage(
              "read-write locks broken: a writer %s after one reader vanished and another stopped"
                  + " renewing (bound: lease + expiry slack + tolerance = %d ms): a read lease must"
                  + " end with its lease when its holder is gone",
              w.isPresent() ? "got the lock only " + took + " ms" : "never got " + "the lock",
              bound.toMillis())
          .isTrue();
      ((Abandonable) doomedWriter).abandon();
      start = System.nanoTime();
      Optional<Lease> r = read(client(), name).tryAcquire(bound.plus(limits().tolerance()));
      took = ms(System.nanoTime() - start);
      assertThat(r.isPresent() && took <= bound.toMillis())
          .withFailMessage(
              "read-write locks broken: a reader %s after the writer vanished (bound: lease +"
                  + " expiry slack + tolerance = %d ms): a write lease must end with its lease when"
                  + " its holder is gone",
              r.isPresent() ? "got the lock only " + took + " ms" : "never got the lock",
              bound.toMillis())
          .isTrue();
      r.get().release();
    }

    @Test
    @DisplayName(
        "19.7 MUST: a waiting writer that vanishes without withdrawing holds readers back only for"
            + " a few recheck intervals")
    void rule19_7_vanishedWaitingWriterLetsReadersIn() throws Exception {
      requireFeature(Feature.READ_WRITE_LOCKS, "19.7");
      String name = name("rw-ghost-writer");
      Duration recheck = Duration.ofMillis(200);
      Lease reader =
          read(client(), name)
              .acquire(Duration.ofSeconds(10)); // held throughout: the lock is never free
      LockClient doomed = client(renewing(), recheck);
      DistributedLock writer = write(doomed, name);
      int polled = probe.polls(name, Claim.Kind.WRITE);
      Thread waiting =
          background(
              "rw-doomed-writer",
              () -> {
                try {
                  writer.acquire(Duration.ofSeconds(60)).release();
                } catch (LockException e) {
                  // its client vanished while it waited
                }
              });
      awaitQueued(waiting, name, Claim.Kind.WRITE, polled, "the writer waits behind the reader");
      LockClient readers = client(renewing(), recheck);
      Optional<Lease> held = read(readers, name).tryAcquire();
      held.ifPresent(Lease::release);
      assertThat(held)
          .withFailMessage(
              "read-write locks broken: a new reader was granted while a writer waited (no writer "
                  + "preference)")
          .isEmpty();
      // the writer's process dies: its withdrawal never reaches the server
      probe.dropWithdrawals(name, Claim.Kind.WRITE);
      ((Abandonable) doomed).abandon();
      long start = System.nanoTime();
      Duration bound =
          recheck.multipliedBy(4).plus(limits().expirySlack()).plus(limits().tolerance());
      Optional<Lease> got = read(readers, name).tryAcquire(bound.plus(limits().tolerance()));
      long took = ms(System.nanoTime() - start);
      got.ifPresent(Lease::release);
      assertThat(got.isPresent() && took <= bound.toMillis())
          .withFailMessage(
              "read-write locks broken: readers %s after a waiting writer vanished without"
                  + " withdrawing (bound: 4 of its recheck intervals of %d ms + expiry slack +"
                  + " tolerance = %d ms): a waiting writer's mark must end by itself when the"
                  + " writer stops polling, or one crash blocks every reader for ever",
              got.isPresent() ? "got in only " + took + " ms" : "never got in",
              recheck.toMillis(),
              bound.toMillis())
          .isTrue();
      assertThat(reader.release()).isTrue();
    }

    @Test
    @DisplayName(
        "19.8 MUST: a waiting writer that gives up (interrupt, timeout) lets the readers it held"
            + " back in at once")
    void rule19_8_withdrawnWriterLetsReadersIn() throws Exception {
      requireFeature(Feature.READ_WRITE_LOCKS, "19.8");
      String name = name("rw-withdrawn-writer");
      boolean notified = guarantees().has(Feature.NOTIFIED_WAKEUP);
      // with notified wake-up only a wake-up can let the reader in within the bound
      LockClient readers = notified ? client(renewing(), Duration.ofMinutes(1)) : client();
      Duration bound =
          notified ? limits().tolerance() : readers.config().recheck().plus(limits().tolerance());
      Lease reader = read(client(longLease()), name).acquire(Duration.ofSeconds(10));
      for (String how : List.of("interrupted", "timed out")) {
        DistributedLock writer = write(client(), name);
        int polled = probe.polls(name, Claim.Kind.WRITE);
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread waiting =
            background(
                "rw-writer-" + how.replace(' ', '-'),
                () -> {
                  try {
                    Optional<Lease> w =
                        how.equals("interrupted")
                            ? Optional.of(writer.acquire(Duration.ofSeconds(60)))
                            : writer.tryAcquire(limits().tolerance().dividedBy(2));
                    w.ifPresent(Lease::release);
                    outcome.set(
                        w.isPresent()
                            ? new AssertionError("the writer got the lock while a reader held it")
                            : null);
                  } catch (Throwable e) {
                    outcome.set(e);
                  }
                });
        awaitQueued(waiting, name, Claim.Kind.WRITE, polled, "the writer waits behind the reader");
        int readPolls = probe.polls(name, Claim.Kind.READ);
        CompletableFuture<Lease> heldBack =
            read(readers, name).acquireAsync(Duration.ofSeconds(60));
        await(
            Duration.ofSeconds(10),
            "the new reader polls",
            () -> probe.polls(name, Claim.Kind.READ) > readPolls);
        Thread.sleep(20);
        assertThat(heldBack)
            .withFailMessage(
                "read-write locks broken: a new reader was granted while a writer waited (no "
                    + "writer preference)")
            .isNotDone();
        int withdrawn = probe.abandons(name, Claim.Kind.WRITE);
        if (how.equals("interrupted")) {
          waiting.interrupt();
        }
        await(
            Duration.ofSeconds(10),
            "the writer withdraws",
            () -> probe.abandons(name, Claim.Kind.WRITE) > withdrawn);
        long start = System.nanoTime();
        Lease in;
        try {
          in =
              heldBack.get(
                  bound.toMillis() + limits().tolerance().toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
          in = null;
        }
        long took = ms(System.nanoTime() - start);
        assertThat(in != null && took <= bound.toMillis())
            .withFailMessage(
                "read-write locks broken: a reader held back by a waiting writer that %s %s (bound"
                    + " %d ms): a writer's withdrawal must end its mark and wake the readers it"
                    + " held back",
                how,
                in == null ? "was still waiting" : "got in only " + took + " ms later",
                bound.toMillis())
            .isTrue();
        in.release();
        waiting.join(limits().tolerance().toMillis());
        if (how.equals("interrupted")) {
          assertThat(outcome.get())
              .as("what the interrupted writer threw")
              .isInstanceOf(InterruptedException.class);
        }
      }
      assertThat(reader.release()).isTrue();
    }

    @Test
    @DisplayName(
        "19.9 MUST: releases are owner-checked per lease: a stale reader's or writer's release"
            + " frees nothing another lease holds")
    void rule19_9_releasesAreOwnerChecked() throws Exception {
      requireFeature(Feature.READ_WRITE_LOCKS, "19.9");
      String name = name("rw-owner");
      LockClient a = client();
      LockClient b = client();
      Lease r1 = read(a, name).acquire(Duration.ofSeconds(10));
      // r1's own grant (its owner id), taken before r2's: readers holding together may share a
      // token, so that a look-up
      // by token afterwards could find r2's grant and re-send the release of the lease that still
      // holds the lock
      BackendLease staleRead = granted(name, Claim.Kind.READ, r1);
      Lease r2 = read(b, name).acquire(Duration.ofSeconds(10));
      assertThat(r1.release()).isTrue();
      boolean again = releaseAgain(staleRead);
      Optional<Lease> w = write(client(), name).tryAcquire();
      w.ifPresent(Lease::release);
      assertThat(w)
          .withFailMessage(
              "read-write locks broken: the release of a read lease already released, sent to the"
                  + " server again (a delayed or repeated request), freed the share another reader"
                  + " holds, and a writer got in (it answered %s): releases must be owner-checked"
                  + " per lease, not counted",
              again)
          .isEmpty();
      assertThat(again)
          .withFailMessage(
              "read-write locks broken: the release of a read lease already released, sent again, "
                  + "answered true")
          .isFalse();
      assertThat(r2.release()).isTrue();
      Lease w1 = write(a, name).acquire(Duration.ofSeconds(10));
      assertThat(w1.release()).isTrue();
      Lease w2 = write(b, name).acquire(Duration.ofSeconds(10));
      boolean againW = releaseAgain(name, Claim.Kind.WRITE, w1);
      Optional<Lease> r = read(client(), name).tryAcquire();
      r.ifPresent(Lease::release);
      assertThat(r)
          .withFailMessage(
              "read-write locks broken: the release of a write lease already released, sent to the"
                  + " server again, freed the write lock another writer holds (it answered %s):"
                  + " releases must be owner-checked per lease",
              againW)
          .isEmpty();
      assertThat(againW)
          .withFailMessage(
              "read-write locks broken: the release of a write lease already released, sent again, "
                  + "answered true")
          .isFalse();
      assertThat(w2.release()).isTrue();
    }

    @Test
    @DisplayName(
        "19.12 MUST: a reader with auto-renew keeps the lock for 3.5 leases while a writer of"
            + " another client waits, and the writer gets it once the reader releases")
    void rule19_12_renewedReaderHoldsBeyondTheLease() throws Exception {
      requireFeature(Feature.READ_WRITE_LOCKS, "19.12");
      requireFeature(Feature.RENEWAL, "19.12");
      String name = name("rw-renewed-reader");
      Lease reader = read(client(), name).acquire(Duration.ofSeconds(10));
      long grantedAt = System.nanoTime();
      LockClient writers = client();
      long watch =
          limits().lease().multipliedBy(7).dividedBy(2).toNanos() - (System.nanoTime() - grantedAt);
      Optional<Lease> intruder =
          write(writers, name).tryAcquire(Duration.ofNanos(Math.max(1, watch)));
      long at = ms(System.nanoTime() - grantedAt);
      intruder.ifPresent(Lease::release);
      assertThat(intruder)
          .withFailMessage(
              "read-write locks broken: a writer of another client got the lock %d ms after a"
                  + " reader with auto-renew took it (lease %d ms), while that reader still held"
                  + " it: a read lease's renewal must move its expiry on the server (a renewal that"
                  + " answers renewed but moves nothing lets the lease run out)",
              at, limits().lease().toMillis())
          .isEmpty();
      assertThat(reader.isValid())
          .as("read-write locks broken: isValid() of a read lease renewed for 3.5 leases")
          .isTrue();
      assertThat(reader.release())
          .as("read-write locks broken: release() of a read lease renewed for 3.5 leases")
          .isTrue();
      Optional<Lease> writer = write(writers, name).tryAcquire(limits().tolerance());
      assertThat(writer)
          .withFailMessage(
              "read-write locks broken: once the renewed reader released, a writer did not get the "
                  + "lock within %d ms",
              limits().tolerance().toMillis())
          .isPresent();
      writer.get().release();
    }

    @Test
    @DisplayName(
        "19.10 MUST: a reader waiting behind a writer, and a writer waiting behind a reader, get"
            + " the lock within the wake-up bound of the release (median of 5 each)")
    void rule19_10_waitersAreWokenByARelease() throws Exception {
      requireFeature(Feature.READ_WRITE_LOCKS, "19.10");
      requireFeature(Feature.NOTIFIED_WAKEUP, Guarantees.Primitive.READ_WRITE_LOCK, "19.10");
      String name = name("rw-wake");
      LockClient holder = client();
      LockClient waiterClient = client();
      Random random = new Random();
      for (Claim.Kind waits : List.of(Claim.Kind.READ, Claim.Kind.WRITE)) {
        List<Long> handOffs = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
          Lease held =
              (waits == Claim.Kind.READ ? write(holder, name) : read(holder, name))
                  .acquire(Duration.ofSeconds(10));
          DistributedLock side =
              waits == Claim.Kind.READ ? read(waiterClient, name) : write(waiterClient, name);
          AtomicLong grantedAt = new AtomicLong();
          int polled = probe.polls(name, waits);
          Thread waiter =
              background(
                  "rw-wake-" + waits + "-" + i,
                  () -> {
                    try (Lease l = side.acquire(Duration.ofSeconds(30))) {
                      grantedAt.set(System.nanoTime());
                    }
                  });
          awaitQueued(waiter, name, waits, polled, "the " + waits + " waiter blocks");
          Thread.sleep(random.nextInt(50));
          long releasedAt = System.nanoTime();
          assertThat(held.release()).isTrue();
          waiter.join(TimeUnit.SECONDS.toMillis(30));
          assertThat(grantedAt.get())
              .as("read-write locks broken: hand-off " + i + " to a " + waits + " waiter happened")
              .isNotZero();
          handOffs.add(grantedAt.get() - releasedAt);
        }
        Collections.sort(handOffs);
        long median = ms(handOffs.get(handOffs.size() / 2));
        assertThat(median)
            .withFailMessage(
                "read-write locks broken: median hand-off from the release of the %s lock to a"
                    + " waiting %s of another client was %d ms (wake-up bound %d ms); all in ms:"
                    + " %s: a release of either side must wake the read-write lock's waiters",
                waits == Claim.Kind.READ ? "write" : "read",
                waits == Claim.Kind.READ ? "reader" : "writer",
                median,
                limits().wakeUp().toMillis(),
                handOffs.stream().map(n -> ms(n)).collect(Collectors.toList()))
            .isLessThanOrEqualTo(limits().wakeUp().toMillis());
      }
    }

    @Test
    @DisplayName(
        "19.11 MUST: a reader waiting behind a writer, and a writer waiting behind a reader, sleep"
            + " until woken: each polls about once per recheck interval, not in a loop")
    void rule19_11_waitersDoNotPoll() throws Exception {
      requireFeature(Feature.READ_WRITE_LOCKS, "19.11");
      requireFeature(Feature.NOTIFIED_WAKEUP, Guarantees.Primitive.READ_WRITE_LOCK, "19.11");
      LockClient holder = client(longLease());
      for (Claim.Kind waits : List.of(Claim.Kind.READ, Claim.Kind.WRITE)) {
        String name = name("rw-no-polling-" + waits);
        Lease held =
            (waits == Claim.Kind.READ ? write(holder, name) : read(holder, name))
                .acquire(Duration.ofSeconds(10));
        LockClient waiterClient = client();
        try {
          assertClaimWaiterSleeps(
              name,
              waits,
              waits == Claim.Kind.READ ? read(waiterClient, name) : write(waiterClient, name),
              waiterClient,
              "read-write locks");
        } finally {
          held.release();
        }
      }
    }
  }
}
