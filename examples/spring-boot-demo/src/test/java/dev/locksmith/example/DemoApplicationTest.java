package dev.locksmith.example;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/** The example runs as a newcomer runs it, and says what it should. */
class DemoApplicationTest {

  @Test
  void theDemoLosesNoItemAndTheFenceRefusesTheZombie() {
    try (ConfigurableApplicationContext ctx = SpringApplication.run(DemoApplication.class)) {
      Demo demo = ctx.getBean(Demo.class);
      assertThat(demo.lines).hasSize(3);
      assertThat(demo.lines.get(0)).endsWith(": 80 of 100 left");
      assertThat(demo.lines.get(1)).endsWith("refused by the fence");
      assertThat(demo.lines.get(2)).contains("locksmith.acquire{outcome=acquired} count=20").endsWith("locksmith.leases.held=0");
    }
  }
}
