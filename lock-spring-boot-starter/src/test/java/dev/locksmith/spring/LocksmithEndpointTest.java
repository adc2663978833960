package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** The actuator endpoint listing this client's held leases. */
class LocksmithEndpointTest {
  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
          .withPropertyValues("locksmith.uri=local:endpoint", "spring.application.name=reports");

  @Test
  @SuppressWarnings("unchecked")
  void listsHeldLeasesWithTokenSinceAndRemaining() {
    runner.run(
        ctx -> {
          LocksmithEndpoint endpoint = ctx.getBean(LocksmithEndpoint.class);
          assertThat(endpoint.leases())
              .containsEntry("uri", "local:endpoint")
              .containsEntry("application", "reports")
              .containsEntry("leases", List.of());
          ctx.getBean(LockTemplate.class)
              .locked(
                  "report",
                  Duration.ZERO,
                  lease -> {
                    long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
                    List<Map<String, Object>> leases;
                    do {
                      leases =
                          (List<Map<String, Object>>)
                              endpoint.leases().get("leases"); // events arrive just after the grant
                    } while (leases.isEmpty() && System.nanoTime() < deadline);
                    assertThat(leases).hasSize(1);
                    Map<String, Object> held = leases.get(0);
                    assertThat(held)
                        .containsEntry("name", "report")
                        .containsEntry("fencingToken", lease.fencingToken())
                        .containsKey("heldSince");
                    assertThat((String) held.get("holder"))
                        .startsWith("reports on ")
                        .contains(", thread " + Thread.currentThread().getName() + ") asked at ");
                    Map<String, Object> namespace =
                        (Map<String, Object>) endpoint.leases().get("held");
                    assertThat(namespace).containsEntry("truncated", false);
                    assertThat((List<Map<String, Object>>) namespace.get("locks"))
                        .singleElement()
                        .satisfies(
                            l ->
                                assertThat(l)
                                    .containsEntry("name", "report")
                                    .containsEntry("kind", "lock")
                                    .containsEntry("fencingToken", lease.fencingToken())
                                    .containsEntry("holder", held.get("holder")));
                    assertThat((Long) held.get("remainingMillis"))
                        .as("the rest of a 30 s lease")
                        .isBetween(1L, 30_000L);
                    return null;
                  });
          long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
          while (!((List<?>) endpoint.leases().get("leases")).isEmpty()) {
            assertThat(System.nanoTime() - deadline)
                .as("the lease gone from the list within 5 s")
                .isNegative();
            Thread.sleep(2);
          }
        });
  }
}
