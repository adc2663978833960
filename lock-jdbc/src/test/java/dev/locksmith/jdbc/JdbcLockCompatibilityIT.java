package dev.locksmith.jdbc;

import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.LockCompatibilityKit;

/**
 * The whole compatibility kit against one real database; {@link MariaDbLockCompatibilityIT}, {@link
 * PostgresLockCompatibilityIT} and {@link H2LockCompatibilityIT} run it three times. Fault hooks:
 * revoke deletes the lock's row; pause/resume SIGSTOP/SIGCONT the server process (and PostgreSQL's
 * backends); kill/restart the server.
 */
abstract class JdbcLockCompatibilityIT extends LockCompatibilityKit {
  static final String TABLE = "tck_locks";

  /**
   * @return the database under test, started once per JVM
   */
  abstract TestDatabases.Db db();

  @Override
  protected String uri() {
    String uri = db().uri;
    return uri + (uri.contains("?") ? "&" : "?") + "table=" + TABLE;
  }

  @Override
  protected FaultHooks faults() {
    TestDatabases.Db db = db();
    return JdbcComparisonTarget.hooks(db).withRevoke(lockName -> db.deleteRow(TABLE, lockName));
  }
}
