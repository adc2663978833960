package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.LockTimeoutException;
import dev.locksmith.Locks;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What the kit cannot see of the wait queue on each database: its rows. A waiter that gives up
 * leaves no ticket; a vanished waiter's ticket keeps its place until it expires by the database
 * clock and not longer; a table made by an earlier version gets its queue beside it, or, with
 * {@code create-table=false}, a message with the DDL to run.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcWaitQueueIT {
  private static final String TABLE = "wait_queue_locks";
  private static final String QUEUE = LeaseTable.queueTable(TABLE);

  private static TestDatabases.Db db(String which) throws Exception {
    switch (which) {
      case "mariadb":
        return TestDatabases.mariadb();
      case "postgresql":
        return TestDatabases.postgres();
      default:
        return TestDatabases.h2();
    }
  }

  private static Dialect dialect(TestDatabases.Db db) {
    return db.name.equals("postgresql") ? Dialect.POSTGRESQL : db.name.equals("h2") ? Dialect.H2 : Dialect.MARIADB;
  }

  private static String uri(TestDatabases.Db db, String table, String more) {
    return db.uri + (db.uri.contains("?") ? "&" : "?") + "table=" + table + more;
  }

  private static LockClient client(TestDatabases.Db db) {
    return Locks.connect(LockConfig.builder().uri(uri(db, TABLE, "")).lease(Duration.ofSeconds(60)).autoRenew(false).build());
  }

  private static String name(String what) {
    return "wait-queue/" + what + "/" + UUID.randomUUID().toString().substring(0, 8);
  }

  private static int tickets(TestDatabases.Db db, String name) throws SQLException {
    try (Connection c = db.admin(); PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM " + QUEUE + " WHERE name = ?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aWaiterThatGivesUpLeavesNoTicketBehind(String which) throws Exception {
    TestDatabases.Db db = db(which);
    String name = name("gives-up");
    try (LockClient holder = client(db); LockClient waiter = client(db)) {
      Lease lease = holder.lock(name).acquire(Duration.ofSeconds(5));
      assertThatThrownBy(() -> waiter.lock(name).acquire(Duration.ofMillis(300))).isInstanceOf(LockTimeoutException.class);
      assertThat(tickets(db, name)).as("tickets after a waiter timed out").isZero();
      assertThat(waiter.lock(name).tryAcquire()).isEmpty();
      assertThat(tickets(db, name)).as("tickets after a tryAcquire() found the lock held").isZero();
      var queued = waiter.lock(name).acquireAsync(Duration.ofSeconds(30));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (tickets(db, name) == 0 && System.nanoTime() < deadline) {
        Thread.onSpinWait();
      }
      assertThat(tickets(db, name)).as("tickets while a waiter waits").isEqualTo(1);
      assertThat(queued.cancel(true)).isTrue();
      deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (tickets(db, name) != 0 && System.nanoTime() < deadline) {
        Thread.onSpinWait();
      }
      assertThat(tickets(db, name)).as("tickets after the waiter was cancelled").isZero();
      assertThat(lease.release()).isTrue();
      try (Lease next = waiter.lock(name).acquire(Duration.ofSeconds(5))) {
        assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aVanishedWaitersTicketKeepsItsPlaceUntilItExpiresByTheDatabaseClock(String which) throws Exception {
    TestDatabases.Db db = db(which);
    String name = name("vanished");
    long ghostMillis = 1_500;
    try (LockClient holder = client(db); LockClient waiter = client(db)) {
      Lease lease = holder.lock(name).acquire(Duration.ofSeconds(5));
      // A waiter whose process died: its ticket stays until its expiry, by the database clock.
      try (Connection c = db.admin(); PreparedStatement ps = c.prepareStatement("INSERT INTO " + QUEUE
          + " (name, ticket, owner, expires_at) VALUES (?, 1, 'ghost', " + dialect(db).nowMillis + " + ?)")) {
        ps.setString(1, name);
        ps.setLong(2, ghostMillis);
        ps.executeUpdate();
        if (!c.getAutoCommit()) {
          c.commit();
        }
      }
      long inserted = System.nanoTime();
      assertThat(lease.release()).isTrue();
      assertThat(waiter.lock(name).tryAcquire()).as("a newcomer while the vanished waiter's ticket is first in line").isEmpty();
      try (Lease next = waiter.lock(name).acquire(Duration.ofSeconds(10))) {
        long after = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - inserted);
        assertThat(after).as("ms from the ghost ticket to the next grant").isBetween(ghostMillis - 100, ghostMillis + 1_000);
        assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
      }
    }
  }

  /**
   * A release nobody announces (the row freed by hand: no NOTIFY, no bell rung) still reaches a
   * waiter whose client rechecks only once a minute and whose lease (so ticket life) is a minute,
   * by the fallback poll (1 s): a lost notification costs latency, never the hand-off.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aReleaseThatNobodyAnnouncesReachesTheWaiterByTheFallbackPoll(String which) throws Exception {
    TestDatabases.Db db = db(which);
    String name = name("unannounced");
    try (LockClient holder = client(db); LockClient waiter = Locks.connect(LockConfig.builder().uri(uri(db, TABLE, ""))
        .lease(Duration.ofSeconds(60)).autoRenew(false).recheck(Duration.ofMinutes(1)).build())) {
      Lease lease = holder.lock(name).acquire(Duration.ofSeconds(5));
      var queued = waiter.lock(name).acquireAsync(Duration.ofSeconds(30));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (tickets(db, name) == 0 && System.nanoTime() < deadline) {
        Thread.onSpinWait();
      }
      assertThat(tickets(db, name)).as("tickets while a waiter waits").isEqualTo(1);
      long freed;
      try (Connection c = db.admin(); PreparedStatement ps = c.prepareStatement("UPDATE " + TABLE + " SET owner = NULL WHERE name = ?")) {
        ps.setString(1, name);
        assertThat(ps.executeUpdate()).isEqualTo(1);
        if (!c.getAutoCommit()) {
          c.commit();
        }
        freed = System.nanoTime();
      }
      try (Lease next = queued.get(5, TimeUnit.SECONDS)) {
        long after = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - freed);
        assertThat(after).as("ms from the unannounced release to the waiter's grant (fallback poll 1 s)").isLessThan(1_500);
        assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aTableOfAnEarlierVersionGetsItsWaitQueue(String which) throws Exception {
    TestDatabases.Db db = db(which);
    Dialect dialect = dialect(db);
    String table = "upgrade_" + UUID.randomUUID().toString().substring(0, 8);
    String queue = LeaseTable.queueTable(table);
    try (Connection c = db.admin(); Statement s = c.createStatement()) {
      s.execute(dialect.ddl(table)); // as the version before the queue made it
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table
          + " (name, owner, fence, expires_at, acquired_at, holder) VALUES (?, NULL, 41, 0, 0, NULL)")) {
        ps.setString(1, "old-lock");
        ps.executeUpdate();
      }
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
    assertThatThrownBy(() -> Locks.connect(uri(db, table, "&create-table=false")).close())
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("`table` was '" + table + "'")
        .hasMessageContaining("wait queue " + queue + " does not exist")
        .hasMessageContaining("CREATE TABLE IF NOT EXISTS " + queue);
    try (LockClient client = Locks.connect(uri(db, table, "")); Lease lease = client.lock("old-lock").acquire(Duration.ofSeconds(5))) {
      assertThat(lease.fencingToken()).as("the fence counter of a row made before the upgrade").isEqualTo(42);
    }
    try (Connection c = db.admin(); Statement s = c.createStatement()) {
      s.executeQuery("SELECT name, ticket, owner, expires_at FROM " + queue + " WHERE 1 = 0").close();
      if (!c.getAutoCommit()) {
        c.commit();
      }
    }
    try (LockClient again = Locks.connect(uri(db, table, "&create-table=false"))) {
      assertThat(again.lock("old-lock").tryAcquire()).isPresent();
    }
  }
}
