package dev.locksmith.docs.samples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.spring.CurrentLease;
import dev.locksmith.spring.Locked;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@code @Locked} in a real Spring Boot application: the starter's auto-configuration makes the
 * client from {@code locksmith.uri} (here {@code local:}) and puts the advice around the bean.
 */
class SpringLockedSamples {
  private final ExecutorService callers = Executors.newFixedThreadPool(2);

  @AfterEach
  void stopCallers() {
    callers.shutdownNow();
  }

  // tag::locked-bean[]
  public static class Reports {
    private final ReportStore store;

    public Reports(ReportStore store) {
      this.store = store;
    }

    /** One call per day at a time, across every instance; a second caller waits up to 5 s. */
    @Locked(name = "report", key = "#day", waitFor = "5s")
    public void build(String day) {
      long token = CurrentLease.get().orElseThrow().fencingToken(); // the lease of this call
      store.write(day, token); // the store refuses a token lower than one it has seen
    }

    /** Skipped, not waited for, while another call (on any instance) holds it. */
    @Locked(name = "cleanup", onBusy = Locked.OnBusy.SKIP)
    public Optional<String> cleanup() {
      return Optional.of("cleaned");
    }
  }

  // end::locked-bean[]

  // tag::locked-app[]
  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration // the starter: a LockClient from locksmith.uri, and the @Locked advice
  static class ReportApp {
    @Bean
    ReportStore reportStore() {
      return new ReportStore();
    }

    @Bean
    Reports reports(ReportStore store) {
      return new Reports(store);
    }
  }

  // end::locked-app[]

  private static ConfigurableApplicationContext start(String uri) {
    // tag::locked-start[]
    ConfigurableApplicationContext context =
        new SpringApplicationBuilder(ReportApp.class)
            .web(WebApplicationType.NONE)
            .properties("locksmith.uri=" + uri) // e.g. redis://localhost:6379 in production
            .run();
    // end::locked-start[]
    return context;
  }

  @Test
  void aSecondCallForTheSameDayWaitsForTheFirst() throws Exception {
    try (ConfigurableApplicationContext context = start("local:docs-spring-locked");
        LockClient other = Locks.connect("local:docs-spring-locked")) {
      Reports reports = context.getBean(Reports.class);
      ReportStore store = context.getBean(ReportStore.class);
      store.holdWrites();

      Future<?> first = callers.submit(() -> reports.build("2026-11-27"));
      assertThat(store.awaitWriter()).isTrue(); // the first call is inside, holding the lock
      // another process (here a second client of the same space) sees the lock taken
      assertThat(other.lock("report:2026-11-27").tryAcquire()).isEmpty();
      Future<?> second = callers.submit(() -> reports.build("2026-11-27"));
      Thread.sleep(300);
      assertThat(second).isNotDone(); // waiting for the lock, not inside
      assertThat(store.writers()).isEqualTo(1);

      store.releaseWrites();
      first.get(10, TimeUnit.SECONDS);
      second.get(10, TimeUnit.SECONDS);
      assertThat(store.maxWriters()).isEqualTo(1); // never two inside at once
      assertThat(store.tokens()).hasSize(2);
      assertThat(store.tokens().get(1)).isGreaterThan(store.tokens().get(0));
      // released after each call
      assertThat(other.lock("report:2026-11-27").tryAcquire().map(Lease::release)).contains(true);
    }
  }

  @Test
  void aBusySkipMethodAnswersEmpty() throws Exception {
    try (ConfigurableApplicationContext context = start("local:docs-spring-skip");
        LockClient other = Locks.connect("local:docs-spring-skip")) {
      Reports reports = context.getBean(Reports.class);
      // tag::locked-skip[]
      try (Lease held = other.lock("cleanup").acquire(Duration.ofSeconds(5))) { // another node
        assertThat(reports.cleanup()).isEmpty(); // skipped: busy
      }
      assertThat(reports.cleanup()).contains("cleaned"); // free again: it runs
      // end::locked-skip[]
    }
  }

  /** What the report writes to: records the tokens, and can hold a writer inside. */
  public static class ReportStore {
    private final List<Long> tokens = new CopyOnWriteArrayList<>();
    private final AtomicInteger writers = new AtomicInteger();
    private final AtomicInteger maxWriters = new AtomicInteger();
    private volatile CountDownLatch gate = new CountDownLatch(0);
    private final CountDownLatch entered = new CountDownLatch(1);

    public void write(String day, long token) {
      int now = writers.incrementAndGet();
      maxWriters.accumulateAndGet(now, Math::max);
      entered.countDown();
      try {
        if (!tokens.isEmpty() && token <= tokens.get(tokens.size() - 1)) {
          throw new IllegalStateException("stale token " + token + " for " + day);
        }
        tokens.add(token);
        if (!gate.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("the gate was never opened");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      } finally {
        writers.decrementAndGet();
      }
    }

    void holdWrites() {
      gate = new CountDownLatch(1);
    }

    void releaseWrites() {
      gate.countDown();
    }

    boolean awaitWriter() throws InterruptedException {
      return entered.await(10, TimeUnit.SECONDS);
    }

    int writers() {
      return writers.get();
    }

    int maxWriters() {
      return maxWriters.get();
    }

    List<Long> tokens() {
      return List.copyOf(tokens);
    }
  }
}
