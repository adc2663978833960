package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.DriverManager;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/** The driver properties our own pool adds: which drivers get them, and that the user's win. */
class JdbcDriverSettingsTest {

  @Test
  void connectorJKeepsItsStatementParsePerConnection() throws Exception {
    Properties props = new Properties();
    JdbcLockProvider.addStatementCache(
        DriverManager.getDriver("jdbc:mysql://localhost:3306/x"), props);
    assertThat(props).containsEntry("cachePrepStmts", "true");
    assertThat(Integer.parseInt(props.getProperty("prepStmtCacheSqlLimit")))
        .as("room for a renewal of 250 names")
        .isGreaterThan(2 * 250 * 3 + 200);
  }

  @Test
  void theUsersOwnValuesWin() throws Exception {
    Properties props = new Properties();
    props.setProperty("cachePrepStmts", "false");
    JdbcLockProvider.addStatementCache(
        DriverManager.getDriver("jdbc:mysql://localhost:3306/x"), props);
    assertThat(props).containsEntry("cachePrepStmts", "false");
  }

  @Test
  void otherDriversGetNothing() throws Exception {
    for (String url : new String[] {"jdbc:postgresql://localhost:5432/x", "jdbc:h2:mem:x"}) {
      Properties props = new Properties();
      JdbcLockProvider.addStatementCache(DriverManager.getDriver(url), props);
      assertThat(props).as(url).isEmpty();
    }
  }
}
