package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.jdbc.DatabaseExtension;
import dev.locksmith.redis.RedisServerExtension;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The lock advice runs outside {@code @Transactional} by default, so the lock is released after the
 * commit: real concurrent read-modify-write transactions on PostgreSQL and MariaDB lose no update.
 * With the transaction advice ordered outside the lock, the same code loses updates. The lock
 * itself is held on {@code local:}, on the same database through lock-jdbc, and on a real Redis.
 */
class TransactionOrderIT {
  @RegisterExtension static final DatabaseExtension MARIADB = DatabaseExtension.mariadb();
  @RegisterExtension static final DatabaseExtension POSTGRES = DatabaseExtension.postgres();
  @RegisterExtension static final RedisServerExtension REDIS = RedisServerExtension.shared("boot");

  static final int THREADS = 4;
  static final int EACH = 8;

  /** A read-modify-write that only a lock makes safe. */
  public static class Counter {
    private final JdbcTemplate jdbc;

    Counter(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    @Locked(name = "counter", key = "#id", waitFor = "60s")
    @Transactional
    public void increment(int id) {
      Integer v = jdbc.queryForObject("SELECT v FROM counters WHERE id = ?", Integer.class, id);
      jdbc.update("UPDATE counters SET v = ? WHERE id = ?", v + 1, id);
      // A commit that takes a moment, as under load: with the lock released inside the
      // transaction, the next holder reads the value from before this commit.
      TransactionSynchronizationManager.registerSynchronization(
          new TransactionSynchronization() {
            @Override
            public void beforeCommit(boolean readOnly) {
              try {
                Thread.sleep(15);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
          });
    }
  }

  static DataSource dataSource;

  @Configuration
  @EnableTransactionManagement
  static class DefaultOrder {
    @Bean
    PlatformTransactionManager tx() {
      return new DataSourceTransactionManager(dataSource);
    }

    @Bean
    Counter counter() {
      return new Counter(new JdbcTemplate(dataSource));
    }
  }

  /** The trap: the transaction advice ordered outside the lock advice. */
  @Configuration
  @EnableTransactionManagement(order = Ordered.LOWEST_PRECEDENCE - 1000)
  static class TransactionOutside {
    @Bean
    PlatformTransactionManager tx() {
      return new DataSourceTransactionManager(dataSource);
    }

    @Bean
    Counter counter() {
      return new Counter(new JdbcTemplate(dataSource));
    }
  }

  private static String lockUri(String backend, String database, String url, String user)
      throws Exception {
    switch (backend) {
      case "local":
        return "local:tx-" + database + "-" + System.nanoTime();
      case "jdbc":
        // the lock table in the same database; MariaDB through its own URL scheme
        return url.replace("jdbc:mysql:", "jdbc:mariadb:") + "?user=" + user;
      case "redis":
        return REDIS.uri() + "?namespace=tx" + System.nanoTime();
      default:
        throw new IllegalArgumentException(backend);
    }
  }

  private static int run(String database, String backend, Class<?> config) throws Exception {
    DatabaseExtension db = database.equals("postgresql") ? POSTGRES : MARIADB;
    String url = db.jdbcUrl();
    String user = db.user();
    dataSource = new DriverManagerDataSource(url, user, "");
    JdbcTemplate jdbc = new JdbcTemplate(dataSource);
    jdbc.execute("CREATE TABLE IF NOT EXISTS counters (id INT PRIMARY KEY, v INT NOT NULL)");
    jdbc.update("DELETE FROM counters");
    jdbc.update("INSERT INTO counters (id, v) VALUES (1, 0)");
    int[] result = new int[1];
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
        .withPropertyValues("locksmith.uri=" + lockUri(backend, database, url, user))
        .withUserConfiguration(config)
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              Counter counter = ctx.getBean(Counter.class);
              ExecutorService pool = Executors.newFixedThreadPool(THREADS);
              try {
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < THREADS; t++) {
                  done.add(
                      pool.submit(
                          () -> {
                            for (int i = 0; i < EACH; i++) {
                              counter.increment(1);
                            }
                            return null;
                          }));
                }
                for (Future<?> f : done) {
                  f.get();
                }
              } finally {
                pool.shutdownNow();
              }
              result[0] = jdbc.queryForObject("SELECT v FROM counters WHERE id = 1", Integer.class);
            });
    return result[0];
  }

  @ParameterizedTest(name = "{0} transactions, lock on {1}")
  @CsvSource({
    "postgresql, local",
    "mariadb, local",
    "postgresql, jdbc",
    "mariadb, jdbc",
    "postgresql, redis",
    "mariadb, redis"
  })
  void withTheDefaultOrderNoUpdateIsLost(String database, String backend) throws Exception {
    assertThat(run(database, backend, DefaultOrder.class))
        .as(
            "increments on "
                + database
                + " with the lock ("
                + backend
                + ") outside the transaction")
        .isEqualTo(THREADS * EACH);
  }

  @ParameterizedTest(name = "{0} transactions, lock on {1}")
  @CsvSource({"postgresql, local", "mariadb, local", "postgresql, jdbc", "mariadb, redis"})
  void withTheTransactionOutsideTheLockUpdatesAreLost(String database, String backend)
      throws Exception {
    assertThat(run(database, backend, TransactionOutside.class))
        .as(
            "increments on "
                + database
                + " with the lock ("
                + backend
                + ") released inside the transaction (the trap this order avoids)")
        .isLessThan(THREADS * EACH);
  }
}
