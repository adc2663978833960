package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** The health indicator (Spring Boot 4's health module). */
class LocksmithHealthTest {

  @Test
  void upWithTheRedactedUriWhileTheBackendAnswers() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
        .withPropertyValues("locksmith.uri=local:health")
        .run(
            ctx -> {
              HealthIndicator indicator =
                  ctx.getBean("locksmithHealthIndicator", HealthIndicator.class);
              Health health = indicator.health();
              assertThat(health.getStatus()).isEqualTo(Status.UP);
              assertThat(health.getDetails())
                  .containsEntry("uri", ctx.getBean(LockClient.class).config().uri().toString())
                  .containsEntry("checked", true);
            });
  }

  @Test
  void downWithTheErrorWhenTheClientCannotAnswer() {
    LockClient closed = Locks.connect("local:health-down");
    closed.close();
    Health health = new LocksmithHealthIndicator(closed).health();
    assertThat(health.getStatus()).isEqualTo(Status.DOWN);
    assertThat(health.getDetails()).containsEntry("uri", "local:health-down").containsKey("error");
  }
}
