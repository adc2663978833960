package dev.locksmith.jdbc;

import org.junit.jupiter.api.BeforeAll;

/** The kit against a real PostgreSQL (initdb + postgres) started on a free loopback port. */
class PostgresLockCompatibilityIT extends JdbcLockCompatibilityIT {
  private static TestDatabases.Db db;

  @BeforeAll
  static void startDatabase() throws Exception {
    db = TestDatabases.postgres();
  }

  @Override
  TestDatabases.Db db() {
    return db;
  }
}
