package dev.locksmith.shedlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.locksmith.Guarantees;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.LockState;
import dev.locksmith.Locks;
import dev.locksmith.spi.Abandonable;
import dev.locksmith.tck.TckTimeouts;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.test.support.AbstractExtensibleLockProviderIntegrationTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * ShedLock's own published provider kit (its 15 tests, inherited) plus this adapter's rules,
 * including what ShedLock's newer, unpublished provider suite adds, for one backend set-up on its
 * real server. A subclass names the URI and, for session backends, the expiry slack. assertLocked /
 * assertUnlocked look through a second client: a lock is held when that client cannot take it, free
 * when it can.
 */
abstract class ShedLockContract extends AbstractExtensibleLockProviderIntegrationTest {
  static final TckTimeouts TIMES = TckTimeouts.fromEnvironment();

  /**
   * Servers judge expiry by their own clocks, a little after the client's (JDBC takes over 25 ms
   * late).
   */
  private static final Duration FREE_WITHIN = Duration.ofMillis(Math.round(300 * TIMES.scale()));

  /**
   * What "not before" allows for the gap between the client's and the server's start of a lease.
   */
  private static final Duration EARLY = Duration.ofMillis(15);

  private static final Map<String, LockClient> CLIENTS = new ConcurrentHashMap<>();

  /**
   * @return the lock URI of this set-up's server
   */
  protected abstract String uri() throws Exception;

  /**
   * @return how long after its expiry a vanished holder's lock may stay taken (at most 2 s, rule
   *     17.9)
   */
  protected Duration expirySlack() {
    return Duration.ZERO;
  }

  private String uriOrFail() {
    try {
      return uri();
    } catch (Exception e) {
      throw new IllegalStateException(
          "could not start the server of " + getClass().getSimpleName() + ": " + e, e);
    }
  }

  /**
   * The URI a child JVM connects with: {@link #uri()}, with whatever a cold JVM on a loaded machine
   * needs more time for (a backend overrides it with longer timeouts).
   */
  protected String childUri() {
    return uriOrFail();
  }

  /** The client the provider under test locks through, one per set-up. */
  protected LockClient client() {
    return CLIENTS.computeIfAbsent(
        "holder " + getClass().getName(), k -> Locks.connect(uriOrFail()));
  }

  /** A second client, standing for another process, that looks at the lock. */
  protected LockClient observer() {
    return CLIENTS.computeIfAbsent(
        "observer " + getClass().getName(), k -> Locks.connect(uriOrFail()));
  }

  @AfterAll
  static void closeClients() {
    CLIENTS.values().forEach(LockClient::close);
    CLIENTS.clear();
  }

  @Override
  protected LocksmithLockProvider getLockProvider() {
    return new LocksmithLockProvider(client());
  }

  @Override
  protected void assertLocked(String lockName) {
    assertThat(takeAndGiveBack(lockName))
        .as("lock '" + lockName + "' must be held, so another client cannot take it")
        .isFalse();
  }

  @Override
  protected void assertUnlocked(String lockName) {
    assertThat(await(FREE_WITHIN, () -> takeAndGiveBack(lockName)))
        .as(
            "lock '"
                + lockName
                + "' must be free for another client within "
                + FREE_WITHIN.toMillis()
                + " ms")
        .isTrue();
  }

  private boolean takeAndGiveBack(String lockName) {
    Optional<Lease> lease =
        observer()
            .lock(lockName, LockOptions.builder().autoRenew(false).reentrant(false).build())
            .tryAcquire();
    lease.ifPresent(Lease::release);
    return lease.isPresent();
  }

  static boolean await(Duration within, BooleanSupplier condition) {
    long deadline = System.nanoTime() + within.toNanos();
    while (true) {
      if (condition.getAsBoolean()) {
        return true;
      }
      if (System.nanoTime() - deadline > 0) {
        return false;
      }
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while awaiting a condition", e);
      }
    }
  }

  /**
   * Polls another client's tryAcquire until it gets the lock; returns when, in ms since {@code
   * startNanos}.
   */
  private long millisUntilFree(String name, long startNanos, Duration bound) {
    assertThat(await(bound, () -> takeAndGiveBack(name)))
        .as("lock '" + name + "' must be free again within " + bound.toMillis() + " ms")
        .isTrue();
    return (System.nanoTime() - startNanos) / 1_000_000;
  }

  private static LockConfiguration config(String name, Duration atMost, Duration atLeast) {
    return new LockConfiguration(ClockProvider.now(), name, atMost, atLeast);
  }

  private static String name(String what) {
    return "shedlock-" + what + "-" + UUID.randomUUID();
  }

  @Test
  @DisplayName(
      "lockAtMostFor: the server frees the lock of a holder that vanished, not before and soon"
          + " after")
  void lockAtMostForIsEnforcedByTheServer() {
    String name = name("at-most");
    Duration atMost = Duration.ofMillis(800);
    LockClient doomed = Locks.connect(uriOrFail());
    long start = System.nanoTime();
    Optional<SimpleLock> lock =
        new LocksmithLockProvider(doomed).lock(config(name, atMost, Duration.ZERO));
    assertThat(lock).isNotEmpty();
    ((Abandonable) doomed).abandon(); // a crash: nothing released, connections dropped
    assertLocked(name);
    long freeAt = millisUntilFree(name, start, atMost.plus(expirySlack()).plus(TIMES.tolerance()));
    assertThat(freeAt)
        .as("free after lockAtMostFor")
        .isGreaterThanOrEqualTo(atMost.minus(EARLY).toMillis());
  }

  @Test
  @DisplayName(
      "lockAtLeastFor: the server keeps the lock after unlock and a shutdown of the client, then"
          + " frees it")
  void lockAtLeastForSurvivesClientShutdown() {
    String name = name("at-least-close");
    Duration atLeast = Duration.ofMillis(1200);
    LockClient closing = Locks.connect(uriOrFail());
    long start = System.nanoTime();
    Optional<SimpleLock> lock =
        new LocksmithLockProvider(closing).lock(config(name, Duration.ofSeconds(30), atLeast));
    assertThat(lock).isNotEmpty();
    lock.get().unlock();
    closing.close(); // closing releases what it holds: the hold after unlock is no longer its own
    assertLocked(name);
    long freeAt = millisUntilFree(name, start, atLeast.plus(expirySlack()).plus(TIMES.tolerance()));
    assertThat(freeAt)
        .as("held until lockAtLeastUntil")
        .isGreaterThanOrEqualTo(atLeast.minus(EARLY).toMillis());
  }

  @Test
  @DisplayName(
      "lockAtLeastFor: the server keeps the lock after unlock and a SIGKILL of the process, then"
          + " frees it")
  void lockAtLeastForSurvivesSigkill() throws Exception {
    assumeTrue(
        client().guarantees().has(Guarantees.Feature.SHARED_ACROSS_PROCESSES),
        "the backend does not coordinate separate processes (no SHARED_ACROSS_PROCESSES)");
    String name = name("at-least-kill");
    Duration atLeast = Duration.ofMillis(2500);
    String java =
        System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    ProcessBuilder pb =
        new ProcessBuilder(
            java,
            "-Xmx128m",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            System.getProperty("java.class.path"),
            ShedLockJobProcess.class.getName(),
            name,
            "30000",
            Long.toString(atLeast.toMillis()));
    pb.environment().put("LOCKSMITH_URI", childUri());
    pb.redirectError(ProcessBuilder.Redirect.INHERIT);
    Process child = pb.start();
    long start;
    try (BufferedReader out =
        new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
      String line = out.readLine();
      start = System.nanoTime();
      assertThat(line)
          .as(
              "the child's report (null: it exited before reporting, with status %s; its stderr"
                  + " is in this test's output)",
              line == null && child.waitFor(10, TimeUnit.SECONDS) ? child.exitValue() : "unknown")
          .startsWith("UNLOCKED ");
      child.destroyForcibly(); // SIGKILL
      assertThat(child.waitFor(10, TimeUnit.SECONDS)).isTrue();
    } finally {
      child.destroyForcibly();
    }
    assertLocked(name);
    long freeAt = millisUntilFree(name, start, atLeast.plus(expirySlack()).plus(TIMES.tolerance()));
    // the child started its hold before it printed: only the upper bound is measured from here
    assertThat(freeAt).as("freed by the server after lockAtLeastUntil").isGreaterThan(0);
  }

  @Test
  @DisplayName(
      "extend: the server keeps the lock past the old lockAtMostFor, and frees it at the new one if"
          + " the holder vanishes")
  void extendMovesTheServersExpiry() {
    String name = name("extend");
    LockClient doomed = Locks.connect(uriOrFail());
    Optional<SimpleLock> lock =
        new LocksmithLockProvider(doomed).lock(config(name, Duration.ofMillis(500), Duration.ZERO));
    assertThat(lock).isNotEmpty();
    long start = System.nanoTime();
    Optional<SimpleLock> extended = lock.get().extend(Duration.ofMillis(1500), Duration.ZERO);
    assertThat(extended).isNotEmpty();
    ((Abandonable) doomed).abandon();
    long freeAt =
        millisUntilFree(
            name, start, Duration.ofMillis(1500).plus(expirySlack()).plus(TIMES.tolerance()));
    assertThat(freeAt)
        .as("held past the old expiry, until the new one")
        .isGreaterThanOrEqualTo(1500 - EARLY.toMillis());
  }

  @Test
  @DisplayName("extend after expiry answers empty and leaves the new holder alone")
  void extendAfterExpiryLeavesTheNewHolderAlone() {
    String name = name("extend-expired");
    Optional<SimpleLock> lock =
        getLockProvider().lock(config(name, Duration.ofMillis(100), Duration.ZERO));
    assertThat(lock).isNotEmpty();
    List<Lease> taken = new ArrayList<>();
    LockOptions options =
        LockOptions.builder().lease(Duration.ofSeconds(10)).autoRenew(false).build();
    assertThat(
            await(
                Duration.ofMillis(100).plus(expirySlack()).plus(TIMES.tolerance()),
                () -> {
                  observer().lock(name, options).tryAcquire().ifPresent(taken::add);
                  return !taken.isEmpty();
                }))
        .as("another client takes the expired lock")
        .isTrue();
    Lease newHolder = taken.get(0);
    try {
      assertThat(lock.get().extend(Duration.ofSeconds(30), Duration.ZERO)).isEmpty();
      assertThat(newHolder.isValid()).isTrue();
      LockState state = observer().lock(name).state();
      if (state.isKnown()) {
        assertThat(state.isHeld()).as("the new holder still holds it").isTrue();
        state.fencingToken().ifPresent(t -> assertThat(t).isEqualTo(newHolder.fencingToken()));
      }
      assertThatThrownBy(() -> lock.get().unlock())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining(name);
    } finally {
      assertThat(newHolder.release()).as("the new holder still held the lock to the end").isTrue();
    }
  }

  @Test
  @DisplayName("after extend, only the new lock unlocks, and its lockAtLeastFor is the one kept")
  void unlockAfterExtend() {
    String name = name("unlock-extended");
    Optional<SimpleLock> lock =
        getLockProvider().lock(config(name, Duration.ofSeconds(10), Duration.ZERO));
    assertThat(lock).isNotEmpty();
    SimpleLock extended =
        lock.get().extend(Duration.ofSeconds(10), Duration.ofMillis(700)).orElseThrow();
    assertThatThrownBy(() -> lock.get().unlock())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("already unlocked or extended");
    assertLocked(name);
    long start = System.nanoTime();
    extended.unlock();
    assertLocked(name); // kept for the extension's lockAtLeastFor
    long freeAt =
        millisUntilFree(
            name, start, Duration.ofMillis(700).plus(expirySlack()).plus(TIMES.tolerance()));
    assertThat(freeAt).isGreaterThanOrEqualTo(700 - EARLY.toMillis() - 50);
    assertThatThrownBy(extended::unlock).isInstanceOf(IllegalStateException.class);
  }

  @Test
  @DisplayName("a second lock of the same name from the holding thread is refused, not reentered")
  void sameThreadIsRefused() {
    String name = name("same-thread");
    LocksmithLockProvider provider = getLockProvider();
    SimpleLock first =
        provider.lock(config(name, Duration.ofSeconds(10), Duration.ZERO)).orElseThrow();
    try {
      assertThat(provider.lock(config(name, Duration.ofSeconds(10), Duration.ZERO))).isEmpty();
      assertThat(
              new LocksmithLockProvider(client())
                  .lock(config(name, Duration.ofSeconds(10), Duration.ZERO)))
          .isEmpty();
    } finally {
      first.unlock();
    }
    provider.lock(config(name, Duration.ofSeconds(10), Duration.ZERO)).orElseThrow().unlock();
  }

  @Test
  @DisplayName("the running task sees its fencing token, which grows from run to run")
  void fencingTokenVisibleToTheTask() {
    String name = name("fenced");
    DefaultLockingTaskExecutor executor = new DefaultLockingTaskExecutor(getLockProvider());
    List<Long> seen = new ArrayList<>();
    for (int run = 0; run < 3; run++) {
      executor.executeWithLock(
          (Runnable)
              () -> {
                OptionalLong token = LocksmithLockProvider.currentFencingToken();
                assertThat(token).isPresent();
                assertThat(LocksmithLockProvider.fencingToken(name)).isEqualTo(token);
                assertThat(LocksmithLockProvider.fencingToken(name + "-other")).isEmpty();
                seen.add(token.getAsLong());
              },
          config(name, Duration.ofSeconds(10), Duration.ZERO));
      assertThat(LocksmithLockProvider.fencingToken(name)).as("outside the task").isEmpty();
    }
    assertThat(seen).hasSize(3);
    assertThat(seen.get(0)).isPositive();
    assertThat(seen).isSortedAccordingTo(Long::compare).doesNotHaveDuplicates();
  }

  // What ShedLock's provider suite on its main branch checks beyond the published 6.6.1 kit (see
  // README, Tests), each as a rule of this adapter on every backend.

  /** A lock taken again after an earlier one of the same name expired, and when its take began. */
  private record Retaken(SimpleLock lock, long startNanos) {}

  /**
   * Tries {@code provider.lock(name)} every 10 ms, each time with a fresh configuration of {@code
   * atMost}, until it answers a lock; fails after {@code within}.
   */
  private static Retaken retake(
      LocksmithLockProvider provider, String name, Duration atMost, Duration within) {
    List<Retaken> got = new ArrayList<>();
    boolean taken =
        await(
            within,
            () -> {
              long start = System.nanoTime();
              provider
                  .lock(config(name, atMost, Duration.ZERO))
                  .ifPresent(l -> got.add(new Retaken(l, start)));
              return !got.isEmpty();
            });
    assertThat(taken)
        .as("lock '" + name + "' must be free again within " + within.toMillis() + " ms")
        .isTrue();
    return got.get(0);
  }

  @Test
  @DisplayName(
      "after unlock, a provider on a client that never held the lock takes it at once; while it is"
          + " held, that provider answers empty rather than an error")
  void providerThatNeverHeldTheLockTakesItAfterUnlock() {
    String name = name("never-held");
    LocksmithLockProvider provider = getLockProvider();
    SimpleLock first =
        provider.lock(config(name, Duration.ofSeconds(10), Duration.ZERO)).orElseThrow();
    try (LockClient sawItHeld = Locks.connect(uriOrFail())) {
      LocksmithLockProvider other = new LocksmithLockProvider(sawItHeld);
      assertThat(other.lock(config(name, Duration.ofSeconds(10), Duration.ZERO)))
          .as("held through the first client")
          .isEmpty();
      first.unlock();
      Optional<SimpleLock> second = other.lock(config(name, Duration.ofSeconds(10), Duration.ZERO));
      assertThat(second)
          .as("free at once after unlock, for a client that saw it held")
          .isNotEmpty();
      assertLocked(name);
      assertThat(provider.lock(config(name, Duration.ofSeconds(10), Duration.ZERO)))
          .as("now held through the second client")
          .isEmpty();
      second.get().unlock();
    }
    try (LockClient neverSawIt = Locks.connect(uriOrFail())) {
      Optional<SimpleLock> third =
          new LocksmithLockProvider(neverSawIt)
              .lock(config(name, Duration.ofSeconds(10), Duration.ZERO));
      assertThat(third)
          .as("free after unlock, for a client connected after the lock was last used")
          .isNotEmpty();
      third.get().unlock();
    }
    provider.lock(config(name, Duration.ofSeconds(10), Duration.ZERO)).orElseThrow().unlock();
  }

  @Test
  @DisplayName(
      "a name of 255 characters locks and unlocks; a name no store may hold throws instead of"
          + " answering that the lock is held")
  void longNamesLockOrThrow() {
    String base = name("long") + "-ключ-鍵-";
    String longest = base + "n".repeat(255 - base.length());
    LocksmithLockProvider provider = getLockProvider();
    SimpleLock lock =
        provider.lock(config(longest, Duration.ofSeconds(10), Duration.ZERO)).orElseThrow();
    assertLocked(longest);
    assertThat(provider.lock(config(longest, Duration.ofSeconds(10), Duration.ZERO))).isEmpty();
    String cousin = longest.substring(0, 254) + "m";
    provider.lock(config(cousin, Duration.ofSeconds(10), Duration.ZERO)).orElseThrow().unlock();
    lock.unlock();
    assertUnlocked(longest);

    assertThatThrownBy(
            () -> provider.lock(config(longest + "n", Duration.ofSeconds(10), Duration.ZERO)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("256 characters");
    assertThatThrownBy(
            () ->
                provider.lock(
                    config(name("control") + "\n", Duration.ofSeconds(10), Duration.ZERO)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("control character");
  }

  @Test
  @DisplayName(
      "a provider whose client can no longer lock throws, instead of answering that the lock is"
          + " held")
  void closedClientThrows() {
    LockClient closing = Locks.connect(uriOrFail());
    LocksmithLockProvider provider = new LocksmithLockProvider(closing);
    closing.close();
    assertThatThrownBy(
            () -> provider.lock(config(name("closed"), Duration.ofSeconds(10), Duration.ZERO)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  @Test
  @DisplayName(
      "unlock of a lock that expired and was taken again through the same provider neither throws"
          + " nor frees the new holder")
  void staleUnlockLeavesTheNewHolderAlone() {
    String name = name("stale-unlock");
    LocksmithLockProvider provider = getLockProvider();
    Duration shortLease = Duration.ofMillis(300);
    SimpleLock stale = provider.lock(config(name, shortLease, Duration.ZERO)).orElseThrow();
    long staleToken = ((ShedLockLease) stale).fencingToken();
    SimpleLock current =
        retake(
                provider,
                name,
                Duration.ofSeconds(10),
                shortLease.plus(expirySlack()).plus(TIMES.tolerance()))
            .lock();
    long currentToken = ((ShedLockLease) current).fencingToken();
    assertThat(currentToken).as("the new holder's token").isGreaterThan(staleToken);

    stale.unlock(); // logs that it had expired

    assertLocked(name);
    assertThat(provider.lock(config(name, Duration.ofSeconds(10), Duration.ZERO)))
        .as("still held by the new holder")
        .isEmpty();
    assertThat(LocksmithLockProvider.fencingToken(name))
        .as("the task's token on this thread is still the new holder's")
        .isEqualTo(OptionalLong.of(currentToken));
    current.unlock();
    assertUnlocked(name);
    assertThat(LocksmithLockProvider.fencingToken(name)).isEmpty();
  }

  @Test
  @DisplayName(
      "extend of a lock that expired and was taken again through the same provider answers empty"
          + " and leaves the new holder's expiry where it was")
  void staleExtendLeavesTheNewHoldersExpiry() {
    String name = name("stale-extend");
    LocksmithLockProvider provider = getLockProvider();
    Duration shortLease = Duration.ofMillis(300);
    SimpleLock stale = provider.lock(config(name, shortLease, Duration.ZERO)).orElseThrow();
    Duration currentLease = Duration.ofMillis(1500);
    Retaken current =
        retake(
            provider, name, currentLease, shortLease.plus(expirySlack()).plus(TIMES.tolerance()));

    assertThat(stale.extend(Duration.ofSeconds(30), Duration.ZERO))
        .as("the stale lock cannot be extended")
        .isEmpty();

    // the new holder never unlocks: the server frees the lock at the end of its own lease, neither
    // sooner (the stale extend freed it) nor 30 s later (the stale extend lengthened it)
    long freeAt =
        millisUntilFree(
            name, current.startNanos(), currentLease.plus(expirySlack()).plus(TIMES.tolerance()));
    assertThat(freeAt)
        .as("free at the end of the new holder's lease")
        .isGreaterThanOrEqualTo(currentLease.minus(EARLY).toMillis());
  }
}
