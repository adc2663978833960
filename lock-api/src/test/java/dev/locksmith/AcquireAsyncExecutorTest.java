package dev.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link DistributedLock#acquireAsync(Duration, java.util.concurrent.Executor)} on local:. */
class AcquireAsyncExecutorTest {
  private final LockClient client = Locks.connect("local:async-executor-" + UUID.randomUUID());
  private final ExecutorService mine =
      Executors.newFixedThreadPool(
          2,
          r -> {
            Thread t = new Thread(r, "mine-" + UUID.randomUUID());
            t.setDaemon(true);
            return t;
          });

  @AfterEach
  void close() {
    client.close();
    mine.shutdownNow();
  }

  @Test
  void theAcquisitionRunsOnTheGivenExecutorAndCompletesThere() throws Exception {
    CompletableFuture<Lease> f = client.lock("a").acquireAsync(Duration.ZERO, mine);
    Lease lease = f.get(5, TimeUnit.SECONDS);
    assertThat(lease.fencingToken()).isPositive();
    assertThat(lease.release()).isTrue();

    // a busy lock waits on the executor, and the grant completes the future on its thread
    try (Lease held = client.lock("b").acquire()) {
      CompletableFuture<String> waiter =
          client
              .lock("b")
              .acquireAsync(Duration.ofSeconds(10), mine)
              .thenApply(
                  l -> {
                    l.release();
                    return Thread.currentThread().getName();
                  });
      Thread.sleep(100);
      assertThat(waiter).isNotDone();
      held.release();
      assertThat(waiter.get(5, TimeUnit.SECONDS)).startsWith("mine-");
    }
    // an election's candidate campaigns on it too, under its identity
    Election.Leadership first = client.election("c").campaign("web-0", Duration.ZERO);
    CompletableFuture<String> onAnElectionCandidate =
        client
            .election("c")
            .candidate("web-1")
            .acquireAsync(Duration.ofSeconds(10), mine)
            .thenApply(
                l -> {
                  String who = client.election("c").leader().orElseThrow().identity().orElseThrow();
                  l.release();
                  return who + " on " + Thread.currentThread().getName();
                });
    Thread.sleep(100);
    first.resign();
    assertThat(onAnElectionCandidate.get(5, TimeUnit.SECONDS)).matches("web-1 on mine-.*");
  }

  @Test
  void aNullExecutorIsNamedAndARejectingOneFailsTheFutureWithItsRejection() throws Exception {
    assertThatThrownBy(() -> client.lock("a").acquireAsync(Duration.ZERO, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`executor` was null");
    ExecutorService down = Executors.newSingleThreadExecutor();
    down.shutdown();
    CompletableFuture<Lease> f = client.lock("a").acquireAsync(Duration.ZERO, down);
    assertThatThrownBy(() -> f.get(5, TimeUnit.SECONDS))
        .isInstanceOf(ExecutionException.class)
        .hasCauseInstanceOf(RejectedExecutionException.class);
    assertThat(client.lock("a").tryAcquire()).as("nothing left held").isPresent();
  }
}
