package dev.locksmith.jdbc;

import org.junit.jupiter.api.BeforeAll;

/**
 * The kit through a {@code jdbc:mysql:} URI, so that the MySQL dialect and MySQL Connector/J's own
 * URL handling are run as a MySQL user would: against the fixture's mariadbd (no MySQL server is
 * packaged here; the dialects share their SQL, and Connector/J speaks to both).
 */
class MysqlSchemeLockCompatibilityIT extends JdbcLockCompatibilityIT {
  private static TestDatabases.Db db;

  @BeforeAll
  static void startDatabase() throws Exception {
    db = TestDatabases.mariadb();
  }

  @Override
  TestDatabases.Db db() {
    return db;
  }

  @Override
  protected String uri() {
    String uri = super.uri();
    if (!uri.startsWith("jdbc:mariadb:")) {
      throw new IllegalStateException(
          "expected the MariaDB fixture's URI to start with jdbc:mariadb:, but it is " + uri);
    }
    return "jdbc:mysql:" + uri.substring("jdbc:mariadb:".length());
  }
}
