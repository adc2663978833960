package dev.locksmith.jdbc;

import dev.locksmith.LockConfigurationException;
import dev.locksmith.spi.Claim;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Semaphores and read-write locks as rows of two tables beside the lease table: one row per
 * resource in {@link #heads} (its kind, name, permit count and fence counter) and one row per live
 * lease or waiting writer in {@link #leases}. Every grant is one transaction that locks the
 * resource's row ({@code SELECT ... FOR UPDATE}), deletes its expired leases, counts the live ones,
 * and inserts ours with the next fence; renewals, releases and extends are one owner-checked
 * statement each. Expiry is judged by the database clock only, with the lease table's {@link
 * LeaseTable#CLOCK_ALLOWANCE_MILLIS}. Connections and helpers are the lease table's; the two tables
 * are created on the first semaphore or read-write lock, not at connect, so a client that only
 * locks needs nothing new.
 */
final class SharedTable {
  /** The {@code kind} of a semaphore's rows. */
  static final String SEMAPHORE = "S";

  /** The {@code kind} of a read-write lock's rows. */
  static final String READ_WRITE = "R";

  /** The {@code side} of a waiting writer's mark: no new reader while one lives. */
  static final String WAITING_WRITER = "Q";

  /** The shortest life of a waiting writer's mark, whatever the client's recheck interval. */
  static final long MIN_MARK_MILLIS = 300;

  /** Names per renewal statement, as for the lease table. */
  private static final int RENEW_CHUNK = 250;

  private final LeaseTable base;
  private final Dialect dialect;
  private final String table;
  private final boolean create;

  /** One row per semaphore or read-write lock. */
  final String heads;

  /** One row per live lease or waiting writer. */
  final String leases;

  /** PostgreSQL: the lease table's channel, on which releases are announced; null elsewhere. */
  private final String channel;

  /** How long a waiting writer's mark lives without a poll that refreshes it. */
  final long markMillis;

  private volatile boolean ready;

  private final String selectHead;
  private final String insertHead;
  private final String updateHead;
  private final String purge;
  private final String selectRows;
  private final String insertRow;
  private final String updateRow;
  private final String release;
  private final String withdraw;
  private final String extend;
  private final String selectLive;

  /** Leases and writers' marks expired for the purge's age. */
  private final String dropDeadLeases;

  /** The highest fence of the resources with no lease and no mark left. */
  private final String maxIdleHeads;

  /** Deletes the resources with no lease and no mark left whose fence the floor covers. */
  private final String deleteIdleHeads;

  /**
   * Names of one kind with a live lease (not a writer's mark) under a LIKE prefix, after a name, in
   * name order, one row per lease: one range of the leases' primary key.
   */
  private final String listLive;

  /** Every lease (not a writer's mark) of one resource, with the database clock: a plain read. */
  private final String selectHolders;

  /** Whether both tables were seen to exist (a client that only locks may never create them). */
  private volatile boolean seen;

  /**
   * @param base the lease table, whose connections and helpers these tables use
   * @param table the lease table's checked name
   * @param create whether missing tables may be created
   * @param recheckMillis the client's recheck interval: a waiting writer polls at least that often,
   *     and its mark lives three of them ({@link #MIN_MARK_MILLIS} at least)
   */
  SharedTable(LeaseTable base, Dialect dialect, String table, boolean create, long recheckMillis) {
    this.base = base;
    this.dialect = dialect;
    this.table = table;
    this.create = create;
    this.heads = suffixed(table, "_shared");
    this.leases = suffixed(table, "_shared_leases");
    this.channel = base.channel();
    this.markMillis = Math.max(MIN_MARK_MILLIS, 3 * recheckMillis);
    String now = dialect.nowMillis;
    String resource = " WHERE kind = ? AND name = ?";
    this.selectHead = "SELECT permits, fence, " + now + " FROM " + heads + resource + " FOR UPDATE";
    this.insertHead = "INSERT INTO " + heads + " (kind, name, permits, fence) VALUES (?, ?, 0, ?)";
    this.updateHead = "UPDATE " + heads + " SET permits = ?, fence = ?" + resource;
    this.purge = "DELETE FROM " + leases + resource + " AND expires_at < ?";
    // A locking read: it sees every committed row whatever the isolation level, so a renewal
    // committed after the transaction began is never taken for an expired lease.
    this.selectRows =
        "SELECT owner, side, fence, expires_at FROM " + leases + resource + " FOR UPDATE";
    this.insertRow =
        "INSERT INTO "
            + leases
            + " (kind, name, owner, side, fence, expires_at, acquired_at, holder)"
            + " VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
    this.updateRow =
        "UPDATE "
            + leases
            + " SET side = ?, fence = ?, expires_at = ?, acquired_at = ?, holder = ?"
            + resource
            + " AND owner = ?";
    String own = resource + " AND owner = ?";
    String delete = "DELETE FROM " + leases + own;
    String leaseOnly = " AND side <> '" + WAITING_WRITER + "'";
    // PostgreSQL: the release is announced in the same statement, delivered at commit.
    this.release = notifying(delete + leaseOnly);
    this.withdraw = notifying(delete + " AND side = '" + WAITING_WRITER + "'");
    String live =
        leaseOnly + " AND expires_at >= " + now + " - " + LeaseTable.CLOCK_ALLOWANCE_MILLIS;
    this.extend = "UPDATE " + leases + " SET expires_at = " + now + " + ?" + own + live;
    this.selectLive = "SELECT owner FROM " + leases + own + live;
    this.dropDeadLeases = "DELETE FROM " + leases + " WHERE expires_at < " + now + " - ?";
    String idle =
        " WHERE NOT EXISTS (SELECT 1 FROM "
            + leases
            + " l WHERE l.kind = "
            + heads
            + ".kind AND l.name = "
            + heads
            + ".name)";
    this.maxIdleHeads = "SELECT MAX(fence) FROM " + heads + idle;
    this.deleteIdleHeads = "DELETE FROM " + heads + idle + " AND fence <= ?";
    this.listLive =
        "SELECT name FROM "
            + leases
            + " WHERE kind = ? AND name LIKE ? ESCAPE '!' AND name > ?"
            + live
            + " ORDER BY name LIMIT ?";
    this.selectHolders =
        "SELECT owner, side, fence, expires_at, "
            + now
            + " FROM "
            + leases
            + resource
            + leaseOnly
            + " ORDER BY fence";
  }

  /**
   * Whether a purge should look at these tables: they exist (checked until seen, outside any
   * transaction, since a failed statement would end the purge's own).
   */
  boolean present() throws SQLException {
    if (!seen && (ready || bothExist())) {
      seen = true;
    }
    return seen;
  }

  private boolean bothExist() throws SQLException {
    return base.schema().exists(heads, "kind, name, permits, fence")
        && base.schema().exists(leases, "kind, name, fence, expires_at");
  }

  /**
   * In the purge's transaction ({@link LeaseTable#purge}): deletes leases and marks expired for
   * {@code ageMillis}, then reads the highest fence of the resources left with none.
   *
   * @return that fence, or -1 if there is no such resource
   */
  long idleHeadsFence(Connection c, long ageMillis) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(dropDeadLeases)) {
      ps.setLong(1, ageMillis);
      ps.executeUpdate();
    }
    try (PreparedStatement ps = c.prepareStatement(maxIdleHeads);
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      long highest = rs.getLong(1);
      return rs.wasNull() ? -1 : highest;
    }
  }

  /**
   * In the purge's transaction, after the floor was raised to at least {@code upTo}: deletes the
   * resources with no lease and no mark left whose fence is at most that (a grant since the read
   * has a higher one, and stays).
   */
  int deleteIdleHeads(Connection c, long upTo) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(deleteIdleHeads)) {
      ps.setLong(1, upTo);
      return ps.executeUpdate();
    }
  }

  /**
   * Reads, without locking or writing anything, the names of one kind's resources with a live lease
   * (a writer's mark is none) that begin with {@code prefix}, after {@code after} ("" for the first
   * page), in name order: one range of the leases' primary key, {@code limit + 1} rows at most. A
   * resource with several leases has a row for each, so a name may come more than once, one after
   * the other.
   *
   * @param kind {@link #SEMAPHORE} or {@link #READ_WRITE}
   * @return the names of the rows read, in order, repeats kept; none if the tables do not exist (no
   *     semaphore or read-write lock was ever taken)
   */
  List<String> liveNames(String kind, String prefix, String after, int limit) throws SQLException {
    if (!present()) {
      return List.of();
    }
    String like = LeaseTable.likePrefix(prefix);
    return base.onceMore(
        () ->
            read(
                c -> {
                  try (PreparedStatement ps = c.prepareStatement(listLive)) {
                    ps.setString(1, kind);
                    ps.setString(2, like);
                    ps.setString(3, after);
                    ps.setInt(4, limit + 1);
                    try (ResultSet rs = ps.executeQuery()) {
                      return LeaseTable.names(rs);
                    }
                  }
                }));
  }

  /** A live lease of a resource, as {@link #holders} reads it. */
  static final class Holding {
    final String owner;

    /** {@code P}, {@code R} or {@code W}. */
    final String side;

    final long fence;

    /**
     * Until another owner may take it, by the database clock ({@link LeaseTable#untilTakeable}).
     */
    final long remainingMillis;

    Holding(String owner, String side, long fence, long remainingMillis) {
      this.owner = owner;
      this.side = side;
      this.fence = fence;
      this.remainingMillis = remainingMillis;
    }
  }

  /**
   * Reads, without locking or writing anything, the leases of a resource that are live by the
   * database clock ({@link LeaseTable#heldAt}), in fence order; writers' marks and expired leases
   * are left out.
   *
   * @param kind {@link #SEMAPHORE} or {@link #READ_WRITE}
   * @return the live leases, none if nothing is held or the tables do not exist
   */
  List<Holding> holders(String kind, String name) throws SQLException {
    if (!present()) {
      return List.of();
    }
    return base.onceMore(
        () ->
            read(
                c -> {
                  try (PreparedStatement ps = c.prepareStatement(selectHolders)) {
                    ps.setString(1, kind);
                    ps.setString(2, name);
                    List<Holding> out = new ArrayList<>();
                    try (ResultSet rs = ps.executeQuery()) {
                      while (rs.next()) {
                        long expiresAt = rs.getLong(4);
                        long now = rs.getLong(5);
                        if (LeaseTable.heldAt(expiresAt, now)) {
                          out.add(
                              new Holding(
                                  rs.getString(1),
                                  rs.getString(2).trim(),
                                  rs.getLong(3),
                                  LeaseTable.untilTakeable(expiresAt, now)));
                        }
                      }
                    }
                    return out;
                  }
                }));
  }

  /** A read on a borrowed connection. */
  @FunctionalInterface
  private interface Read<T> {
    T run(Connection c) throws SQLException;
  }

  /** Runs a read and ends its transaction (a rollback: nothing was written). */
  private <T> T read(Read<T> read) throws SQLException {
    try (Connection c = base.borrow()) {
      boolean auto = c.getAutoCommit();
      try {
        T out = read.run(c);
        if (!auto) {
          c.rollback(); // ends the read; nothing was written
        }
        return out;
      } catch (SQLException | RuntimeException e) {
        if (!auto) {
          LeaseTable.rollbackQuietly(c);
        }
        throw e;
      }
    }
  }

  private String notifying(String delete) {
    return channel == null
        ? delete
        : "WITH gone AS ("
            + delete
            + " RETURNING 1) SELECT (SELECT COUNT(*) FROM gone), pg_notify(?, ?)";
  }

  /**
   * @param table the lease table's checked name
   * @param suffix what to append
   * @return the name with the suffix, its last part cut (and told apart by a hash) where it would
   *     pass 63 characters, as the wait queue's
   */
  static String suffixed(String table, String suffix) {
    int dot = table.indexOf('.');
    String schema = dot < 0 ? "" : table.substring(0, dot + 1);
    String base = table.substring(dot + 1);
    if (base.length() + suffix.length() > 63) {
      base =
          base.substring(0, 63 - suffix.length() - 5)
              + String.format("_%04x", base.hashCode() & 0xffff);
    }
    return schema + base + suffix;
  }

  /**
   * @return the {@code kind} column's value for a claim's resource
   */
  static String kind(Claim claim) {
    return claim.kind() == Claim.Kind.PERMIT ? SEMAPHORE : READ_WRITE;
  }

  /**
   * @return the {@code side} column's value of a lease of a claim
   */
  static String side(Claim claim) {
    switch (claim.kind()) {
      case PERMIT:
        return "P";
      case READ:
        return "R";
      case WRITE:
        return "W";
      default:
        throw new IllegalArgumentException(
            "`claim` was " + claim + " but only a permit or a read-write side has a row here");
    }
  }

  /**
   * @return the key a resource's waiters are registered under with the {@link ReleaseListener}, and
   *     its releases are announced with: names hold no control characters, so it never meets a
   *     lock's name
   */
  static String wakeKey(String kind, String name) {
    return "\u0001" + kind + name;
  }

  /** The outcome of one grant transaction. */
  static final class Take {
    final boolean granted;

    /**
     * For a grant: our token. For a busy resource: its fence, which tells one grant from the next.
     */
    final long fence;

    /**
     * For a busy resource: how long until a poll could succeed without a wake-up, by the database
     * clock: the first lease (or writer's mark) in the way runs out.
     */
    final long remainingMillis;

    /** For a busy write claim: our mark now makes new readers wait. */
    final boolean marked;

    /** For a busy resource: how many live rows of other owners are in the way. */
    final int inTheWay;

    private Take(boolean granted, long fence, long remainingMillis, boolean marked, int inTheWay) {
      this.granted = granted;
      this.fence = fence;
      this.remainingMillis = remainingMillis;
      this.marked = marked;
      this.inTheWay = inTheWay;
    }
  }

  /**
   * Creates the tables if they are missing and allowed to be, once per client. Racing callers each
   * run the idempotent {@code CREATE TABLE IF NOT EXISTS}; nothing blocks on a monitor.
   *
   * @throws LockConfigurationException if one is missing and {@code create-table=false}
   */
  void ensureExists() throws SQLException {
    if (ready) {
      return;
    }
    boolean headsThere = base.schema().exists(heads, "kind, name, permits, fence");
    boolean leasesThere =
        base.schema()
            .exists(leases, "kind, name, owner, side, fence, expires_at, acquired_at, holder");
    if (!headsThere || !leasesThere) {
      String headsDdl = dialect.partDdl("shared", heads);
      String leasesDdl = dialect.partDdl("shared-leases", leases);
      if (!create) {
        throw new LockConfigurationException(
            List.of(
                "`table` was '"
                    + table
                    + "' but the tables of its semaphores and"
                    + " read-write locks, "
                    + heads
                    + " and "
                    + leases
                    + ", do not both exist and create-table=false; create them with:\n"
                    + headsDdl
                    + ";\n"
                    + leasesDdl));
      }
      if (!headsThere) {
        base.schema().createTable(heads, headsDdl);
      }
      if (!leasesThere) {
        base.schema().createTable(leases, leasesDdl);
      }
    }
    ready = true;
  }

  /**
   * One short transaction: lock the resource's row (inserting it if absent), delete its expired
   * leases and marks, count the live ones, and grant if the claim's rule allows: a permit while
   * fewer than {@link Claim#permits()} are live, the write side while no lease is live, the read
   * side while no write lease and no other writer's mark is live. A grant bumps the fence and
   * inserts our lease; a write claim that must wait leaves (or refreshes) its mark instead.
   *
   * @param beforeCommit runs just before the commit of a grant: from then on the outcome is
   *     ambiguous if the commit fails
   * @throws IllegalStateException ({@link Claim#permitsInUse}) if a semaphore is asked for with
   *     another count than its live permits were taken with; nothing is taken
   */
  Take tryTake(
      String name,
      Claim claim,
      String owner,
      long leaseMillis,
      String holder,
      Runnable beforeCommit)
      throws SQLException {
    ensureExists();
    return base.onceMore(
        () -> {
          for (int round = 0; ; round++) {
            try (Connection c = base.borrow()) {
              boolean auto = c.getAutoCommit();
              if (auto) {
                c.setAutoCommit(false);
              }
              try {
                Take t =
                    takeInTransaction(c, name, claim, owner, leaseMillis, holder, beforeCommit);
                c.commit();
                return t;
              } catch (SQLException e) {
                LeaseTable.rollbackQuietly(c);
                // Two first acquirers raced to insert the resource's row, or a deadlock victim:
                // the transaction did nothing, so run it again.
                if (round < 3 && (Dialect.isDuplicateKey(e) || Dialect.isRetryable(e))) {
                  continue;
                }
                throw e;
              } catch (RuntimeException e) {
                LeaseTable.rollbackQuietly(c);
                throw e;
              } finally {
                LeaseTable.restoreAutoCommit(c, auto);
              }
            }
          }
        });
  }

  /** A row of the leases table, as the grant transaction reads it. */
  private static final class Row {
    final String owner;
    final String side;
    final long fence;
    final long expiresAt;

    Row(String owner, String side, long fence, long expiresAt) {
      this.owner = owner;
      this.side = side;
      this.fence = fence;
      this.expiresAt = expiresAt;
    }

    boolean isLease() {
      return !side.equals(WAITING_WRITER);
    }
  }

  private Take takeInTransaction(
      Connection c,
      String name,
      Claim claim,
      String owner,
      long leaseMillis,
      String holder,
      Runnable beforeCommit)
      throws SQLException {
    String kind = kind(claim);
    long[] head = lockHead(c, kind, name);
    if (head == null) {
      try (PreparedStatement ps = c.prepareStatement(insertHead)) {
        ps.setString(1, kind);
        ps.setString(2, name);
        // a new resource, or one a purge deleted: above every fence a purge has removed
        ps.setLong(3, base.floorOrZero(c));
        ps.executeUpdate(); // a racing first acquirer makes it a duplicate key: the caller runs
        // us again
      }
      head = lockHead(c, kind, name);
    }
    int permitsInUse = (int) head[0];
    long fence = head[1];
    long now = head[2];
    try (PreparedStatement ps = c.prepareStatement(purge)) {
      ps.setString(1, kind);
      ps.setString(2, name);
      ps.setLong(3, now - LeaseTable.CLOCK_ALLOWANCE_MILLIS);
      ps.executeUpdate();
    }
    List<Row> rows = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(selectRows)) {
      ps.setString(1, kind);
      ps.setString(2, name);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          rows.add(new Row(rs.getString(1), rs.getString(2), rs.getLong(3), rs.getLong(4)));
        }
      }
    }
    Row mine = null;
    int live = 0;
    boolean writeHeld = false;
    boolean writerWaiting = false;
    for (Row r : rows) {
      if (r.owner.equals(owner)) {
        mine = r;
      } else if (!r.isLease()) {
        writerWaiting = true;
      } else {
        live++;
        writeHeld |= r.side.equals("W");
      }
    }
    String side = side(claim);
    if (mine != null && mine.isLease()) {
      // Ours already: a retry after a commit whose reply was lost. Keep the fence, renew the lease.
      writeRow(c, updateRow, kind, name, owner, side, mine.fence, now + leaseMillis, now, holder);
      beforeCommit.run();
      return new Take(true, mine.fence, 0, false, 0);
    }
    boolean free;
    switch (claim.kind()) {
      case PERMIT:
        if (live > 0 && permitsInUse != claim.permits()) {
          throw Claim.permitsInUse(name, claim.permits(), permitsInUse);
        }
        free = live < claim.permits();
        break;
      case WRITE:
        free = live == 0;
        break;
      default:
        free = !writeHeld && !writerWaiting;
    }
    if (free) {
      long next = fence + 1;
      try (PreparedStatement ps = c.prepareStatement(updateHead)) {
        ps.setInt(1, claim.kind() == Claim.Kind.PERMIT ? claim.permits() : 0);
        ps.setLong(2, next);
        ps.setString(3, kind);
        ps.setString(4, name);
        ps.executeUpdate();
      }
      // A writer that waited turns its mark into its lease: the mark goes with the grant.
      writeRow(
          c,
          mine != null ? updateRow : insertRow,
          kind,
          name,
          owner,
          side,
          next,
          now + leaseMillis,
          now,
          holder);
      beforeCommit.run();
      return new Take(true, next, 0, false, 0);
    }
    boolean marked = false;
    if (claim.kind() == Claim.Kind.WRITE) {
      // Readers that come after us wait while our mark lives; we refresh it at every poll.
      writeRow(
          c,
          mine != null ? updateRow : insertRow,
          kind,
          name,
          owner,
          WAITING_WRITER,
          0,
          now + markMillis,
          now,
          holder);
      marked = true;
    }
    long firstEnd = Long.MAX_VALUE;
    int inTheWay = 0;
    for (Row r : rows) {
      if (r != mine && inTheWay(claim, r)) {
        firstEnd = Math.min(firstEnd, r.expiresAt);
        inTheWay++;
      }
    }
    // Nothing in the way cannot be (we would have been granted); poll again by a mark's life then.
    long remaining =
        firstEnd == Long.MAX_VALUE ? markMillis : LeaseTable.untilTakeable(firstEnd, now);
    return new Take(false, fence, Math.max(0, remaining), marked, inTheWay);
  }

  /**
   * @return whether a live row of another owner keeps the claim from being granted
   */
  private static boolean inTheWay(Claim claim, Row r) {
    switch (claim.kind()) {
      case READ:
        return !r.isLease() || r.side.equals("W");
      default:
        return r.isLease();
    }
  }

  /**
   * @return permits, fence and the database clock of the resource's row, now locked; null if it has
   *     none
   */
  private long[] lockHead(Connection c, String kind, String name) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(selectHead)) {
      ps.setString(1, kind);
      ps.setString(2, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? new long[] {rs.getInt(1), rs.getLong(2), rs.getLong(3)} : null;
      }
    }
  }

  private static void writeRow(
      Connection c,
      String sql,
      String kind,
      String name,
      String owner,
      String side,
      long fence,
      long expiresAt,
      long now,
      String holder)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      if (sql.startsWith("INSERT")) {
        ps.setString(1, kind);
        ps.setString(2, name);
        ps.setString(3, owner);
        ps.setString(4, side);
        ps.setLong(5, fence);
        ps.setLong(6, expiresAt);
        ps.setLong(7, now);
        ps.setString(8, holder);
      } else {
        ps.setString(1, side);
        ps.setLong(2, fence);
        ps.setLong(3, expiresAt);
        ps.setLong(4, now);
        ps.setString(5, holder);
        ps.setString(6, kind);
        ps.setString(7, name);
        ps.setString(8, owner);
      }
      ps.executeUpdate();
    }
  }

  /**
   * Deletes a lease, owner-checked: never another owner's. On PostgreSQL the release is announced
   * to every client's listener in the same statement.
   *
   * @return whether the lease's row was still there (ours, not yet deleted by a grant after its
   *     expiry)
   */
  boolean release(String name, Claim claim, String owner) throws SQLException {
    return base.onceMore(() -> deleteOwn(release, kind(claim), name, owner));
  }

  /**
   * Withdraws a waiting writer's mark at once, so readers held back by it may go; on PostgreSQL
   * announces it.
   */
  void withdraw(String name, Claim claim, String owner) throws SQLException {
    base.onceMore(() -> deleteOwn(withdraw, kind(claim), name, owner));
  }

  private boolean deleteOwn(String sql, String kind, String name, String owner)
      throws SQLException {
    try (Connection c = base.borrow()) {
      boolean auto = c.getAutoCommit();
      try (PreparedStatement ps = c.prepareStatement(sql)) {
        ps.setString(1, kind);
        ps.setString(2, name);
        ps.setString(3, owner);
        int n;
        if (channel == null) {
          n = ps.executeUpdate();
        } else {
          ps.setString(4, channel);
          ps.setString(5, wakeKey(kind, name));
          try (ResultSet rs = ps.executeQuery()) {
            n = rs.next() ? rs.getInt(1) : 0;
          }
        }
        if (!auto) {
          c.commit();
        }
        return n > 0;
      } catch (SQLException | RuntimeException e) {
        if (!auto) {
          LeaseTable.rollbackQuietly(c);
        }
        throw e;
      }
    }
  }

  /**
   * Moves a live lease's expiry to {@code leaseMillis} from now by the database clock, in one
   * owner-checked UPDATE.
   *
   * @return whether the lease was still ours and live, and now expires then
   */
  boolean extend(String name, Claim claim, String owner, long leaseMillis) throws SQLException {
    return base.onceMore(
        () -> {
          try (Connection c = base.borrow()) {
            boolean auto = c.getAutoCommit();
            try {
              int n;
              try (PreparedStatement ps = c.prepareStatement(extend)) {
                ps.setLong(1, leaseMillis);
                ps.setString(2, kind(claim));
                ps.setString(3, name);
                ps.setString(4, owner);
                n = ps.executeUpdate();
              }
              boolean ours = n > 0;
              if (!ours) {
                // a driver that counts changed rows says 0 when the expiry did not move by a
                // millisecond
                try (PreparedStatement ps = c.prepareStatement(selectLive)) {
                  ps.setString(1, kind(claim));
                  ps.setString(2, name);
                  ps.setString(3, owner);
                  try (ResultSet rs = ps.executeQuery()) {
                    ours = rs.next();
                  }
                }
              }
              if (!auto) {
                c.commit();
              }
              return ours;
            } catch (SQLException | RuntimeException e) {
              if (!auto) {
                LeaseTable.rollbackQuietly(c);
              }
              throw e;
            }
          }
        });
  }

  /**
   * Renews leases in one transaction: one UPDATE per distinct lease time and chunk of 250, of rows
   * that are ours and still live by the database clock, and a SELECT only when some were not.
   *
   * @return the owner ids whose lease is still ours, now renewed
   */
  Set<String> renew(List<LeaseTable.Due> due) throws SQLException {
    Map<Long, List<LeaseTable.Due>> byLease = new LinkedHashMap<>();
    for (LeaseTable.Due d : due) {
      byLease.computeIfAbsent(d.leaseMillis, k -> new ArrayList<>()).add(d);
    }
    return base.onceMore(
        () -> {
          Set<String> ours = new HashSet<>();
          try (Connection c = base.borrow()) {
            boolean auto = c.getAutoCommit();
            if (auto) {
              c.setAutoCommit(false);
            }
            try {
              for (Map.Entry<Long, List<LeaseTable.Due>> group : byLease.entrySet()) {
                List<LeaseTable.Due> all = group.getValue();
                for (int from = 0; from < all.size(); from += RENEW_CHUNK) {
                  renewChunk(
                      c,
                      group.getKey(),
                      all.subList(from, Math.min(all.size(), from + RENEW_CHUNK)),
                      ours);
                }
              }
              c.commit();
            } catch (SQLException | RuntimeException e) {
              LeaseTable.rollbackQuietly(c);
              throw e;
            } finally {
              LeaseTable.restoreAutoCommit(c, auto);
            }
          }
          return ours;
        });
  }

  private void renewChunk(
      Connection c, long leaseMillis, List<LeaseTable.Due> chunk, Set<String> ours)
      throws SQLException {
    String in = String.join(", ", Collections.nCopies(chunk.size(), "?"));
    // Owner ids are unique per lease, so name and owner find the row whatever its kind.
    String where =
        " WHERE name IN ("
            + in
            + ") AND owner IN ("
            + in
            + ") AND side <> '"
            + WAITING_WRITER
            + "'"
            + " AND expires_at >= "
            + dialect.nowMillis
            + " - "
            + LeaseTable.CLOCK_ALLOWANCE_MILLIS;
    int updated;
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE " + leases + " SET expires_at = " + dialect.nowMillis + " + ?" + where)) {
      ps.setLong(1, leaseMillis);
      bind(ps, 2, chunk);
      updated = ps.executeUpdate();
    }
    if (updated == chunk.size()) {
      chunk.forEach(d -> ours.add(d.owner));
      return;
    }
    try (PreparedStatement ps = c.prepareStatement("SELECT owner FROM " + leases + where)) {
      bind(ps, 1, chunk);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ours.add(rs.getString(1));
        }
      }
    }
  }

  private static void bind(PreparedStatement ps, int i, List<LeaseTable.Due> chunk)
      throws SQLException {
    for (LeaseTable.Due d : chunk) {
      ps.setString(i++, d.name);
    }
    for (LeaseTable.Due d : chunk) {
      ps.setString(i++, d.owner);
    }
  }
}
