package dev.locksmith.bench;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The raw JDBC lock floor on MariaDB/MySQL (and on PostgreSQL for the jdbc-peers section), one
 * plain connection per thread (no pool): a transaction of one {@code SELECT ... FOR UPDATE} on the
 * lock's row and one {@code UPDATE} that takes it (an INSERT the first time a name is seen), then
 * the release {@code UPDATE}. The row's expiry uses the database's clock, as lock-jdbc does.
 */
final class JdbcImpl implements LockImpl {
  static final String TABLE = "bench_raw_locks";
  private static final AtomicLong SEQ = new AtomicLong();

  private final String url;
  private final Connection c;
  private final PreparedStatement select;
  private final PreparedStatement take;
  private final PreparedStatement insert;
  private final PreparedStatement release;
  private final PreparedStatement insertFree;
  private final java.util.Set<String> known = new java.util.HashSet<>();

  JdbcImpl(String url) throws SQLException {
    this.url = url;
    this.c = DriverManager.getConnection(url);
    boolean postgres = url.startsWith("jdbc:postgresql:");
    try (Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE IF NOT EXISTS "
              + TABLE
              + " (name VARCHAR(255) PRIMARY KEY, owner VARCHAR(255), expires_at BIGINT NOT NULL)"
              + (postgres ? "" : " ENGINE=InnoDB"));
    }
    c.setAutoCommit(false);
    String now =
        postgres
            ? "CAST(EXTRACT(EPOCH FROM CLOCK_TIMESTAMP()) * 1000 AS BIGINT)"
            : "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)";
    select =
        c.prepareStatement(
            "SELECT owner, expires_at, " + now + " FROM " + TABLE + " WHERE name = ? FOR UPDATE");
    take =
        c.prepareStatement(
            "UPDATE " + TABLE + " SET owner = ?, expires_at = " + now + " + 30000 WHERE name = ?");
    insert =
        c.prepareStatement(
            "INSERT INTO "
                + TABLE
                + " (name, owner, expires_at) VALUES (?, ?, "
                + now
                + " + 30000)");
    insertFree =
        c.prepareStatement(
            postgres
                ? "INSERT INTO "
                    + TABLE
                    + " (name, owner, expires_at) VALUES (?, NULL, 0) ON CONFLICT (name) DO NOTHING"
                : "INSERT IGNORE INTO " + TABLE + " (name, owner, expires_at) VALUES (?, NULL, 0)");
    release =
        c.prepareStatement("UPDATE " + TABLE + " SET owner = NULL WHERE name = ? AND owner = ?");
  }

  @Override
  public Held acquire(String name, Duration timeout) throws SQLException {
    if (known.add(name)) {
      // The row exists before the first measured acquire: SELECT ... FOR UPDATE on a missing row
      // takes a gap lock, and concurrent first inserts into one gap deadlock (lock-jdbc retries
      // those).
      insertFree.setString(1, name);
      insertFree.executeUpdate();
      c.commit();
    }
    String owner = "raw-" + SEQ.incrementAndGet();
    boolean free;
    boolean exists;
    select.setString(1, name);
    try (ResultSet rs = select.executeQuery()) {
      exists = rs.next();
      free = !exists || rs.getString(1) == null || rs.getLong(2) <= rs.getLong(3);
    }
    if (!free) {
      c.rollback();
      return null;
    }
    if (exists) {
      take.setString(1, owner);
      take.setString(2, name);
      take.executeUpdate();
    } else {
      insert.setString(1, name);
      insert.setString(2, owner);
      insert.executeUpdate();
    }
    c.commit();
    return () -> {
      release.setString(1, name);
      release.setString(2, owner);
      release.executeUpdate();
      c.commit();
    };
  }

  @Override
  public LockImpl forThread() throws SQLException {
    return new JdbcImpl(url);
  }

  @Override
  public void close() {
    try {
      c.close();
    } catch (SQLException e) {
      // closing after the run
    }
  }
}
