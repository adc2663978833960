package dev.locksmith.example;

import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The example application: an in-memory H2 database (Spring Boot's pool from
 * {@code spring.datasource.*}), a stock service under {@code @Locked}, a REST endpoint that takes
 * an item under the lock and answers with the fencing token, the actuator (endpoint
 * {@code locksmith}), and a demo run at start.
 */
@SpringBootApplication
public class DemoApplication {

  /**
   * Starts the application; it serves on port 8080 until stopped.
   *
   * @param args Spring Boot arguments, such as {@code --locksmith.uri=...} or {@code --server.port=...}
   */
  public static void main(String[] args) {
    SpringApplication.run(DemoApplication.class, args);
  }

  @Bean
  Inventory inventory(JdbcTemplate jdbc) {
    return new Inventory(jdbc);
  }

  @Bean
  Demo demo(Inventory inventory, MeterRegistry registry) {
    return new Demo(inventory, registry);
  }
}
