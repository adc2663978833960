package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Guarantees;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockEvents;
import dev.locksmith.Locks;
import dev.locksmith.redis.RedisServerExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The endpoint on a real Redis server: the rest of the lease is read where the backend declares
 * STATE_READS.
 */
class LocksmithEndpointRedisIT {
  @RegisterExtension static final RedisServerExtension REDIS = RedisServerExtension.shared("boot");

  @Test
  void remainingMillisIsFilledOnRedis() throws Exception {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
        .withPropertyValues(
            "locksmith.uri=" + REDIS.uri() + "?namespace=endpoint" + System.nanoTime(),
            "locksmith.lease=20s")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              LockClient client = ctx.getBean(LockClient.class);
              assertThat(client.guarantees().has(Guarantees.Feature.STATE_READS)).isTrue();
              LocksmithEndpoint endpoint = ctx.getBean(LocksmithEndpoint.class);
              ctx.getBean(LockTemplate.class)
                  .locked(
                      "report",
                      Duration.ZERO,
                      lease -> {
                        List<Map<String, Object>> leases = awaitLeases(endpoint, l -> !l.isEmpty());
                        assertThat(leases).hasSize(1);
                        assertThat(leases.get(0))
                            .containsEntry("name", "report")
                            .containsEntry("fencingToken", lease.fencingToken());
                        assertThat((Long) leases.get(0).get("remainingMillis"))
                            .as("the rest of a 20 s lease on Redis " + leases)
                            .isNotNull()
                            .isBetween(1L, 20_000L);
                        return null;
                      });
            });
  }

  @Test
  void aHandOffWithinTheClientListsTheNextHolderOnceWithItsRemainingLease() throws Exception {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
        .withPropertyValues("locksmith.uri=" + REDIS.uri() + "?namespace=next" + System.nanoTime())
        .run(
            ctx -> {
              LockClient client = ctx.getBean(LockClient.class);
              LocksmithEndpoint endpoint = ctx.getBean(LocksmithEndpoint.class);
              long first;
              try (Lease lease = client.lock("report").acquire(Duration.ofSeconds(5))) {
                first = lease.fencingToken();
              }
              awaitLeases(endpoint, List::isEmpty);
              // the previous holder's release event still on its way when the next holder's grant
              // is heard
              ctx.getBean(HeldLeaseTracker.class)
                  .then(LockEvents.NONE)
                  .acquired("report", first, Duration.ZERO);
              try (Lease next = client.lock("report").acquire(Duration.ofSeconds(5))) {
                List<Map<String, Object>> leases =
                    awaitLeases(
                        endpoint,
                        l ->
                            l.stream()
                                .anyMatch(m -> m.get("fencingToken").equals(next.fencingToken())));
                assertThat(leases).as("lock 'report' once, its holder's").hasSize(1);
                assertThat(leases.get(0)).containsEntry("fencingToken", next.fencingToken());
                assertThat((Long) leases.get(0).get("remainingMillis"))
                    .as("the rest of the holder's lease " + leases)
                    .isNotNull()
                    .isPositive();
              }
            });
  }

  @Test
  @SuppressWarnings("unchecked")
  void aHoldingWhoseLockMovedOnIsNotListedWithANullRemainingLease() throws Exception {
    String uri = REDIS.uri() + "?namespace=moved" + System.nanoTime();
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
        .withPropertyValues("locksmith.uri=" + uri)
        .run(
            ctx -> {
              LockClient client = ctx.getBean(LockClient.class);
              LocksmithEndpoint endpoint = ctx.getBean(LocksmithEndpoint.class);
              long first;
              try (Lease lease = client.lock("report").acquire(Duration.ofSeconds(5))) {
                first = lease.fencingToken();
              }
              awaitLeases(endpoint, List::isEmpty);
              ctx.getBean(HeldLeaseTracker.class)
                  .then(LockEvents.NONE)
                  .acquired("report", first, Duration.ZERO); // its release event late
              try (LockClient other = Locks.connect(uri);
                  Lease elsewhere = other.lock("report").acquire(Duration.ofSeconds(5))) {
                assertThat(elsewhere.fencingToken()).isGreaterThan(first);
                assertThat((List<Map<String, Object>>) endpoint.leases().get("leases"))
                    .as("another process holds 'report' now")
                    .isEmpty();
              }
            });
  }

  @Test
  @SuppressWarnings("unchecked")
  void aLockPassingBetweenThreadsIsNeverListedTwice() throws Exception {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
        .withPropertyValues(
            "locksmith.uri=" + REDIS.uri() + "?namespace=handoff" + System.nanoTime())
        .run(
            ctx -> {
              LockTemplate locks = ctx.getBean(LockTemplate.class);
              LocksmithEndpoint endpoint = ctx.getBean(LocksmithEndpoint.class);
              long end = System.nanoTime() + Duration.ofSeconds(2).toNanos();
              ExecutorService workers = Executors.newFixedThreadPool(4);
              List<Future<?>> done = new ArrayList<>();
              for (int i = 0; i < 4; i++) {
                done.add(
                    workers.submit(
                        () -> {
                          while (System.nanoTime() < end) {
                            locks.locked(
                                "stock",
                                Duration.ofSeconds(10),
                                lease -> {
                                  LockSupport.parkNanos(3_000_000); // the work under the lock
                                  return null;
                                });
                          }
                          return null;
                        }));
              }
              int snapshots = 0;
              int shown = 0;
              List<Object> twice = new ArrayList<>();
              try {
                while (System.nanoTime() < end) {
                  List<Map<String, Object>> leases =
                      (List<Map<String, Object>>) endpoint.leases().get("leases");
                  snapshots++;
                  shown += leases.size();
                  if (leases.size() > 1) {
                    twice.add(leases);
                  }
                }
                for (Future<?> f : done) {
                  f.get(30, TimeUnit.SECONDS);
                }
              } finally {
                workers.shutdownNow();
              }
              assertThat(shown).as("leases seen in " + snapshots + " snapshots").isPositive();
              assertThat(twice).as("snapshots listing lock 'stock' more than once").isEmpty();
            });
  }

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> awaitLeases(
      LocksmithEndpoint endpoint, java.util.function.Predicate<List<Map<String, Object>>> done) {
    long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    List<Map<String, Object>> leases = (List<Map<String, Object>>) endpoint.leases().get("leases");
    while (!done.test(leases) && System.nanoTime() < deadline) {
      LockSupport.parkNanos(2_000_000); // events arrive just after the grant
      leases = (List<Map<String, Object>>) endpoint.leases().get("leases");
    }
    return leases;
  }
}
