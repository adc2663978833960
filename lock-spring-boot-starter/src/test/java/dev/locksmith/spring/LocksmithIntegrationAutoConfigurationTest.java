package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.LockClient;
import dev.locksmith.spring.integration.LocksmithLockRegistry;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.support.locks.DefaultLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * The Spring Integration LockRegistry the starter defines over its client when
 * lock-spring-integration is present (Boot 4 only: lock-spring-boot3-test leaves this out).
 */
class LocksmithIntegrationAutoConfigurationTest {
  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  LocksmithAutoConfiguration.class, LocksmithIntegrationAutoConfiguration.class))
          .withPropertyValues("locksmith.uri=local:registry-auto");

  @Test
  void aRegistryOverTheStartersClient() {
    runner.run(
        ctx -> {
          assertThat(ctx)
              .hasSingleBean(LockRegistry.class)
              .hasSingleBean(LocksmithLockRegistry.class);
          LockClient client = ctx.getBean(LockClient.class);
          Lock lock = ctx.getBean(LocksmithLockRegistry.class).obtain("leader");
          assertThat(lock.tryLock()).isTrue();
          try {
            assertThat(client.lock("leader").state().isHeld())
                .as("held through the starter's client")
                .isTrue();
          } finally {
            lock.unlock();
          }
        });
  }

  @Configuration
  static class OwnRegistry {
    static final LockRegistry<?> MINE = new DefaultLockRegistry();

    @Bean
    LockRegistry<?> myRegistry() {
      return MINE;
    }
  }

  @Test
  void theApplicationsOwnRegistryWins() {
    runner
        .withUserConfiguration(OwnRegistry.class)
        .run(
            ctx -> {
              assertThat(ctx)
                  .hasSingleBean(LockRegistry.class)
                  .doesNotHaveBean(LocksmithLockRegistry.class);
              assertThat(ctx.getBean(LockRegistry.class)).isSameAs(OwnRegistry.MINE);
            });
  }

  @Test
  void nothingWithoutLockSpringIntegration() {
    runner
        .withClassLoader(new FilteredClassLoader(LocksmithLockRegistry.class))
        .run(
            ctx -> {
              assertThat(ctx)
                  .hasNotFailed()
                  .hasSingleBean(LockClient.class)
                  .doesNotHaveBean(LocksmithLockRegistry.class);
            });
  }

  @Test
  void nothingWithoutSpringIntegration7() {
    // Spring Integration 6.5 (Spring Boot 3.5) has no DistributedLock: lock-spring-integration
    // cannot load there
    runner
        .withClassLoader(
            new FilteredClassLoader(
                "org.springframework.integration.support.locks.DistributedLock"))
        .run(
            ctx -> {
              assertThat(ctx)
                  .hasNotFailed()
                  .hasSingleBean(LockClient.class)
                  .doesNotHaveBean(LocksmithLockRegistry.class);
            });
  }

  @Test
  void isListedAsAnAutoConfiguration() throws Exception {
    assertThat(AutoConfigurationsListing.listed())
        .contains(LocksmithIntegrationAutoConfiguration.class.getName());
  }
}
