package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockState;
import dev.locksmith.Locks;
import dev.locksmith.spi.Abandonable;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What the kit cannot see of {@code Lease.extend} and {@code Lease.releaseAfter} on each database:
 * the row itself. Rows whose owner or expiry were changed behind the client's back (a foreign
 * owner, a row expired by the database clock and taken over), the hold after release ending by the
 * database clock and nothing else, and owner ids as long as the column.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcLeaseControlIT {
  private static final String TABLE = "lease_control_locks";
  private static final Duration LONG = Duration.ofSeconds(60);

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
    return db.name.equals("postgresql")
        ? Dialect.POSTGRESQL
        : db.name.equals("h2") ? Dialect.H2 : Dialect.MARIADB;
  }

  private static LockClient unrenewed(TestDatabases.Db db, Duration lease) {
    String uri = db.uri + (db.uri.contains("?") ? "&" : "?") + "table=" + TABLE;
    return Locks.connect(LockConfig.builder().uri(uri).lease(lease).autoRenew(false).build());
  }

  private static String name(String what) {
    return "lease-control/" + what + "/" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** A lock's row as the database has it, with the database clock read in the same statement. */
  private record Row(String owner, long fence, long expiresAt, long acquiredAt, long now) {
    @Override
    public String toString() {
      return "row{owner="
          + owner
          + ", fence="
          + fence
          + ", expires_at=now"
          + (expiresAt >= now ? "+" : "")
          + (expiresAt - now)
          + "ms}";
    }
  }

  private static Row row(TestDatabases.Db db, String name) throws SQLException {
    try (Connection c = db.admin();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT owner, fence, expires_at, acquired_at, "
                    + dialect(db).nowMillis
                    + " FROM "
                    + TABLE
                    + " WHERE name = ?")) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("row of lock '%s' in %s", name, TABLE).isTrue();
        return new Row(rs.getString(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5));
      }
    }
  }

  /**
   * Sets a row's columns behind every client's back; {@code expiresAt} is SQL over the database
   * clock.
   */
  private static void setRow(TestDatabases.Db db, String name, String owner, String expiresAt)
      throws SQLException {
    String now = dialect(db).nowMillis;
    try (Connection c = db.admin();
        PreparedStatement ps =
            c.prepareStatement(
                "UPDATE "
                    + TABLE
                    + " SET owner = ?, expires_at = "
                    + expiresAt.replace("NOW", now)
                    + " WHERE name = ?")) {
      ps.setString(1, owner);
      ps.setString(2, name);
      assertThat(ps.executeUpdate()).as("rows updated for lock '%s'", name).isEqualTo(1);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void extendMovesTheExpiryByTheDatabaseClockLongerAndShorter(String which) throws Exception {
    TestDatabases.Db db = db(which);
    String name = name("extend");
    try (LockClient client = unrenewed(db, Duration.ofSeconds(5))) {
      Lease lease = client.lock(name).acquire(Duration.ofSeconds(10));
      Row granted = row(db, name);
      assertThat(lease.extend(Duration.ofSeconds(40))).as("extend to 40s").isTrue();
      Row longer = row(db, name);
      assertThat(longer.expiresAt - longer.now)
          .as("expiry after extend(40s), by the database clock: %s", longer)
          .isBetween(30_000L, 40_000L);
      assertThat(longer.owner).isEqualTo(granted.owner);
      assertThat(longer.fence).as("fence after extend").isEqualTo(granted.fence);

      assertThat(lease.extend(Duration.ofSeconds(2))).as("extend to 2s").isTrue();
      Row shorter = row(db, name);
      assertThat(shorter.expiresAt - shorter.now)
          .as("expiry after extend(2s): %s", shorter)
          .isBetween(-1_000L, 2_000L);
      assertThat(shorter.expiresAt)
          .as("a shorter extend moves the expiry back")
          .isLessThan(longer.expiresAt);
      assertThat(lease.release()).isTrue();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aRowWithAForeignOwnerIsNeitherExtendedNorHeldAfterRelease(String which) throws Exception {
    TestDatabases.Db db = db(which);
    String name = name("foreign");
    try (LockClient client = unrenewed(db, LONG)) {
      Lease lease = client.lock(name).acquire(Duration.ofSeconds(10));
      setRow(db, name, "someone-else:1", "NOW + 30000");
      Row before = row(db, name);
      assertThat(lease.extend(Duration.ofSeconds(50)))
          .as("extend of a row that has another owner")
          .isFalse();
      Row after = row(db, name);
      assertThat(after.owner).isEqualTo("someone-else:1");
      assertThat(after.expiresAt).as("expiry of the other owner's row").isEqualTo(before.expiresAt);
    }
    String other = name("foreign-hold");
    try (LockClient client = unrenewed(db, LONG)) {
      Lease lease = client.lock(other).acquire(Duration.ofSeconds(10));
      setRow(db, other, "someone-else:2", "NOW + 30000");
      Row before = row(db, other);
      assertThat(lease.releaseAfter(Duration.ofSeconds(5)))
          .as("releaseAfter of a row that has another owner")
          .isFalse();
      Row after = row(db, other);
      assertThat(after.owner).isEqualTo("someone-else:2");
      assertThat(after.expiresAt).isEqualTo(before.expiresAt);
    }
  }

  /**
   * The client still counts its lease valid (60 s), but the database clock says the row expired and
   * another client took it over: extend and releaseAfter must leave the new holder alone.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aRowExpiredByTheDatabaseClockAndTakenOverIsLeftToItsNewHolder(String which)
      throws Exception {
    TestDatabases.Db db = db(which);
    String name = name("taken");
    try (LockClient a = unrenewed(db, LONG);
        LockClient b = unrenewed(db, LONG)) {
      Lease first = a.lock(name).acquire(Duration.ofSeconds(10));
      Lease second = a.lock(name + "/hold").acquire(Duration.ofSeconds(10));
      String firstOwner = row(db, name).owner;
      // Expired by the database clock (past the allowance), whatever the client thinks.
      setRow(db, name, firstOwner, "NOW - " + (LeaseTable.CLOCK_ALLOWANCE_MILLIS + 1_000));
      assertThat(first.isValid()).as("the client's own view of the lease").isTrue();
      Row expired = row(db, name);
      assertThat(first.extend(LONG)).as("extend of a row expired by the database clock").isFalse();
      assertThat(row(db, name).expiresAt)
          .as("expiry after the refused extend")
          .isEqualTo(expired.expiresAt);

      setRow(
          db,
          name + "/hold",
          row(db, name + "/hold").owner,
          "NOW - " + (LeaseTable.CLOCK_ALLOWANCE_MILLIS + 1_000));
      Optional<Lease> taken = b.lock(name + "/hold").tryAcquire();
      assertThat(taken).as("takeover of an expired row").isPresent();
      Row newHolder = row(db, name + "/hold");
      assertThat(second.releaseAfter(Duration.ofSeconds(30)))
          .as("releaseAfter of a row taken over")
          .isFalse();
      Row after = row(db, name + "/hold");
      assertThat(after.owner)
          .as("owner after the old holder's releaseAfter")
          .isEqualTo(newHolder.owner);
      assertThat(after.expiresAt).as("the new holder's expiry").isEqualTo(newHolder.expiresAt);
      assertThat(after.fence).isEqualTo(second.fencingToken() + 1);
      assertThat(taken.get().release()).as("the new holder still holds it").isTrue();
    }
  }

  /**
   * The hold is the row's own state: an owner no lease has, an expiry by the database clock, the
   * fence untouched. Takers are refused until the database clock is past it by the allowance, and
   * then take it with the next fence, with nobody calling anything.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aHoldAfterReleaseEndsByTheDatabaseClock(String which) throws Exception {
    TestDatabases.Db db = db(which);
    String name = name("hold");
    try (LockClient a = unrenewed(db, LONG);
        LockClient b = unrenewed(db, LONG)) {
      Lease lease = a.lock(name).acquire(Duration.ofSeconds(10));
      String owner = row(db, name).owner;
      assertThat(lease.releaseAfter(Duration.ofSeconds(30))).isTrue();
      Row held = row(db, name);
      assertThat(held.owner)
          .as("owner column during the hold")
          .isEqualTo(LeaseTable.holdMarker(owner))
          .isNotEqualTo(owner);
      assertThat(held.expiresAt - held.now)
          .as("hold, by the database clock: %s", held)
          .isBetween(20_000L, 30_000L);
      assertThat(held.fence).as("fence during the hold").isEqualTo(lease.fencingToken());
      LockState state = b.lock(name).state();
      assertThat(state.isHeld()).as("state during the hold: %s", state).isTrue();
      assertThat(state.holder()).as("holder during the hold: no lease has it").isEmpty();
      assertThat(state.fencingToken()).hasValue(lease.fencingToken());

      setRow(db, name, held.owner, "NOW + 2000");
      assertThat(b.lock(name).tryAcquire()).as("a taker while the hold lasts").isEmpty();
      setRow(db, name, held.owner, "NOW - " + (LeaseTable.CLOCK_ALLOWANCE_MILLIS + 5));
      Optional<Lease> next = b.lock(name).tryAcquire();
      assertThat(next).as("a taker once the database clock is past the hold").isPresent();
      assertThat(next.get().fencingToken()).isEqualTo(lease.fencingToken() + 1);
      next.get().release();
    }
  }

  /**
   * A real hold running out: the holder's client is abandoned right after (connections dropped,
   * nothing released), and a waiter gets the lock by the database clock's end of the hold, not
   * before, and without waiting out its backoff (busy polls never sleep past the hold).
   */
  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aWaiterGetsTheLockRightAfterTheHoldEvenWhenTheHolderIsGone(String which) throws Exception {
    TestDatabases.Db db = db(which);
    String name = name("hold-waiter");
    try (LockClient a = unrenewed(db, LONG);
        LockClient b = unrenewed(db, LONG)) {
      Lease lease = a.lock(name).acquire(Duration.ofSeconds(10));
      assertThat(lease.releaseAfter(Duration.ofMillis(1500))).isTrue();
      Row held = row(db, name);
      ((Abandonable) a).abandon();
      try (Lease next = b.lock(name).acquire(Duration.ofSeconds(20))) {
        Row taken = row(db, name);
        assertThat(taken.acquiredAt)
            .as("database clock at the takeover vs the hold's end %d: %s", held.expiresAt, taken)
            .isGreaterThan(held.expiresAt + LeaseTable.CLOCK_ALLOWANCE_MILLIS)
            // Generous: a waiter polls at most at the hold's end by the database's own word.
            .isLessThan(held.expiresAt + 1_000);
        assertThat(next.fencingToken()).isEqualTo(lease.fencingToken() + 1);
      }
    }
  }

  /**
   * The hold marker embeds the owner id for people reading the table, but an owner id may fill the
   * whole column: the marker is cut to fit (never inside a character), and no renewal, release or
   * extend by that owner matches it. A second releaseAfter, as after a reply lost on a broken
   * connection, recognises the hold as its own and does not move it.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void anOwnerIdAsLongAsTheColumnStillGetsAHold(String which) throws Exception {
    TestDatabases.Db db = db(which);
    Dialect dialect = dialect(db);
    String name = name("long-owner");
    // As long as the column takes in every dialect: H2 counts UTF-16 units, MariaDB and PostgreSQL
    // characters; ending in characters outside the BMP (two units each, 4 bytes in UTF-8).
    String owner =
        "x".repeat(LeaseTable.OWNER_COLUMN_CHARS - 35) + "é".repeat(5) + "\uD83D\uDD12".repeat(15);
    assertThat(owner).hasSize(LeaseTable.OWNER_COLUMN_CHARS);
    Properties props = new Properties();
    props.setProperty("user", db.user);
    LeaseTable table =
        new LeaseTable(
            new DriverConnections(
                DriverManager.getDriver(db.adminUrl), db.adminUrl, props, new Secrets(), db.name),
            dialect,
            TABLE,
            5_000,
            () -> {});
    table.ensureExists(true);
    LeaseTable.Take take = table.tryTake(name, owner, 60_000, "test", 0, 2_000, () -> {});
    assertThat(take.granted).isTrue();
    assertThat(row(db, name).owner).isEqualTo(owner);

    assertThat(table.releaseAfter(name, owner, 30_000))
        .as("releaseAfter with a 255-character owner id")
        .isTrue();
    Row held = row(db, name);
    assertThat(held.owner)
        .as("marker in the owner column")
        .isEqualTo(LeaseTable.holdMarker(owner))
        .startsWith(LeaseTable.HOLD_PREFIX);
    assertThat(held.owner.codePointCount(0, held.owner.length()))
        .isLessThanOrEqualTo(LeaseTable.OWNER_COLUMN_CHARS);
    assertThat(held.expiresAt - held.now).isBetween(20_000L, 30_000L);

    assertThat(table.releaseAfter(name, owner, 50_000))
        .as("releaseAfter again (a retry): the hold is ours")
        .isTrue();
    assertThat(row(db, name).expiresAt)
        .as("a retry does not move the hold")
        .isEqualTo(held.expiresAt);
    assertThat(table.extend(name, owner, 50_000))
        .as("extend by the owner that gave it up")
        .isFalse();
    assertThat(table.renew(List.of(new LeaseTable.Due(name, owner, 50_000))))
        .as("renewal by the old owner")
        .isEmpty();
    assertThat(table.release(name, owner)).as("release by the old owner").isFalse();
    Row after = row(db, name);
    assertThat(after.owner).isEqualTo(held.owner);
    assertThat(after.expiresAt).as("the hold after every refused call").isEqualTo(held.expiresAt);
    assertThat(table.state(name).isHeld()).isTrue();
  }
}
