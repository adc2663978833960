package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.LockClient;
import dev.locksmith.shedlock.LocksmithLockProvider;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The ShedLock LockProvider the starter defines over its client when lock-shedlock is present. */
class LocksmithShedLockAutoConfigurationTest {
  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  LocksmithAutoConfiguration.class, LocksmithShedLockAutoConfiguration.class))
          .withPropertyValues("locksmith.uri=local:shedlock-auto");

  @Test
  void aProviderOverTheStartersClient() {
    runner.run(
        ctx -> {
          assertThat(ctx).hasSingleBean(LockProvider.class).hasSingleBean(LockClient.class);
          LockClient client = ctx.getBean(LockClient.class);
          Optional<SimpleLock> lock =
              ctx.getBean(LockProvider.class)
                  .lock(
                      new LockConfiguration(
                          Instant.now(), "nightly", Duration.ofSeconds(30), Duration.ZERO));
          assertThat(lock).isPresent();
          assertThat(client.lock("nightly").state().isHeld())
              .as("held through the starter's client")
              .isTrue();
          assertThat(LocksmithLockProvider.currentFencingToken()).isPresent();
          lock.get().unlock();
        });
  }

  @Configuration
  static class OwnProvider {
    static final LockProvider MINE = config -> Optional.empty();

    @Bean
    LockProvider myProvider() {
      return MINE;
    }
  }

  @Test
  void theApplicationsOwnProviderWins() {
    runner
        .withUserConfiguration(OwnProvider.class)
        .run(
            ctx -> {
              assertThat(ctx).hasSingleBean(LockProvider.class);
              assertThat(ctx.getBean(LockProvider.class)).isSameAs(OwnProvider.MINE);
            });
  }

  @Test
  void nothingWithoutLockShedlock() {
    runner
        .withClassLoader(new FilteredClassLoader(LocksmithLockProvider.class))
        .run(
            ctx -> {
              assertThat(ctx)
                  .hasNotFailed()
                  .hasSingleBean(LockClient.class)
                  .doesNotHaveBean(LocksmithLockProvider.class);
            });
  }

  @Test
  void nothingWithoutShedLock() {
    runner
        .withClassLoader(new FilteredClassLoader("net.javacrumbs.shedlock"))
        .run(
            ctx -> {
              assertThat(ctx)
                  .hasNotFailed()
                  .hasSingleBean(LockClient.class)
                  .doesNotHaveBean(LocksmithLockProvider.class);
            });
  }

  @Test
  void isListedAsAnAutoConfiguration() throws Exception {
    assertThat(AutoConfigurationsListing.listed())
        .contains(LocksmithShedLockAutoConfiguration.class.getName());
  }
}
