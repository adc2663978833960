package dev.locksmith.jdbc;

import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The kit against in-process H2 (a file database, served to the kit's child process by
 * AUTO_SERVER); no server process, so no pause hook.
 */
class H2LockCompatibilityIT extends JdbcLockCompatibilityIT {
  @RegisterExtension static final DatabaseExtension DATABASE = DatabaseExtension.h2();

  @Override
  TestDatabases.Db db() {
    return DATABASE.db();
  }
}
