package dev.locksmith.docs.samples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.shedlock.LocksmithLockProvider;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * {@code @Scheduled @SchedulerLock} in a real Spring Boot application: ShedLock's own Spring
 * integration ({@code shedlock-spring}) over the {@code LockProvider} the starter makes from its
 * client, with {@code lock-shedlock} on the class path. Two applications on one {@code local:}
 * space stand for two nodes.
 */
class SpringSchedulerLockSamples {

  // tag::scheduled-job[]
  public static class NightlyReport {
    private final List<Long> tokens = new CopyOnWriteArrayList<>();

    @Scheduled(fixedDelay = 50) // every node schedules it (cron = "0 0 2 * * *" in real life)
    @SchedulerLock(name = "nightly-report", lockAtMostFor = "10m", lockAtLeastFor = "1m")
    public void run() {
      long token = LocksmithLockProvider.currentFencingToken().orElseThrow(); // inside the task
      tokens.add(token); // hand it to what the task writes
    }

    public List<Long> tokens() {
      return List.copyOf(tokens);
    }
  }

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration // the starter: a LockClient from locksmith.uri, ShedLock's LockProvider
  @EnableScheduling
  @EnableSchedulerLock(defaultLockAtMostFor = "10m")
  static class SchedulerApp {
    @Bean
    NightlyReport nightlyReport() {
      return new NightlyReport();
    }
  }

  // end::scheduled-job[]

  private static ConfigurableApplicationContext node(String uri) {
    return new SpringApplicationBuilder(SchedulerApp.class)
        .web(WebApplicationType.NONE)
        .properties("locksmith.uri=" + uri)
        .run();
  }

  @Test
  void theJobRunsOnOneNodeOnceWithinLockAtLeastFor() throws Exception {
    String uri = "local:docs-spring-scheduler";
    try (ConfigurableApplicationContext nodeA = node(uri);
        ConfigurableApplicationContext nodeB = node(uri);
        LockClient other = Locks.connect(uri)) {
      // the provider is the starter's, over the starter's client
      assertThat(nodeA.getBean(LockProvider.class)).isInstanceOf(LocksmithLockProvider.class);
      NightlyReport a = nodeA.getBean(NightlyReport.class);
      NightlyReport b = nodeB.getBean(NightlyReport.class);

      long deadline = System.nanoTime() + 10_000_000_000L;
      while (a.tokens().size() + b.tokens().size() == 0 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      Thread.sleep(1000); // about 20 more ticks on each node: all skipped, lockAtLeastFor holds

      List<Long> runs = new java.util.ArrayList<>(a.tokens());
      runs.addAll(b.tokens());
      assertThat(runs).hasSize(1); // once, on one node
      assertThat(runs.get(0)).isPositive(); // with its fencing token
      // kept by the lock server after the task returned, until lockAtLeastFor has passed
      assertThat(other.lock("nightly-report").tryAcquire()).isEmpty();
    }
  }
}
