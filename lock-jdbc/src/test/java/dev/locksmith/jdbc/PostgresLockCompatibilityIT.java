package dev.locksmith.jdbc;

import org.junit.jupiter.api.extension.RegisterExtension;

/** The kit against a real PostgreSQL (initdb + postgres) started on a free loopback port. */
class PostgresLockCompatibilityIT extends JdbcLockCompatibilityIT {
  @RegisterExtension static final DatabaseExtension DATABASE = DatabaseExtension.postgres();

  @Override
  TestDatabases.Db db() {
    return DATABASE.db();
  }
}
