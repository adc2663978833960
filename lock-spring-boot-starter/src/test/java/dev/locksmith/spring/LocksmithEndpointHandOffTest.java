package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockEvents;
import dev.locksmith.LockOptions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The endpoint shows one holder of an exclusive lock during a hand-off, and every holder of a
 * semaphore.
 */
class LocksmithEndpointHandOffTest {
  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
          .withPropertyValues("locksmith.uri=local:handoff");

  @Test
  void anExclusiveLockIsShownOnceWhileThePreviousReleaseEventIsLate() {
    runner.run(
        ctx -> {
          LockClient client = ctx.getBean(LockClient.class);
          LocksmithEndpoint endpoint = ctx.getBean(LocksmithEndpoint.class);
          long first;
          try (Lease lease = client.lock("stock").acquire(Duration.ofSeconds(5))) {
            first = lease.fencingToken();
          }
          awaitLeases(endpoint, List::isEmpty);
          // the previous holder's released event not seen yet, as in a hand-off between two threads
          // of this client
          LockEvents late = ctx.getBean(HeldLeaseTracker.class).then(LockEvents.NONE);
          late.acquired("stock", first, Duration.ZERO);
          try (Lease next = client.lock("stock").acquire(Duration.ofSeconds(5))) {
            List<Map<String, Object>> shown =
                awaitLeases(
                    endpoint,
                    l ->
                        l.stream()
                            .anyMatch(m -> m.get("fencingToken").equals(next.fencingToken())));
            assertThat(shown).as("one holder of an exclusive lock").hasSize(1);
            assertThat(shown.get(0))
                .containsEntry("name", "stock")
                .containsEntry("fencingToken", next.fencingToken());
            assertThat((Long) shown.get(0).get("remainingMillis")).isPositive();
          }
        });
  }

  @Test
  void theTrackerReplacesAnExclusiveHoldingWhenTheNextGrantComesFirst() {
    HeldLeaseTracker tracker = new HeldLeaseTracker();
    LockEvents events = tracker.then(LockEvents.NONE);
    events.acquired("stock", 1, Duration.ZERO);
    events.acquired(
        "stock", 2, Duration.ZERO); // the next holder's grant, before the previous release's event
    assertThat(tracker.held()).extracting(HeldLeaseTracker.Held::fencingToken).containsExactly(2L);
    events.released("stock", 1, Duration.ZERO, true);
    assertThat(tracker.held()).extracting(HeldLeaseTracker.Held::fencingToken).containsExactly(2L);
    tracker.shared("pool"); // a semaphore: its holders stay
    events.acquired("pool", 3, Duration.ZERO);
    events.acquired("pool", 4, Duration.ZERO);
    assertThat(tracker.held())
        .extracting(HeldLeaseTracker.Held::fencingToken)
        .containsExactlyInAnyOrder(2L, 3L, 4L);
  }

  @Test
  void everyPermitOfASemaphoreIsShown() {
    runner.run(
        ctx -> {
          LockClient client = ctx.getBean(LockClient.class);
          LocksmithEndpoint endpoint = ctx.getBean(LocksmithEndpoint.class);
          LockOptions options = LockOptions.builder().reentrant(false).build();
          try (Lease one = client.semaphore("pool", 3, options).acquire(Duration.ofSeconds(5));
              Lease two =
                  CompletableFuture.supplyAsync(
                          () -> {
                            try {
                              return client
                                  .semaphore("pool", 3, options)
                                  .acquire(Duration.ofSeconds(5));
                            } catch (InterruptedException e) {
                              throw new IllegalStateException(e);
                            }
                          })
                      .join()) {
            List<Map<String, Object>> shown = awaitLeases(endpoint, l -> l.size() >= 2);
            assertThat(shown)
                .as("two permits held")
                .hasSize(2)
                .allSatisfy(m -> assertThat(m).containsEntry("name", "pool"));
          }
        });
  }

  @SuppressWarnings("unchecked")
  static List<Map<String, Object>> awaitLeases(
      LocksmithEndpoint endpoint, Predicate<List<Map<String, Object>>> done) {
    long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    List<Map<String, Object>> leases = (List<Map<String, Object>>) endpoint.leases().get("leases");
    while (!done.test(leases) && System.nanoTime() < deadline) {
      try {
        Thread.sleep(2); // events arrive just after the grant
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
      leases = (List<Map<String, Object>>) endpoint.leases().get("leases");
    }
    return leases;
  }
}
