package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.LockClient;
import dev.locksmith.LockEvents;
import dev.locksmith.Locks;
import dev.locksmith.micrometer.LockMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The client bean, its properties and its metrics. */
class LocksmithAutoConfigurationTest {
  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class));

  @Test
  void oneClientFromThePropertiesClosedWithTheContext() {
    LockClient[] seen = new LockClient[1];
    runner
        .withPropertyValues(
            "locksmith.uri=local:auto",
            "locksmith.lease=12s",
            "locksmith.renew=false",
            "locksmith.reentrant=false")
        .run(
            ctx -> {
              assertThat(ctx).hasSingleBean(LockClient.class).hasSingleBean(LockTemplate.class);
              LockClient client = ctx.getBean(LockClient.class);
              seen[0] = client;
              assertThat(client.config().uri().scheme()).isEqualTo("local");
              assertThat(client.config().defaults().lease()).isEqualTo(Duration.ofSeconds(12));
              assertThat(client.config().defaults().autoRenew()).isFalse();
              assertThat(client.config().defaults().reentrant()).isFalse();
            });
    assertThatThrownBy(() -> seen[0].lock("after-close"))
        .as("the client after the context closed")
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void theDefaultsAreTheLibrarysOnLocal() {
    runner.run(
        ctx -> {
          LockClient client = ctx.getBean(LockClient.class);
          assertThat(client.config().uri().scheme()).isEqualTo("local");
          assertThat(client.config().defaults().autoRenew()).isTrue();
          assertThat(client.config().defaults().reentrant()).isTrue();
        });
  }

  @Configuration
  static class OwnClient {
    static final LockClient MINE = Locks.connect("local:mine");

    @Bean
    LockClient myClient() {
      return MINE;
    }
  }

  @Test
  void theApplicationsOwnClientWins() {
    runner
        .withUserConfiguration(OwnClient.class)
        .run(
            ctx -> {
              assertThat(ctx).hasSingleBean(LockClient.class);
              assertThat(ctx.getBean(LockClient.class)).isSameAs(OwnClient.MINE);
              assertThat(ctx.getBean(LockTemplate.class)).isNotNull();
            });
  }

  private static String failure(Throwable t) {
    StringBuilder all = new StringBuilder();
    for (; t != null; t = t.getCause()) {
      all.append(t.getMessage()).append('\n');
    }
    return all.toString();
  }

  @Test
  void badValuesFailTheStartNamingThePropertyWithSecretsRedacted() {
    runner
        .withPropertyValues("locksmith.uri=local:bad", "locksmith.lease=0ms")
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              assertThat(failure(ctx.getStartupFailure()))
                  .contains("`locksmith.lease` was '0ms'")
                  .contains("from 1ms to 7d");
            });
    runner
        .withPropertyValues("locksmith.uri=local:bad", "locksmith.options.no-such-option=1")
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              assertThat(failure(ctx.getStartupFailure()))
                  .contains("`locksmith.options.no-such-option`");
            });
    runner
        .withPropertyValues("locksmith.uri=nosuch://admin:hunter2@db.example:1/x")
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              String message = failure(ctx.getStartupFailure());
              assertThat(message)
                  .contains("locksmith.uri")
                  .contains("nosuch")
                  .doesNotContain("hunter2");
            });
    runner
        .withPropertyValues("locksmith.uri=local:", "locksmith.client-name= ")
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              assertThat(failure(ctx.getStartupFailure()))
                  .contains("`locksmith.client-name` was '")
                  .contains("it must be a name for the client");
            });
  }

  @Configuration
  static class Registry {
    @Bean
    MeterRegistry registry() {
      return new SimpleMeterRegistry();
    }
  }

  @Test
  void metricsAreRecordedWhenAMeterRegistryExists() {
    runner
        .withUserConfiguration(Registry.class)
        .withPropertyValues("locksmith.uri=local:metrics", "locksmith.client-name=orders")
        .run(
            ctx -> {
              ctx.getBean(LockTemplate.class).locked("m", Duration.ZERO, lease -> "ok");
              MeterRegistry registry = ctx.getBean(MeterRegistry.class);
              long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
              // registered a moment before it is recorded: wait for the count, not the meter
              while (registry.find(LockMetrics.ACQUIRE).tags("outcome", "acquired").timer() == null
                  || registry.get(LockMetrics.ACQUIRE).tags("outcome", "acquired").timer().count()
                      == 0) {
                assertThat(System.nanoTime() - deadline)
                    .as("the acquire timer within 5 s")
                    .isNegative();
                Thread.sleep(2);
              }
              assertThat(
                      registry
                          .get(LockMetrics.ACQUIRE)
                          .tags("backend", "local", "client", "orders", "outcome", "acquired")
                          .timer()
                          .count())
                  .isEqualTo(1);
            });
    runner
        .withUserConfiguration(Registry.class)
        .withPropertyValues("locksmith.uri=local:metrics", "locksmith.metrics.enabled=false")
        .run(
            ctx -> {
              ctx.getBean(LockTemplate.class).locked("m", Duration.ZERO, lease -> "ok");
              Thread.sleep(50); // nothing should arrive; give a wrong registration time to land
              assertThat(ctx.getBean(MeterRegistry.class).find(LockMetrics.ACQUIRE).timer())
                  .isNull();
            });
  }

  @Test
  void theTemplateRunsUnderTheLockAndSaysWhenBusy() {
    runner
        .withPropertyValues("locksmith.uri=local:template")
        .run(
            ctx -> {
              LockTemplate locks = ctx.getBean(LockTemplate.class);
              LockClient other = Locks.connect("local:template");
              boolean heldInside =
                  locks.locked("t", Duration.ZERO, lease -> other.lock("t").tryAcquire().isEmpty());
              assertThat(heldInside).as("held inside").isTrue();
              var held = other.lock("t").acquire(Duration.ofSeconds(1));
              assertThatThrownBy(() -> locks.locked("t", Duration.ZERO, lease -> "ran"))
                  .isInstanceOf(LockBusyException.class);
              assertThat(locks.tryLocked("t", Duration.ZERO, lease -> "ran")).isEmpty();
              held.release();
              assertThat(locks.tryLocked("t", Duration.ZERO, lease -> "ran")).contains("ran");
              other.close();
            });
  }

  /** A locked bean, to observe the advice. */
  public static class Job {
    @Locked(name = "job")
    public String run() {
      return "ran";
    }

    @Locked(name = "reactive-job")
    public reactor.core.publisher.Mono<String> runReactive() {
      return reactor.core.publisher.Mono.just("ran");
    }

    @Locked(name = "reactive-busy", onBusy = Locked.OnBusy.SKIP)
    public reactor.core.publisher.Flux<String> runWhenFree() {
      return reactor.core.publisher.Flux.just("ran");
    }

    @Locked(name = "future-job")
    public java.util.concurrent.CompletableFuture<String> runFuture() {
      return java.util.concurrent.CompletableFuture.completedFuture("ran");
    }

    @Locked(name = "future-busy", onBusy = Locked.OnBusy.SKIP)
    public java.util.concurrent.CompletableFuture<String> runFutureWhenFree() {
      return java.util.concurrent.CompletableFuture.completedFuture("ran");
    }
  }

  @Configuration
  static class Observed {
    static final List<String> STOPPED = new CopyOnWriteArrayList<>();
    static final List<String> OUTCOMES = new CopyOnWriteArrayList<>();

    @Bean
    ObservationRegistry observationRegistry() {
      ObservationRegistry registry = ObservationRegistry.create();
      registry
          .observationConfig()
          .observationHandler(
              new ObservationHandler<Observation.Context>() {
                @Override
                public boolean supportsContext(Observation.Context context) {
                  return true;
                }

                @Override
                public void onStop(Observation.Context c) {
                  if (c.getLowCardinalityKeyValue("outcome") != null) {
                    OUTCOMES.add(
                        c.getHighCardinalityKeyValue("lock").getValue()
                            + " "
                            + c.getLowCardinalityKeyValue("outcome").getValue());
                  }
                  STOPPED.add(
                      c.getName()
                          + " "
                          + c.getHighCardinalityKeyValue("lock").getValue()
                          + " "
                          + c.getLowCardinalityKeyValue("client").getValue());
                }
              });
      return registry;
    }

    @Bean
    Job job() {
      return new Job();
    }
  }

  @Test
  void theAdviceAndTheTemplateAreObservedWhenAnObservationRegistryExists() {
    Observed.STOPPED.clear();
    runner
        .withUserConfiguration(Observed.class)
        .withPropertyValues("locksmith.uri=local:observed", "locksmith.client-name=jobs")
        .run(
            ctx -> {
              assertThat(ctx.getBean(Job.class).run()).isEqualTo("ran");
              ctx.getBean(LockTemplate.class).locked("t", Duration.ZERO, lease -> "ok");
            });
    assertThat(Observed.STOPPED)
        .containsExactly(
            "locksmith.lock.acquire job jobs",
            "locksmith.lock.hold job jobs",
            "locksmith.lock.acquire t jobs",
            "locksmith.lock.hold t jobs");
  }

  @Test
  void aReactiveMethodsAcquireIsObservedWithItsOutcomeAsWellAsItsHold() {
    Observed.STOPPED.clear();
    Observed.OUTCOMES.clear();
    runner
        .withUserConfiguration(Observed.class)
        .withPropertyValues("locksmith.uri=local:observed-reactive", "locksmith.client-name=jobs")
        .run(
            ctx -> {
              Job job = ctx.getBean(Job.class);
              assertThat(job.runReactive().block(Duration.ofSeconds(10))).isEqualTo("ran");
              try (LockClient other = Locks.connect("local:observed-reactive");
                  var held = other.lock("reactive-busy").acquire()) {
                assertThat(job.runWhenFree().collectList().block(Duration.ofSeconds(10))).isEmpty();
              }
            });
    assertThat(Observed.STOPPED)
        .containsExactly(
            "locksmith.lock.acquire reactive-job jobs",
            "locksmith.lock.hold reactive-job jobs",
            "locksmith.lock.acquire reactive-busy jobs");
    assertThat(Observed.OUTCOMES).containsExactly("reactive-job acquired", "reactive-busy timeout");
  }

  @Test
  void aCompletableFutureMethodsAcquireIsObservedWithItsOutcomeAsWellAsItsHold() {
    Observed.STOPPED.clear();
    Observed.OUTCOMES.clear();
    runner
        .withUserConfiguration(Observed.class)
        .withPropertyValues("locksmith.uri=local:observed-future", "locksmith.client-name=jobs")
        .run(
            ctx -> {
              Job job = ctx.getBean(Job.class);
              assertThat(job.runFuture().get(10, TimeUnit.SECONDS)).isEqualTo("ran");
              try (LockClient other = Locks.connect("local:observed-future");
                  var held = other.lock("future-busy").acquire()) {
                assertThat(job.runFutureWhenFree().get(10, TimeUnit.SECONDS)).isNull();
              }
            });
    assertThat(Observed.STOPPED)
        .containsExactly(
            "locksmith.lock.acquire future-job jobs",
            "locksmith.lock.hold future-job jobs",
            "locksmith.lock.acquire future-busy jobs");
    assertThat(Observed.OUTCOMES).containsExactly("future-job acquired", "future-busy timeout");
  }

  @Configuration
  static class OwnEvents {
    static final List<String> HEARD = new CopyOnWriteArrayList<>();

    @Bean
    LockEvents myEvents() {
      return new LockEvents() {
        @Override
        public void acquired(String name, long token, Duration waited) {
          HEARD.add("acquired " + name);
        }
      };
    }

    @Bean
    MeterRegistry registry() {
      return new SimpleMeterRegistry();
    }
  }

  @Test
  void theApplicationsLockEventsBeanHearsTheClientAlongsideMetricsAndTheEndpoint() {
    OwnEvents.HEARD.clear();
    runner
        .withUserConfiguration(OwnEvents.class)
        .withPropertyValues("locksmith.uri=local:own-events")
        .run(
            ctx -> {
              ctx.getBean(LockTemplate.class).locked("e", Duration.ZERO, lease -> "ok");
              long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
              while (OwnEvents.HEARD.isEmpty()) {
                assertThat(System.nanoTime() - deadline).as("the event within 5 s").isNegative();
                Thread.sleep(2);
              }
              assertThat(ctx.getBean(MeterRegistry.class).find(LockMetrics.ACQUIRE).timer())
                  .isNotNull();
            });
    assertThat(OwnEvents.HEARD).containsExactly("acquired e");
  }

  /** Locks through a named client. */
  public static class NamedJob {
    static final LockClient ORDERS_SPACE = Locks.connect("local:named-orders");
    static final LockClient DEFAULT_SPACE = Locks.connect("local:named-default");

    @Locked(name = "n", client = "orders")
    public String run() {
      return (ORDERS_SPACE.lock("n").tryAcquire().isEmpty() ? "held in orders" : "FREE in orders")
          + (DEFAULT_SPACE.lock("n").tryAcquire().isPresent()
              ? ", free in default"
              : ", HELD in default");
    }
  }

  @Configuration
  static class NamedApp {
    @Bean
    NamedJob namedJob() {
      return new NamedJob();
    }
  }

  @Test
  void namedClientsAreDeclaredUnderClientsAndUsedByName() {
    LockClients[] seen = new LockClients[1];
    runner
        .withUserConfiguration(NamedApp.class)
        .withPropertyValues(
            "locksmith.uri=local:named-default",
            "locksmith.clients.orders.uri=local:named-orders",
            "locksmith.clients.orders.lease=5s",
            "locksmith.clients.reports.uri=local:named-reports")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              LockClients clients = ctx.getBean(LockClients.class);
              seen[0] = clients;
              assertThat(clients.names()).containsExactly("orders", "reports");
              assertThat(clients.get("orders").config().defaults().lease())
                  .isEqualTo(Duration.ofSeconds(5));
              assertThat(ctx.getBean(LockClient.class).config().uri().toString())
                  .isEqualTo("local:named-default");
              assertThatThrownBy(() -> clients.get("nope"))
                  .isInstanceOf(IllegalArgumentException.class)
                  .hasMessageContaining("[orders, reports]");
              assertThat(ctx.getBean(NamedJob.class).run())
                  .isEqualTo("held in orders, free in default");
            });
    assertThatThrownBy(() -> seen[0].get("orders").lock("after"))
        .as("a named client after the context closed")
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void badNamedClientsFailTheStartNamingTheirProperties() {
    runner
        .withPropertyValues(
            "locksmith.clients.orders.lease=0ms", "locksmith.clients.orders.uri=local:x")
        .run(
            ctx ->
                assertThat(failure(ctx.getStartupFailure()))
                    .contains("`locksmith.clients.orders.lease` was '0ms'"));
    runner
        .withPropertyValues("locksmith.clients.orders.lease=5s")
        .run(
            ctx ->
                assertThat(failure(ctx.getStartupFailure()))
                    .contains("`locksmith.clients.orders.uri` was missing"));
    runner
        .withUserConfiguration(NamedApp.class)
        .run(
            ctx ->
                assertThat(failure(ctx.getStartupFailure()))
                    .contains("NamedJob.run()")
                    .contains("`client` was 'orders'")
                    .contains("locksmith.clients.orders.uri"));
  }
}
