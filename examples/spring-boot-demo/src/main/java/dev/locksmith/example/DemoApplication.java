package dev.locksmith.example;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import javax.sql.DataSource;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;

/** The example application: an in-memory H2 database, a stock service under {@code @Locked}, and a demo run. */
@SpringBootApplication
@EnableTransactionManagement
public class DemoApplication {

  /**
   * @param args Spring Boot arguments, such as {@code --locksmith.uri=...}
   */
  public static void main(String[] args) {
    SpringApplication.run(DemoApplication.class, args).close();
  }

  @Bean
  DataSource dataSource() {
    return new DriverManagerDataSource("jdbc:h2:mem:demo;DB_CLOSE_DELAY=-1", "sa", "");
  }

  @Bean
  JdbcTemplate jdbcTemplate(DataSource dataSource) {
    JdbcTemplate jdbc = new JdbcTemplate(dataSource);
    jdbc.execute("CREATE TABLE IF NOT EXISTS stock (sku VARCHAR(32) PRIMARY KEY, qty INT NOT NULL, fence BIGINT NOT NULL)");
    return jdbc;
  }

  @Bean
  PlatformTransactionManager transactionManager(DataSource dataSource) {
    return new DataSourceTransactionManager(dataSource);
  }

  /** Without Spring Boot's actuator, a registry of our own, so the demo can print the lock meters. */
  @Bean
  MeterRegistry meterRegistry() {
    return new SimpleMeterRegistry();
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
