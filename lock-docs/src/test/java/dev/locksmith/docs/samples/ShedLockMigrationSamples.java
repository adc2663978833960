package dev.locksmith.docs.samples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.shedlock.LocksmithLockProvider;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.LockingTaskExecutor;
import org.junit.jupiter.api.Test;

/**
 * The ShedLock migration guide: ShedLock itself, unchanged, over Locksmith's {@code LockProvider},
 * run on {@code local:} through ShedLock's own executor (what {@code @SchedulerLock} calls).
 */
class ShedLockMigrationSamples {

  @Test
  void providerOverAClient() throws Exception {
    List<Long> tokens = new ArrayList<>();
    try (LockClient client = Locks.connect("local:docs-shedlock")) {
      // tag::provider[]
      LockProvider provider = new LocksmithLockProvider(client); // a @Bean with Spring
      LockingTaskExecutor executor = new DefaultLockingTaskExecutor(provider);

      LockConfiguration nightly =
          new LockConfiguration(
              Instant.now(), "nightly-report", Duration.ofMinutes(10), Duration.ofMinutes(1));
      Runnable task =
          () -> {
            OptionalLong token = LocksmithLockProvider.currentFencingToken(); // inside the task
            tokens.add(token.orElseThrow()); // hand it to what the task writes
          };
      executor.executeWithLock(task, nightly); // runs: the lock was free
      executor.executeWithLock(task, nightly); // skipped: lockAtLeastFor holds it for 1 minute
      // end::provider[]
      assertThat(tokens).hasSize(1);
      assertThat(tokens.get(0)).isPositive();
      assertThat(LocksmithLockProvider.currentFencingToken()).isEmpty(); // outside the task
    }
  }

  @Test
  void lockAtLeastForSurvivesTheClient() throws Exception {
    LockConfiguration config =
        new LockConfiguration(
            Instant.now(), "cleanup", Duration.ofMinutes(10), Duration.ofMinutes(1));
    List<String> runs = new ArrayList<>();
    // tag::at-least-for[]
    try (LockClient first = Locks.connect("local:docs-shedlock-2")) {
      new DefaultLockingTaskExecutor(new LocksmithLockProvider(first))
          .executeWithLock((Runnable) () -> runs.add("first"), config);
    } // client closed (as in a shutdown right after the job)
    try (LockClient second = Locks.connect("local:docs-shedlock-2")) {
      new DefaultLockingTaskExecutor(new LocksmithLockProvider(second))
          .executeWithLock((Runnable) () -> runs.add("second"), config); // skipped: still held
    }
    // end::at-least-for[]
    assertThat(runs).containsExactly("first");
  }
}
