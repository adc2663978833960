package dev.locksmith.jdbc;

import org.junit.jupiter.api.BeforeAll;

/** The kit against a real mariadbd started on a free loopback port with a fresh data directory. */
class MariaDbLockCompatibilityIT extends JdbcLockCompatibilityIT {
  private static TestDatabases.Db db;

  @BeforeAll
  static void startDatabase() throws Exception {
    db = TestDatabases.mariadb();
  }

  @Override
  TestDatabases.Db db() {
    return db;
  }
}
