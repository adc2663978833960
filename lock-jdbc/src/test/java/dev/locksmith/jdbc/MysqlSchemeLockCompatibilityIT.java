package dev.locksmith.jdbc;

import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The kit through a {@code jdbc:mysql:} URI, so that the MySQL dialect and MySQL Connector/J's own
 * URL handling are run as a MySQL user would: against the fixture's mariadbd (no MySQL server is
 * packaged here; the dialects share their SQL, and Connector/J speaks to both).
 */
class MysqlSchemeLockCompatibilityIT extends JdbcLockCompatibilityIT {
  @RegisterExtension static final DatabaseExtension DATABASE = DatabaseExtension.mariadb();

  @Override
  TestDatabases.Db db() {
    return DATABASE.db();
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
