package dev.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Five servers, some of them down or frozen: a minority changes nothing, a majority fails clearly.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedlockQuorumIT {
  private RedlockServers servers;

  @BeforeEach
  void startServers() {
    servers = RedlockServers.start("quorum", 5);
  }

  @AfterEach
  void stopServers() {
    if (servers != null) {
      servers.close();
    }
  }

  private LockClient connect() {
    return Locks.connect(servers.uri() + "?lease=1s&connect-timeout=1s");
  }

  @Test
  void twoOfFiveKilledStillLocksRenewsAndOrdersTokens() throws Exception {
    try (LockClient a = connect();
        LockClient b = connect()) {
      Lease held = a.lock("minority-down").acquire(Duration.ofSeconds(5));
      long first = held.fencingToken();
      servers.kill(3, 4);
      // renewals now reach three servers of five: the lease stays valid through several leases
      long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2500);
      while (System.nanoTime() - until < 0) {
        assertThat(held.isValid()).as("lease valid with two of five servers down").isTrue();
        assertThat(b.lock("minority-down").tryAcquire())
            .as("another client while the lock is held")
            .isEmpty();
        Thread.sleep(100); // pacing the probe, not waiting for a condition
      }
      assertThat(held.lost()).isNotDone();
      assertThat(held.release()).isTrue();
      try (Lease next = b.lock("minority-down").acquire(Duration.ofSeconds(5))) {
        assertThat(next.fencingToken()).isGreaterThan(first);
      }
      // and a client that connects while they are down works too
      try (LockClient late = connect();
          Lease l = late.lock("minority-down").acquire(Duration.ofSeconds(5))) {
        assertThat(l.fencingToken()).isGreaterThan(first + 1);
      }
    }
  }

  @Test
  void threeOfFiveKilledFailsFastNamingThem() throws Exception {
    try (LockClient a = connect()) {
      Lease held = a.lock("majority-down").acquire(Duration.ofSeconds(5));
      servers.kill(0, 1, 2);
      LeaseLostException loss = held.lost().toCompletableFuture().get(5, TimeUnit.SECONDS);
      assertThat(loss.reason()).isEqualTo(LeaseLostException.Reason.RENEWAL_FAILED);

      long start = System.nanoTime();
      assertThatThrownBy(() -> a.lock("majority-down").acquire(Duration.ofSeconds(30)))
          .isInstanceOf(BackendUnavailableException.class)
          .hasMessageContaining("only 2 of the 5 Redis servers")
          .hasMessageContaining("needs 3")
          .hasMessageContaining(servers.endpoint(0))
          .hasMessageContaining(servers.endpoint(1))
          .hasMessageContaining(servers.endpoint(2))
          .satisfies(e -> assertThat(e.getMessage()).doesNotContain(servers.endpoint(3) + ":"));
      assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
          .as("ms to fail, with a 30s acquire timeout")
          .isLessThan(5000);
    }
    assertThatThrownBy(this::connect)
        .isInstanceOf(BackendUnavailableException.class)
        .hasMessageContaining("only 2 of the 5 Redis servers")
        .hasMessageContaining(servers.endpoint(0))
        .hasMessageContaining(servers.endpoint(1))
        .hasMessageContaining(servers.endpoint(2));
  }

  @Test
  void aServerFrozenDuringAcquireCostsOneServerTimeoutAndAFrozenMajorityFails() throws Exception {
    try (LockClient a = Locks.connect(servers.uri() + "?lease=2s&server-timeout=200ms")) {
      long before;
      try (Lease first = a.lock("frozen").acquire(Duration.ofSeconds(5))) {
        before = first.fencingToken();
      }
      servers.pause(2);
      try {
        long start = System.nanoTime();
        try (Lease l = a.lock("frozen-2").acquire(Duration.ofSeconds(10))) {
          assertThat(l.isValid()).isTrue();
        }
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
            .as("ms to acquire and release with one server frozen")
            .isLessThan(5000);
        try (Lease l = a.lock("frozen").acquire(Duration.ofSeconds(10))) {
          assertThat(l.fencingToken()).isGreaterThan(before);
          // acquire returns once a majority granted, so the fourth answering server may still be in
          // flight
          long holding = IntStream.of(0, 1, 3, 4).filter(i -> servers.holds(i, "frozen")).count();
          assertThat(holding).as("answering servers holding the lease").isGreaterThanOrEqualTo(3);
        }
        servers.pause(0, 4);
        assertThatThrownBy(() -> a.lock("frozen").acquire(Duration.ofSeconds(30)))
            .isInstanceOf(BackendUnavailableException.class)
            .hasMessageContaining("did not answer within 200ms")
            .hasMessageContaining(servers.endpoint(0))
            .hasMessageContaining(servers.endpoint(2))
            .hasMessageContaining(servers.endpoint(4));
      } finally {
        servers.resume(0, 2, 4);
      }
      try (Lease l = a.lock("frozen").acquire(Duration.ofSeconds(10))) {
        assertThat(l.fencingToken()).isGreaterThan(before);
      }
    }
  }

  /**
   * A one-shot attempt waits for its give-backs (RedlockAttempt's awaitGiveBacks), but not for a
   * frozen server beyond its server-timeout: with command-timeout 5s, a wait for the frozen
   * server's own answer to the give-back would take 5 s.
   */
  @Test
  void aOneShotAttemptWithAServerFrozenAnswersWithinTwoServerTimeouts() throws Exception {
    String uri = servers.uri() + "?lease=2s&server-timeout=200ms&command-timeout=5s";
    try (LockClient a = Locks.connect(uri);
        LockClient b = Locks.connect(uri)) {
      try (Lease held = a.lock("frozen-one-shot").acquire(Duration.ofSeconds(5))) {
        servers.pause(2);
        try {
          for (String name : List.of("frozen-one-shot", "frozen-one-shot-free")) {
            long start = System.nanoTime();
            Optional<Lease> got = b.lock(name).tryAcquire();
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertThat(got.isPresent())
                .as("tryAcquire() of '%s' granted", name)
                .isEqualTo(name.endsWith("free"));
            got.ifPresent(Lease::release);
            assertThat(ms)
                .as(
                    "ms for tryAcquire() of '%s' with one of five servers frozen (server-timeout"
                        + " 200ms)",
                    name)
                .isLessThan(2000);
          }
        } finally {
          servers.resume(2);
        }
      }
    }
  }

  @Test
  void tokensKeepRisingWhenDifferentMinoritiesAreDownForSuccessiveHolders() throws Exception {
    // each holder sees a different majority; a server comes back empty (no persistence) only
    // after a holder that did not need it, so every two successive majorities share a server
    // that kept the fence the earlier holder wrote
    int[][] down = {{3, 4}, {0, 1}, {2, 3}, {4, 0}, {1, 2}, {3, 4}, {0, 2}, {1, 3}};
    List<Long> tokens = new ArrayList<>();
    int[] previous = null;
    for (int[] d : down) {
      if (previous != null) {
        servers.restart(previous);
      }
      servers.kill(d);
      try (LockClient holder = connect();
          Lease l = holder.lock("rotating").acquire(Duration.ofSeconds(10))) {
        tokens.add(l.fencingToken());
        int atLeast = 0;
        for (int i = 0; i < 5; i++) {
          if (i != d[0] && i != d[1] && servers.fence(i, "rotating") >= l.fencingToken()) {
            atLeast++;
          }
        }
        assertThat(atLeast)
            .as("servers whose fence is at least the token %d", l.fencingToken())
            .isGreaterThanOrEqualTo(3);
      }
      previous = d;
    }
    for (int i = 1; i < tokens.size(); i++) {
      assertThat(tokens.get(i))
          .as("token of holder %d after %s", i, tokens.subList(0, i))
          .isGreaterThan(tokens.get(i - 1));
    }
  }
}
