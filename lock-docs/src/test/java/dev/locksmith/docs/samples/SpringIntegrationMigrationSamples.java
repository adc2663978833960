package dev.locksmith.docs.samples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.Locks;
import dev.locksmith.spring.integration.LocksmithLock;
import dev.locksmith.spring.integration.LocksmithLockRegistry;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The Spring Integration migration guide, run on {@code local:} without a Spring context. */
class SpringIntegrationMigrationSamples {

  @Test
  void registry() throws Exception {
    try (LockClient client = Locks.connect("local:docs-si")) {
      // tag::registry[]
      LocksmithLockRegistry registry = new LocksmithLockRegistry(client); // a @Bean with Spring
      LocksmithLock lock = registry.obtain("orders:42"); // a java.util.concurrent.locks.Lock
      if (lock.tryLock(3, TimeUnit.SECONDS)) {
        try {
          OptionalLong token = lock.fencingToken(); // present while this thread holds it
          write(token.orElseThrow());
        } finally {
          lock.unlock();
        }
      }
      // end::registry[]
      assertThat(lock.fencingToken()).isEmpty();
    }
  }

  @Test
  void shorterLeaseForFasterFailover() throws Exception {
    try (LockClient client = Locks.connect("local:docs-si-2")) {
      // tag::short-lease[]
      LockOptions fiveSeconds = LockOptions.builder().lease(Duration.ofSeconds(5)).build();
      LocksmithLockRegistry registry = new LocksmithLockRegistry(client, fiveSeconds);
      // renewed every third of its lease while held; a killed leader's lock frees within 5 s
      // end::short-lease[]
      LocksmithLock lock = registry.obtain("leader");
      lock.lock();
      try {
        assertThat(lock.fencingToken()).isPresent();
      } finally {
        lock.unlock();
      }
    }
  }

  @Test
  void ttlLock() throws Exception {
    try (LockClient client = Locks.connect("local:docs-si-3")) {
      LocksmithLockRegistry registry = new LocksmithLockRegistry(client);
      // tag::ttl[]
      LocksmithLock lock = registry.obtain("batch");
      lock.lock(Duration.ofSeconds(20)); // a lease of 20 s, not renewed in the background
      try {
        registry.renewLock("batch", Duration.ofSeconds(20)); // extend by hand as the work goes on
      } finally {
        lock.unlock();
      }
      // end::ttl[]
    }
  }

  private static void write(long token) {
    assertThat(token).isPositive();
  }
}
