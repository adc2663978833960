package dev.locksmith.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Objects;

/**
 * Makes your own SQL update conditional on a lock's fencing token, so a holder whose lease ran out
 * (paused, cut off) cannot overwrite what a newer holder wrote. Your table gets one extra column
 * that remembers the highest token that wrote each row, much like an optimistic-locking version
 * column:
 *
 * <pre>{@code
 * ALTER TABLE account ADD COLUMN lock_fence BIGINT;
 *
 * try (Lease lease = client.lock("account:42").acquire(Duration.ofSeconds(5));
 *      Connection c = appDataSource.getConnection()) {
 *   int rows = FencedWrites.update(c, "account", "balance = balance - ?", "id = ?", "lock_fence",
 *       lease.fencingToken(), 100, 42);
 *   if (rows == 0) {
 *     // no such row, or a holder with a newer token has written it: our lease is stale
 *   }
 * }
 * }</pre>
 *
 * The statement run is {@code UPDATE account SET balance = balance - ?, lock_fence = ? WHERE (id =
 * ?) AND (lock_fence IS NULL OR lock_fence <= ?)}: the same holder may write many times, an older
 * one never again. Tokens of different lock names are unrelated, so use one lock name per fenced
 * row (or group of rows).
 */
public final class FencedWrites {
  private FencedWrites() {}

  /**
   * Runs a fenced UPDATE on the caller's connection (in the caller's transaction, if any).
   *
   * @param connection the connection to run it on; not closed
   * @param table the table, a plain identifier (optionally schema.table)
   * @param assignments the SET list without the fence column, such as {@code balance = ?}
   * @param condition the WHERE condition without the fence check, such as {@code id = ?}
   * @param fenceColumn the BIGINT column that remembers the highest token that wrote the row
   * @param fencingToken the token of the lease held, {@code lease.fencingToken()}
   * @param parameters values for the {@code ?} of {@code assignments}, then of {@code condition}
   * @return rows updated: 0 when no row matched or a newer holder has written every matching row
   * @throws SQLException as the driver throws it
   * @throws IllegalArgumentException if a name is not a plain identifier or a fragment is blank or
   *     holds ';'
   */
  public static int update(
      Connection connection,
      String table,
      String assignments,
      String condition,
      String fenceColumn,
      long fencingToken,
      Object... parameters)
      throws SQLException {
    Objects.requireNonNull(connection, "`connection` was null");
    identifier("table", table);
    identifier("fenceColumn", fenceColumn);
    fragment("assignments", assignments);
    fragment("condition", condition);
    if (fencingToken <= 0) {
      throw new IllegalArgumentException(
          "`fencingToken` was " + fencingToken + " but it must be a lease's token, greater than 0");
    }
    Object[] params = parameters == null ? new Object[0] : parameters;
    int inAssignments = count(assignments);
    int inCondition = count(condition);
    if (inAssignments + inCondition != params.length) {
      throw new IllegalArgumentException(
          "`parameters` had "
              + params.length
              + " values but the assignments and condition have "
              + (inAssignments + inCondition)
              + " '?' placeholders");
    }
    String sql =
        "UPDATE "
            + table
            + " SET "
            + assignments
            + ", "
            + fenceColumn
            + " = ? WHERE ("
            + condition
            + ") AND ("
            + fenceColumn
            + " IS NULL OR "
            + fenceColumn
            + " <= ?)";
    try (PreparedStatement ps = connection.prepareStatement(sql)) {
      int i = 1;
      for (int p = 0; p < inAssignments; p++) {
        ps.setObject(i++, params[p]);
      }
      ps.setLong(i++, fencingToken);
      for (int p = inAssignments; p < params.length; p++) {
        ps.setObject(i++, params[p]);
      }
      ps.setLong(i, fencingToken);
      return ps.executeUpdate();
    }
  }

  private static void identifier(String what, String value) {
    Objects.requireNonNull(value, "`" + what + "` was null");
    if (!LeaseTable.IDENTIFIER.matcher(value).matches()) {
      throw new IllegalArgumentException(
          "`"
              + what
              + "` was '"
              + value
              + "' but it must be a plain identifier (letters, digits and '_', not starting with a"
              + " digit), optionally schema-qualified");
    }
  }

  private static void fragment(String what, String value) {
    Objects.requireNonNull(value, "`" + what + "` was null");
    if (value.isBlank() || value.indexOf(';') >= 0) {
      throw new IllegalArgumentException(
          "`"
              + what
              + "` was '"
              + value
              + "' but it must be one SQL fragment with '?' for values, not blank and without ';'");
    }
  }

  private static int count(String sql) {
    int n = 0;
    boolean quoted = false;
    for (int i = 0; i < sql.length(); i++) {
      char ch = sql.charAt(i);
      if (ch == '\'') {
        quoted = !quoted;
      } else if (ch == '?' && !quoted) {
        n++;
      }
    }
    return n;
  }
}
