package dev.locksmith.jdbc;

import dev.locksmith.LockConfigurationException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;

/**
 * The lease table's and its wait queue's existence and columns: checked, created or completed (a
 * table of an earlier version) when {@link LeaseTable} is opened, else a failure stating the DDL to
 * run.
 */
final class LeaseTableSchema {
  // the lease table's logger: these messages were logged under its name before they moved here
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(LeaseTable.class);

  private final LeaseTable leases;
  private final Dialect dialect;
  private final String table;
  private final String queueTable;

  /**
   * Whether the table has {@code queued_until} (set by {@link #ensureExists}): a taker then skips
   * the wait queue while it reads that column in the past. Without it (a table of an earlier
   * version, create-table=false), every free take asks the queue, as before.
   */
  private volatile boolean queueHint;

  LeaseTableSchema(LeaseTable leases, Dialect dialect, String table, String queueTable) {
    this.leases = leases;
    this.dialect = dialect;
    this.table = table;
    this.queueTable = queueTable;
  }

  /**
   * @return whether the table has {@code queued_until}, as {@link #ensureExists} found it
   */
  boolean queueHint() {
    return queueHint;
  }

  /**
   * Makes sure the table exists: creates it when allowed, else fails with the DDL to run.
   *
   * @throws LockConfigurationException if it is missing and may not be created
   */
  void ensureExists(boolean create) throws SQLException {
    if (!exists(table, "name, owner, fence, expires_at, acquired_at, holder")) {
      String ddl = dialect.ddl(table);
      if (!create) {
        throw new LockConfigurationException(
            List.of(
                "`table` was '"
                    + table
                    + "' but no such table exists and create-table=false;"
                    + " create it and its wait queue with:\n"
                    + ddl
                    + ";\n"
                    + dialect.queueDdl(queueTable)));
      }
      createTable(table, ddl);
    }
    // Tables of earlier versions have no queued_until: it lets an uncontended take skip the queue.
    queueHint = hasColumn(table, "queued_until");
    if (!queueHint) {
      String alter = "ALTER TABLE " + table + " ADD COLUMN queued_until BIGINT NOT NULL DEFAULT 0";
      if (create) {
        try (Connection c = leases.borrow();
            Statement st = c.createStatement()) {
          st.execute(alter);
          if (!c.getAutoCommit()) {
            c.commit();
          }
        } catch (SQLException e) {
          if (!hasColumn(
              table, "queued_until")) { // another client may have added it at the same moment
            throw new SQLException(
                "adding the column queued_until to the lock table "
                    + table
                    + " failed ("
                    + e.getMessage()
                    + "); add it yourself with:\n"
                    + alter,
                e.getSQLState(),
                e.getErrorCode(),
                e);
          }
        }
        queueHint = true;
      } else {
        LOG.info(
            "the lock table {} has no column queued_until (made by an earlier version of lock-jdbc)"
                + " and create-table=false: every acquire of a free lock asks the wait queue; add"
                + " it with: {}",
            table,
            alter);
      }
    }
    // Tables of earlier versions have no wait queue beside them: it is added the same way.
    if (!exists(queueTable, "name, ticket, owner, expires_at")) {
      String ddl = dialect.queueDdl(queueTable);
      if (!create) {
        throw new LockConfigurationException(
            List.of(
                "`table` was '"
                    + table
                    + "' but its wait queue "
                    + queueTable
                    + " does not exist (tables made by earlier versions of lock-jdbc have none;"
                    + " waiters queue in it) and create-table=false; create it with:\n"
                    + ddl));
      }
      createTable(queueTable, ddl);
    }
  }

  void createTable(String name, String ddl) throws SQLException {
    try (Connection c = leases.borrow();
        Statement s = c.createStatement()) {
      s.execute(ddl);
      if (!c.getAutoCommit()) {
        c.commit();
      }
    } catch (SQLException e) {
      if (!exists(
          name,
          "*")) { // a concurrent creator may have won the race; only fail if it is still missing
        throw new SQLException(
            "creating the lock table "
                + name
                + " failed ("
                + e.getMessage()
                + "); create it yourself with:\n"
                + ddl,
            e.getSQLState(),
            e.getErrorCode(),
            e);
      }
    }
  }

  /**
   * @return whether an existing table has the column
   */
  boolean hasColumn(String name, String column) throws SQLException {
    // PostgreSQL 42703, MySQL/MariaDB 42S22 (1054), H2 42S22 / 42122: no such column
    return answers(
        "SELECT " + column + " FROM " + name + " WHERE 1 = 0",
        e -> {
          String state = e.getSQLState() == null ? "" : e.getSQLState();
          return state.equals("42703")
              || state.equals("42S22")
              || state.equals("42122")
              || e.getErrorCode() == 1054;
        });
  }

  boolean exists(String name, String columns) throws SQLException {
    return answers("SELECT " + columns + " FROM " + name + " WHERE 1 = 0", dialect::isMissingTable);
  }

  /**
   * Runs a read that writes nothing.
   *
   * @param missing whether its failure means what it reads is not there
   * @return true if it ran, false if it failed so
   */
  private boolean answers(String sql, java.util.function.Predicate<SQLException> missing)
      throws SQLException {
    try (Connection c = leases.borrow()) {
      boolean auto = c.getAutoCommit();
      try (Statement s = c.createStatement()) {
        s.executeQuery(sql).close();
        if (!auto) {
          c.rollback(); // ends the read's transaction: nothing was written
        }
        return true;
      } catch (SQLException e) {
        if (missing.test(e)) {
          if (!auto) {
            LeaseTable.rollbackQuietly(c);
          }
          return false;
        }
        throw e;
      }
    }
  }
}
