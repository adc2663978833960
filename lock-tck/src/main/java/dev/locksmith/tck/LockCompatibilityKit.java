package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.Guarantees;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockOptions;
import dev.locksmith.Locks;
import dev.locksmith.spi.LockProvider;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
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
 *
 * <p>Each rule group is written in a file of its own, as an interface of tests ({@link
 * MutualExclusionRules}, {@link SemaphoreRules}, ...) on the plumbing of {@link KitRules}; the
 * {@code @Nested} classes at the end of this class run them, one per group, with the group's name.
 * A group whose rules all need one feature states it once ({@link RequiresFeature}).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@ExtendWith({RuleFailureWording.class, GroupFeatureCheck.class, RuleSelection.class})
public abstract class LockCompatibilityKit {
  private final List<LockClient> clients = new CopyOnWriteArrayList<>();
  final List<Throwable> backgroundErrors = new CopyOnWriteArrayList<>();
  final List<Thread> threads = new CopyOnWriteArrayList<>();
  final List<Process> processes = new CopyOnWriteArrayList<>();

  /** The {@code HELD <token>} line each holding process printed ({@link KitRules#holdInChild}). */
  final Map<Process, String> childLines = new ConcurrentHashMap<>();

  private TckTimeouts timeouts;
  private String testTag;
  KitProbe probe;
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
  LockClient client(LockOptions options, Duration recheck) {
    return client(options, recheck, null);
  }

  /**
   * @param options default options of the client
   * @param recheck the longest its waiters sleep without a wake-up; null for the URI's setting
   * @param application the client's {@code application}; null for the default
   * @return a new client, closed after the test
   */
  LockClient client(LockOptions options, Duration recheck, String application) {
    if (provider == null) {
      provider = probe.wrap(provider());
    }
    // Rules take leases they never release (a holder that simply keeps the lock), and a lease
    // dropped by its code is released by the client once the garbage collector finds it (the
    // core's own behaviour, tested in lock-api): keep them, so that no rule's outcome depends on
    // when a collection happens to run.
    LockConfig.Builder config =
        LockConfig.builder()
            .uri(uri())
            .defaults(options)
            .droppedLeases(LockConfig.DroppedLeases.KEEP);
    if (recheck != null) {
      config.recheck(recheck);
    }
    if (application != null) {
      config.application(application);
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

  // ------------------------------------------------------------------ the rules, one group each

  /**
   * A group's tests, run on this kit instance: the rules' methods reach it through {@link #kit}.
   */
  abstract class RuleGroup implements KitRules {
    @Override
    public final LockCompatibilityKit kit() {
      return LockCompatibilityKit.this;
    }
  }

  @Nested
  @DisplayName("Rule 1: mutual exclusion")
  class MutualExclusion extends RuleGroup implements MutualExclusionRules {}

  @Nested
  @DisplayName("Rule 2: ownership")
  class Ownership extends RuleGroup implements OwnershipRules {}

  @Nested
  @DisplayName("Rule 3: expiry")
  class Expiry extends RuleGroup implements ExpiryRules {}

  @Nested
  @DisplayName("Rule 4: renewal")
  class Renewal extends RuleGroup implements RenewalRules {}

  @Nested
  @DisplayName("Rule 5: fencing")
  class Fencing extends RuleGroup implements FencingRules {}

  @Nested
  @DisplayName("Rule 6: timeouts")
  class Timeouts extends RuleGroup implements TimeoutRules {}

  @Nested
  @DisplayName("Rule 7: interrupts")
  class Interrupts extends RuleGroup implements InterruptRules {}

  @Nested
  @DisplayName("Rule 8: cancellation and asynchronous acquire")
  class Cancellation extends RuleGroup implements CancellationRules {}

  @Nested
  @DisplayName("Rule 9: reentrancy")
  class Reentrancy extends RuleGroup implements ReentrancyRules {}

  @Nested
  @DisplayName("Rule 10: FIFO fairness")
  class Fairness extends RuleGroup implements FairnessRules {}

  @Nested
  @DisplayName("Rule 11: notified wake-up")
  class WakeUp extends RuleGroup implements WakeUpRules {}

  @Nested
  @DisplayName("Rule 12: bad input")
  class BadInput extends RuleGroup implements BadInputRules {}

  @Nested
  @DisplayName("Rule 13: many locks")
  class ManyLocks extends RuleGroup implements ManyLocksRules {}

  @Nested
  @DisplayName("Rule 14: loss detection")
  class LossDetection extends RuleGroup implements LossDetectionRules {}

  @Nested
  @DisplayName("Rule 15: closing")
  class Closing extends RuleGroup implements ClosingRules {}

  @Nested
  @DisplayName("Rule 16: state reads")
  class StateReads extends RuleGroup implements StateReadRules {}

  @Nested
  @DisplayName("Rule 17: lease control")
  class LeaseControl extends RuleGroup implements LeaseControlRules {}

  @Nested
  @DisplayName("Rule 18: semaphores")
  class Semaphores extends RuleGroup implements SemaphoreRules, SemaphoreEdgeRules {}

  @Nested
  @DisplayName("Rule 19: read-write locks")
  class ReadWriteLocks extends RuleGroup implements ReadWriteLockRules, ReadWriteLockReleaseRules {}

  @Nested
  @DisplayName("Rule 20: lock sets")
  class LockSets extends RuleGroup implements LockSetRules {}

  @Nested
  @DisplayName("Rule 21: leader latches")
  class LeaderLatches extends RuleGroup implements LeaderLatchRules {}

  @Nested
  @DisplayName("Rule 22: break-glass")
  class BreakGlass extends RuleGroup implements BreakGlassRules {}

  @Nested
  @DisplayName("Rule 23: listing")
  class Listing extends RuleGroup implements ListingRules {}

  @Nested
  @DisplayName("Rule 24: elections")
  class Elections extends RuleGroup implements ElectionRules {}
}
