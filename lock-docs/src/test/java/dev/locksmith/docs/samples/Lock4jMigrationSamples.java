package dev.locksmith.docs.samples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.LockTimeoutException;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The Locksmith side of the lock4j migration guide, run on {@code local:}. */
class Lock4jMigrationSamples {

  @Test
  void template() throws Exception {
    try (LockClient client = Locks.connect("local:docs-lock4j")) {
      String userId = "u-7";
      // tag::template[]
      // lock4j: lockTemplate.lock(key, 30000, 3000) -> LockInfo or null; releaseLock(info)
      Optional<Lease> lease = client.lock("user:" + userId).tryAcquire(Duration.ofSeconds(3));
      if (lease.isEmpty()) {
        throw new IllegalStateException("busy, try again later"); // lock4j's failure strategy
      }
      try (Lease held = lease.get()) {
        update(userId, held.fencingToken());
      }
      // end::template[]
    }
  }

  @Test
  void expireMinusOne() throws Exception {
    try (LockClient client = Locks.connect("local:docs-lock4j-2")) {
      // tag::renewed[]
      // expire = -1 (renewed while the JVM lives) is Locksmith's default: a 30 s lease renewed
      // every 10 s while held, and freed by the server within 30 s of a crash
      try (Lease lease = client.lock("report").acquire(Duration.ofSeconds(3))) {
        update("report", lease.fencingToken());
      }
      // end::renewed[]

      // tag::fixed[]
      // expire = 60000: a fixed lease, not renewed, lost (and signalled) if the work outlives it
      LockOptions oneMinute =
          LockOptions.builder().lease(Duration.ofMinutes(1)).autoRenew(false).build();
      try (Lease lease = client.lock("report", oneMinute).acquire(Duration.ofSeconds(3))) {
        lease.lost().thenAccept(e -> cancelWork());
        update("report", lease.fencingToken());
      }
      // end::fixed[]
    }
  }

  @Test
  void acquireTimeout() throws Exception {
    try (LockClient client = Locks.connect("local:docs-lock4j-3")) {
      Lease holder =
          CompletableFuture.supplyAsync(
                  () -> {
                    try {
                      return client.lock("stock").acquire();
                    } catch (InterruptedException e) {
                      throw new IllegalStateException(e);
                    }
                  })
              .get(30, TimeUnit.SECONDS);
      // tag::timeout[]
      // acquireTimeout = 200: acquire(timeout) throws LockTimeoutException, tryAcquire answers
      // empty
      assertThatThrownBy(() -> client.lock("stock").acquire(Duration.ofMillis(200)))
          .isInstanceOf(LockTimeoutException.class);
      // end::timeout[]
      holder.release();
      assertThat(client.lock("stock").tryAcquire().map(Lease::release)).contains(true);
    }
  }

  private static void update(String id, long token) {
    assertThat(token).isPositive();
  }

  private static void cancelWork() {}
}
