package dev.locksmith.jdbc;

import org.junit.jupiter.api.BeforeAll;

/**
 * The kit against in-process H2 (a file database, served to the kit's child process by
 * AUTO_SERVER); no server process, so no pause hook.
 */
class H2LockCompatibilityIT extends JdbcLockCompatibilityIT {
  private static TestDatabases.Db db;

  @BeforeAll
  static void startDatabase() throws Exception {
    db = TestDatabases.h2();
  }

  @Override
  TestDatabases.Db db() {
    return db;
  }
}
