package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;

/**
 * A whole Spring Boot application: the starter is found through its auto-configuration imports
 * file, as in a user's application, not named by the test.
 */
@SpringBootTest(
    classes = LockedSpringBootTest.App.class,
    properties = {"locksmith.uri=local:boot-app", "locksmith.lease=20s"})
class LockedSpringBootTest {

  /** A user's service. */
  public static class Payments {
    /**
     * @param orderId the order
     * @param lease filled by the advice
     * @return the lock name and whether the lease is valid
     */
    @Locked(name = "pay", key = "#orderId")
    public String pay(long orderId, Lease lease) {
      return lease.lockName() + " " + lease.isValid();
    }
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    Payments payments() {
      return new Payments();
    }

    /**
     * lock-jdbc on the test class path brings HikariCP; without a DataSource of its own, Spring
     * Boot 3.5's DataSource auto-configuration would try to build one with no database set. This
     * one is never connected.
     */
    @Bean
    javax.sql.DataSource unusedDataSource() {
      return new org.springframework.jdbc.datasource.DriverManagerDataSource(
          "jdbc:postgresql://127.0.0.1:1/unused");
    }
  }

  @Autowired Payments payments;

  @Autowired LockClient client;

  @Autowired LockTemplate template;

  @Test
  void theStarterIsAutoConfiguredAndTheAdviceApplies() {
    assertThat(client.config().uri().toString()).isEqualTo("local:boot-app");
    assertThat(client.config().defaults().lease().getSeconds()).isEqualTo(20);
    assertThat(payments.pay(7, null)).isEqualTo("pay:7 true");
    assertThat(template.tryLocked("pay:7", java.time.Duration.ZERO, Lease::fencingToken))
        .as("released after the call")
        .isPresent();
  }
}
