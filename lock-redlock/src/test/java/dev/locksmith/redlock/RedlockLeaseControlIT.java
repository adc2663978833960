package dev.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.Locks;
import dev.locksmith.redis.internal.RedisScripts;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.Jedis;

/**
 * Extend and hold-after-release over five real servers, some of them killed: what the kit, whose
 * faults hit every server at once, cannot see. A minority down changes nothing; with a majority
 * down extend answers false and a hold fails, and neither leaves anything extended or held on the
 * servers that are still up. And a lease too short to outlast the drift allowance is refused at
 * once instead of being retried until the deadline.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedlockLeaseControlIT {
  private static final Duration LEASE = Duration.ofSeconds(2);
  private static final LockOptions UNRENEWED =
      LockOptions.builder().lease(LEASE).autoRenew(false).build();
  private static final LockOptions LONG_UNRENEWED =
      LockOptions.builder().lease(Duration.ofSeconds(20)).autoRenew(false).build();
  private RedlockServers servers;

  @BeforeEach
  void startServers() {
    servers = RedlockServers.start("lease-control", 5);
  }

  @AfterEach
  void stopServers() {
    if (servers != null) {
      servers.close();
    }
  }

  private LockClient connect() {
    return Locks.connect(servers.uri() + "?connect-timeout=1s");
  }

  private long pttl(int server, String lockName) {
    try (Jedis admin = servers.get(server).admin()) {
      return admin.pttl(RedlockServers.KEYS.owner(lockName));
    }
  }

  private String value(int server, String lockName) {
    try (Jedis admin = servers.get(server).admin()) {
      return admin.get(RedlockServers.KEYS.owner(lockName));
    }
  }

  /** Awaits a condition with a deadline, checking it every few milliseconds. */
  private static void await(BooleanSupplier condition, Duration within, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline)
          .as("still not %s after %d ms", what, within.toMillis())
          .isNegative();
      Thread.sleep(5);
    }
  }

  @Test
  void extendWithOneServerDownStillExtendsOnTheRest() throws Exception {
    try (LockClient a = connect();
        LockClient b = connect()) {
      String name = "extend-minority-down";
      Lease held = a.lock(name, UNRENEWED).acquire(Duration.ofSeconds(5));
      servers.kill(4);
      assertThat(held.extend(Duration.ofSeconds(30)))
          .as("extend(30s) with one of five servers down")
          .isTrue();
      // extend answers once a majority has it: the fourth live server follows a moment later
      for (int i = 0; i < 4; i++) {
        int server = i;
        await(
            () -> pttl(server, name) > 25_000L,
            Duration.ofSeconds(2),
            "extended to 30 s on server " + server);
      }
      assertThat(held.isValid()).isTrue();
      // well past the old expiry the lock is still ours
      await(
          () -> pttl(0, name) < 30_000L - LEASE.toMillis() - 500,
          Duration.ofSeconds(10),
          "past the old expiry");
      assertThat(b.lock(name).tryAcquire()).as("another client past the old expiry").isEmpty();
      assertThat(held.isValid()).isTrue();
      assertThat(held.extend(Duration.ofMillis(500)))
          .as("extend to a shorter lease with one server down")
          .isTrue();
      for (int i = 0; i < 4; i++) {
        int server = i;
        await(
            () -> pttl(server, name) <= 500L + 10,
            Duration.ofSeconds(2),
            "shortened to 500 ms on server " + server);
      }
      assertThat(b.lock(name).tryAcquire(Duration.ofSeconds(3)))
          .as("another client after the shortened lease")
          .isPresent();
    }
  }

  @Test
  void extendWithAMajorityDownAnswersFalseAndLeavesNothingExtended() throws Exception {
    try (LockClient a = connect()) {
      String name = "extend-majority-down";
      Lease held = a.lock(name, LONG_UNRENEWED).acquire(Duration.ofSeconds(5));
      servers.kill(0, 1, 2);
      assertThat(held.extend(Duration.ofSeconds(60)))
          .as("extend(60s) with three of five servers down")
          .isFalse();
      assertThat(held.isValid()).as("the lease after a failed extend").isFalse();
      // gone well before the old 20s expiry: given back, neither left extended nor left to expire
      for (int i = 3; i < 5; i++) {
        int server = i;
        await(
            () -> pttl(server, name) == -2,
            Duration.ofSeconds(5),
            "given back on server " + server);
      }
    }
  }

  @Test
  void aHoldWithOneServerDownKeepsTheLockThenFreesIt() throws Exception {
    try (LockClient a = connect();
        LockClient b = connect()) {
      String name = "hold-minority-down";
      Lease held = a.lock(name, UNRENEWED).acquire(Duration.ofSeconds(5));
      servers.kill(2);
      Duration keep = Duration.ofMillis(1500);
      long asked = System.nanoTime();
      assertThat(held.releaseAfter(keep)).as("releaseAfter with one of five servers down").isTrue();
      for (int i : new int[] {0, 1, 3, 4}) {
        // releaseAfter answers once a majority holds; a fourth live server may answer later, and
        // must while the hold lasts (500 ms was not enough beside two full builds: a clean run of
        // ./run-tests at 4ea1500 saw server 4's hold still missing then)
        int server = i;
        await(
            () -> String.valueOf(value(server, name)).startsWith(RedisScripts.HOLD_PREFIX),
            keep,
            "the hold on server " + server);
        assertThat(pttl(i, name))
            .as("ms left of the hold on server %d", i)
            .isBetween(1L, keep.toMillis() + 20);
      }
      a.close(); // the hold is the servers' own
      assertThat(b.lock(name).tryAcquire()).as("another client during the hold").isEmpty();
      try (Lease next = b.lock(name).acquire(Duration.ofSeconds(10))) {
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - asked))
            .as("ms from the hold to the next holder")
            .isGreaterThanOrEqualTo(keep.toMillis() - 15);
        assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
      }
    }
  }

  @Test
  void aHoldWithAMajorityDownFailsAndLeavesNothingHeld() throws Exception {
    try (LockClient a = connect()) {
      String name = "hold-majority-down";
      Lease held = a.lock(name, LONG_UNRENEWED).acquire(Duration.ofSeconds(5));
      servers.kill(0, 1, 2);
      assertThatThrownBy(() -> held.releaseAfter(Duration.ofSeconds(60)))
          .isInstanceOf(BackendUnavailableException.class)
          .hasMessageContaining("held on 2 of the 5")
          .hasMessageContaining("needs 3")
          .hasMessageContaining(servers.endpoint(0))
          .hasMessageContaining(servers.endpoint(2));
      for (int i = 3; i < 5; i++) {
        int server = i;
        await(
            () -> pttl(server, name) == -2,
            Duration.ofSeconds(5),
            "the hold given back on server " + server);
      }
    }
  }

  @Test
  void aLeaseNoLongerThanTheDriftAllowanceIsRefusedAtOnce() throws Exception {
    try (LockClient a = connect()) {
      LockOptions oneMs =
          LockOptions.builder().lease(LockOptions.MIN_LEASE).autoRenew(false).build();
      long start = System.nanoTime();
      assertThatThrownBy(() -> a.lock("one-ms", oneMs).acquire(Duration.ofSeconds(30)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`lease` was '1ms'")
          .hasMessageContaining("drift")
          .hasMessageContaining("at least 3ms");
      assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
          .as("ms to refuse, with a 30s acquire timeout")
          .isLessThan(5000);
      for (int i = 0; i < 5; i++) {
        assertThat(pttl(i, "one-ms")).as("server %d after the refused acquire", i).isEqualTo(-2L);
      }
      // the shortest lease that outlasts its drift allowance is no error
      LockOptions threeMs =
          LockOptions.builder().lease(Duration.ofMillis(3)).autoRenew(false).build();
      assertThatCode(() -> a.lock("three-ms", threeMs).tryAcquire())
          .as("tryAcquire() with a 3ms lease")
          .doesNotThrowAnyException();
    }
  }
}
