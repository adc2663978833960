package dev.locksmith.jdbc;

import org.junit.jupiter.api.extension.RegisterExtension;

/** The kit against a real mariadbd started on a free loopback port with a fresh data directory. */
class MariaDbLockCompatibilityIT extends JdbcLockCompatibilityIT {
  @RegisterExtension static final DatabaseExtension DATABASE = DatabaseExtension.mariadb();

  @Override
  TestDatabases.Db db() {
    return DATABASE.db();
  }
}
