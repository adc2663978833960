package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfigurationException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@code locksmith.jdbc.use-application-datasource=true}: the default client on the application's
 * DataSource.
 */
class LocksmithApplicationDataSourceTest {
  private static final AtomicInteger DATABASES = new AtomicInteger();

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
          .withPropertyValues("locksmith.jdbc.use-application-datasource=true");

  @Configuration
  static class AppDataSource {
    @Bean
    DataSource dataSource() {
      JdbcDataSource ds = new JdbcDataSource();
      ds.setURL("jdbc:h2:mem:app" + DATABASES.incrementAndGet() + ";DB_CLOSE_DELAY=-1");
      ds.setUser("sa");
      return ds;
    }
  }

  @Test
  void theClientLocksOnTheApplicationsDataSource() {
    runner
        .withUserConfiguration(AppDataSource.class)
        .withPropertyValues("locksmith.options.table=app_locks")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              LockClient client = ctx.getBean(LockClient.class);
              assertThat(client.config().uri().scheme()).isEqualTo("jdbc:h2");
              DataSource app = ctx.getBean(DataSource.class);
              try (Lease lease = client.lock("nightly").acquire(Duration.ofSeconds(5))) {
                assertThat(lease.fencingToken()).isPositive();
                assertThat(rows(app, "app_locks", "nightly"))
                    .as("the lease row in the application's database")
                    .isEqualTo(1);
              }
            });
  }

  @Test
  void noDataSourceBeanFailsTheStartNamingTheProperty() {
    runner.run(
        ctx -> {
          assertThat(ctx).hasFailed();
          assertThat(failure(ctx.getStartupFailure()))
              .contains(
                  "`locksmith.jdbc.use-application-datasource` is true but the application has no"
                      + " DataSource bean");
        });
  }

  @Test
  void aUriBesidesItFailsTheStart() {
    runner
        .withUserConfiguration(AppDataSource.class)
        .withPropertyValues("locksmith.uri=jdbc:h2:mem:other")
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              assertThat(failure(ctx.getStartupFailure()))
                  .contains(
                      "`locksmith.uri` is set but `locksmith.jdbc.use-application-datasource` is"
                          + " true");
            });
  }

  @Test
  void aMisspeltJdbcOptionFailsTheStart() {
    runner
        .withUserConfiguration(AppDataSource.class)
        .withPropertyValues("locksmith.options.tabel=x")
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              assertThat(failure(ctx.getStartupFailure()))
                  .contains("`locksmith.options.tabel`")
                  .contains("did you mean `locksmith.options.table`");
            });
  }

  @Configuration
  static class DownDataSource {
    @Bean
    DataSource dataSource() {
      JdbcDataSource ds = new JdbcDataSource();
      ds.setURL("jdbc:h2:tcp://127.0.0.1:1/nowhere"); // no server there
      return ds;
    }
  }

  @Test
  void aDatabaseThatCannotBeReachedIsReportedAgainstTheDataSource() {
    runner
        .withUserConfiguration(DownDataSource.class)
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              org.springframework.boot.diagnostics.FailureAnalysis analysis =
                  new LocksmithFailureAnalyzer().analyze(ctx.getStartupFailure());
              assertThat(analysis.getDescription())
                  .contains("the DataSource bean 'dataSource'")
                  .contains("`locksmith.jdbc.use-application-datasource`");
              assertThat(analysis.getAction())
                  .contains("spring.datasource.*")
                  .doesNotContain("lock server at");
            });
  }

  @Test
  void offByDefault() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
        .withUserConfiguration(AppDataSource.class)
        .run(
            ctx -> {
              assertThat(ctx.getBean(LockClient.class).config().uri().scheme()).isEqualTo("local");
            });
  }

  /**
   * @return the messages of the failure and its causes, the LockConfigurationException's among them
   */
  private static String failure(Throwable t) {
    StringBuilder all = new StringBuilder();
    boolean ours = false;
    for (; t != null; t = t.getCause()) {
      all.append(t.getMessage()).append('\n');
      ours |= t instanceof LockConfigurationException;
    }
    assertThat(ours).as("a LockConfigurationException in " + all).isTrue();
    return all.toString();
  }

  private static long rows(DataSource ds, String table, String name) throws SQLException {
    try (Connection c = ds.getConnection();
        PreparedStatement s =
            c.prepareStatement("SELECT COUNT(*) FROM " + table + " WHERE name = ?")) {
      s.setString(1, name);
      try (ResultSet r = s.executeQuery()) {
        r.next();
        return r.getLong(1);
      }
    }
  }
}
