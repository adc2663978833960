package dev.locksmith.jdbc;

import dev.locksmith.LockState;
import java.net.SocketTimeoutException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTimeoutException;
import java.sql.SQLTransientConnectionException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The lease table and every statement run against it. Each method borrows one connection for one
 * short transaction and gives it back: no connection or transaction is ever held while a user holds
 * a lock. Our own pool hands out connections with autocommit off, so each method ends its
 * transaction with an explicit commit or rollback; a user's DataSource may hand out autocommit
 * connections, which are switched for the transaction and back. Every value is bound as a
 * parameter; only the checked table name is written into the SQL.
 */
final class LeaseTable {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(LeaseTable.class);

  /** A plain identifier, optionally schema-qualified; what we are willing to write into SQL. */
  static final Pattern IDENTIFIER =
      Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}(\\.[A-Za-z_][A-Za-z0-9_]{0,62})?");

  private final DataSource source;

  /**
   * Per-statement socket timeout set on each borrowed connection; 0 to leave the connection's own.
   */
  private final int ioTimeoutMillis;

  private volatile boolean networkTimeoutSupported = true;
  private final Runnable onBrokenConnection;
  private final Dialect dialect;
  private final String table;
  private final String queueTable;

  /** The PostgreSQL channel releases are announced on; null where the database cannot notify. */
  private final String channel;

  /** The SQL of every statement run against the table and its queue. */
  private final LeaseStatements sql;

  private final LeaseTableSchema schema;
  private final WaitQueue queue;
  private final LeaseRenewal renewal;

  /**
   * @param ioTimeoutMillis set with {@link Connection#setNetworkTimeout} on every connection
   *     borrowed, or 0 to leave it alone (a user's DataSource: its pool would keep our setting)
   */
  LeaseTable(
      DataSource source,
      Dialect dialect,
      String table,
      int ioTimeoutMillis,
      Runnable onBrokenConnection) {
    this.source = source;
    this.onBrokenConnection = onBrokenConnection;
    this.ioTimeoutMillis = ioTimeoutMillis;
    this.dialect = dialect;
    this.table = table;
    this.queueTable = queueTable(table);
    this.channel = dialect == Dialect.POSTGRESQL ? channel(table) : null;
    this.sql = new LeaseStatements(dialect, table, queueTable, channel);
    this.schema = new LeaseTableSchema(this, dialect, table, queueTable);
    this.queue = new WaitQueue(this, sql, schema, channel);
    this.renewal = new LeaseRenewal(this, dialect, table);
  }

  String table() {
    return table;
  }

  /** The outcome of one acquire transaction. */
  static final class Take {
    final boolean granted;

    /**
     * For a grant: our token. For a busy lock: the holder's, which tells one holding from the next.
     */
    final long fence;

    /**
     * For a busy lock: how long until a poll could succeed without a wake-up, by the database
     * clock: the holder's lease runs out, or (lock free, an earlier waiter first in line) that
     * waiter's ticket expires.
     */
    final long remainingMillis;

    /** For a busy lock: our ticket in the wait queue. */
    final long ticket;

    /** For a busy lock: it is free, but an earlier waiter is first in line. */
    final boolean queuedBehind;

    /**
     * For a held lock: the owner column (a lease's owner id, or a hold's marker); null otherwise.
     */
    final String holder;

    private Take(
        boolean granted,
        long fence,
        long remainingMillis,
        long ticket,
        boolean queuedBehind,
        String holder) {
      this.granted = granted;
      this.fence = fence;
      this.remainingMillis = remainingMillis;
      this.ticket = ticket;
      this.queuedBehind = queuedBehind;
      this.holder = holder;
    }

    static Take granted(long fence) {
      return new Take(true, fence, 0, 0, false, null);
    }
  }

  /**
   * One short transaction: lock the row (inserting it if absent), take it if free or expired by the
   * database's clock, increment its fence, commit.
   *
   * <p>The grant goes to the oldest live ticket of the wait queue: a free row is taken only if no
   * live ticket older than ours (any, without one) is queued. A busy poll enqueues a ticket, or
   * refreshes ours so that it lives another {@code ticketMillis}.
   *
   * @param ticket our ticket from an earlier busy poll, 0 if none
   * @param ticketMillis how long our ticket lives without another poll; 0 for an attempt that will
   *     not wait: a busy lock then enqueues nothing (a ticket withdrawn moments later would only
   *     hold back takers of the lock if it is freed meanwhile)
   * @param beforeCommit runs just before the commit of a grant: from then on the outcome is
   *     ambiguous if the commit fails
   */
  Take tryTake(
      String name,
      String owner,
      long leaseMillis,
      String holder,
      long ticket,
      long ticketMillis,
      Runnable beforeCommit)
      throws SQLException {
    return onceMore(
        () -> take(name, owner, leaseMillis, holder, ticket, ticketMillis, beforeCommit));
  }

  /**
   * Takes a set of locks in one transaction, all or none: each row is taken as {@link #tryTake}
   * takes it for an attempt that will not wait (free or expired by the database's clock, and no
   * live ticket queued), the rows locked in the order given; the first that is not takeable rolls
   * the whole transaction back, so nothing is written. A run again after a connection died on the
   * reply finds the rows the first run committed already ours (same fence).
   *
   * @param beforeCommit runs just before the commit: from then on the outcome is ambiguous if the
   *     commit fails
   * @return one fence per name in order, or null if a lock was held or queued for
   */
  long[] tryTakeAll(
      java.util.List<String> names,
      java.util.List<String> owners,
      long leaseMillis,
      String holder,
      Runnable beforeCommit)
      throws SQLException {
    return onceMore(() -> takeAll(names, owners, leaseMillis, holder, beforeCommit));
  }

  private long[] takeAll(
      java.util.List<String> names,
      java.util.List<String> owners,
      long leaseMillis,
      String holder,
      Runnable beforeCommit)
      throws SQLException {
    return inOneTransaction(
        c -> {
          long[] fences = new long[names.size()];
          for (int i = 0; i < names.size(); i++) {
            Take t =
                takeInTransaction(
                    c, names.get(i), owners.get(i), leaseMillis, holder, 0, 0, () -> {});
            if (!t.granted) {
              rollbackQuietly(c); // the names taken before this one are not taken
              return null;
            }
            fences[i] = t.fence;
          }
          beforeCommit.run();
          c.commit();
          return fences;
        });
  }

  /** Work on one connection, in one transaction that it commits (or rolls back) itself. */
  private interface Transaction<T> {
    T run(Connection c) throws SQLException;
  }

  /**
   * Runs {@code work} in one transaction on a borrowed connection (out of auto-commit for it),
   * rolled back if it throws, and run again up to three times if the database says a retry can help
   * (a deadlock, a serialization failure, a row inserted by another meanwhile).
   */
  private <T> T inOneTransaction(Transaction<T> work) throws SQLException {
    for (int round = 0; ; round++) {
      try (Connection c = borrow()) {
        boolean auto = c.getAutoCommit();
        if (auto) {
          c.setAutoCommit(false);
        }
        try {
          return work.run(c);
        } catch (SQLException e) {
          rollbackQuietly(c);
          if (round < 3 && (Dialect.isDuplicateKey(e) || Dialect.isRetryable(e))) {
            continue;
          }
          throw e;
        } finally {
          restoreAutoCommit(c, auto);
        }
      }
    }
  }

  private Take take(
      String name,
      String owner,
      long leaseMillis,
      String holder,
      long ticket,
      long ticketMillis,
      Runnable beforeCommit)
      throws SQLException {
    for (int round = 0; ; round++) {
      try (Connection c = borrow()) {
        boolean auto = c.getAutoCommit();
        if (auto) {
          c.setAutoCommit(false); // only a user's DataSource hands out autocommit connections
        }
        try {
          Take t =
              takeInTransaction(
                  c, name, owner, leaseMillis, holder, ticket, ticketMillis, beforeCommit);
          c.commit(); // a grant, or our ticket enqueued or refreshed
          return t;
        } catch (SQLException e) {
          rollbackQuietly(c);
          // Two first acquirers raced to insert the row, or the database picked us as a
          // deadlock victim: the transaction did nothing, so run it again on the row that exists.
          if (round < 3 && (Dialect.isDuplicateKey(e) || Dialect.isRetryable(e))) {
            continue;
          }
          throw e;
        } finally {
          restoreAutoCommit(c, auto);
        }
      }
    }
  }

  private Take takeInTransaction(
      Connection c,
      String name,
      String owner,
      long leaseMillis,
      String holder,
      long ticket,
      long ticketMillis,
      Runnable beforeCommit)
      throws SQLException {
    String current;
    long fence;
    long expiresAt;
    long now;
    boolean hinted = schema.queueHint();
    long queuedUntil = Long.MAX_VALUE; // unknown: someone may be queued
    try (PreparedStatement select =
        c.prepareStatement(hinted ? sql.selectForUpdateHinted : sql.selectForUpdate)) {
      select.setString(1, name);
      try (ResultSet rs = select.executeQuery()) {
        if (!rs.next()) {
          current = null;
          fence = -1;
          expiresAt = 0;
          now = 0;
        } else {
          current = rs.getString(1);
          fence = rs.getLong(2);
          expiresAt = rs.getLong(3);
          now = rs.getLong(4);
          if (hinted) {
            queuedUntil = rs.getLong(5);
          }
        }
      }
    }
    if (fence < 0) {
      // a new row, or one a purge deleted: above every fence a purge has removed
      long first = floorOrZero(c) + 1;
      try (PreparedStatement ins = c.prepareStatement(sql.insert)) {
        ins.setString(1, name);
        ins.setString(2, owner);
        ins.setLong(3, first);
        ins.setLong(4, leaseMillis);
        ins.setString(5, holder);
        ins.executeUpdate();
      }
      // only after the row was purged, or deleted by hand, while we waited
      queue.leaveQueue(c, name, owner, ticket);
      beforeCommit.run();
      return Take.granted(first);
    }
    if (owner.equals(current)) {
      // Ours already: a retry after a commit whose reply was lost. Keep the fence, extend the
      // lease.
      takeRow(c, sql.take, name, owner, fence, now, leaseMillis, holder, 0);
      queue.leaveQueue(c, name, owner, ticket);
      beforeCommit.run();
      return Take.granted(fence);
    }
    boolean held = current != null && heldAt(expiresAt, now);
    if (!held && !heldAt(queuedUntil, now)) {
      // No ticket lives past queued_until, and it has passed: nobody is queued, so the row
      // (locked by us) is taken without asking the queue.
      takeRow(c, sql.take, name, owner, fence + 1, now, leaseMillis, holder, 0);
      queue.leaveQueue(c, name, owner, ticket);
      beforeCommit.run();
      return Take.granted(fence + 1);
    }
    if (!held) {
      long next = fence + 1;
      int taken =
          takeRow(
              c,
              sql.takeIfFirst,
              name,
              owner,
              next,
              now,
              leaseMillis,
              holder,
              ticket > 0 ? ticket : Long.MAX_VALUE);
      if (taken > 0) {
        queue.leaveQueue(c, name, owner, ticket);
        beforeCommit.run();
        return Take.granted(next);
      }
    }
    if (ticketMillis == 0) {
      return new Take(
          false, fence, held ? untilTakeable(expiresAt, now) : 0, 0, !held, held ? current : null);
    }
    // Busy, or free with an earlier waiter first in line: keep our place, or take one at the end.
    if (hinted && queuedUntil - now < 2 * ticketMillis) {
      // Before the ticket is written: it will be capped by this, so raise it well past the
      // ticket's life, far enough that the next few refreshes need not raise it again.
      try (PreparedStatement ps = c.prepareStatement(sql.raiseQueuedUntil)) {
        ps.setLong(1, 3 * ticketMillis);
        ps.setString(2, name);
        ps.executeUpdate();
      }
    }
    long ours =
        ticket > 0 && queue.refreshTicket(c, name, owner, ticket, ticketMillis, hinted)
            ? ticket
            : queue.enqueue(c, name, owner, ticketMillis, hinted);
    if (held) {
      return new Take(false, fence, untilTakeable(expiresAt, now), ours, false, current);
    }
    long wait = ticketMillis;
    try (PreparedStatement ps = c.prepareStatement(sql.headTicket)) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          wait = untilTakeable(rs.getLong(2), rs.getLong(3));
        }
      }
    }
    return new Take(false, fence, Math.max(0, wait), ours, true, null);
  }

  /**
   * Runs {@link LeaseStatements#take} or {@link LeaseStatements#takeIfFirst} on the row we hold
   * locked.
   *
   * @param before for {@link LeaseStatements#takeIfFirst}: the ticket no older live one may
   *     precede; 0 for {@link LeaseStatements#take}
   * @return the rows changed
   */
  private static int takeRow(
      Connection c,
      String sql,
      String name,
      String owner,
      long fence,
      long now,
      long leaseMillis,
      String holder,
      long before)
      throws SQLException {
    try (PreparedStatement upd = c.prepareStatement(sql)) {
      upd.setString(1, owner);
      upd.setLong(2, fence);
      upd.setLong(3, now + leaseMillis);
      upd.setLong(4, now);
      upd.setString(5, holder);
      upd.setString(6, name);
      if (before != 0) {
        upd.setString(7, name);
        upd.setLong(8, before);
      }
      return upd.executeUpdate();
    }
  }

  /**
   * Withdraws a waiter: deletes its ticket, and on PostgreSQL announces it; see {@link
   * WaitQueue#withdraw}.
   */
  void withdraw(String name, String owner) throws SQLException {
    queue.withdraw(name, owner);
  }

  /** PostgreSQL only: tells every client's listener that the lock may be worth polling again. */
  void announce(String name) throws SQLException {
    queue.announce(name);
  }

  /**
   * MySQL/MariaDB, on the bell connection: whether a live ticket is queued for the name; see {@link
   * WaitQueue#waitersQueued}.
   */
  boolean waitersQueued(Connection c, String name) throws SQLException {
    return queue.waitersQueued(c, name);
  }

  /**
   * @return the PostgreSQL channel releases of this table are announced on; null on other databases
   */
  String channel() {
    return channel;
  }

  /**
   * @param table the lease table's checked name
   * @return the wait queue's name: the lease table's with {@code _queue} appended, its last part
   *     cut (and told apart by a hash) where it would pass 63 characters
   */
  static String queueTable(String table) {
    int dot = table.indexOf('.');
    String schema = dot < 0 ? "" : table.substring(0, dot + 1);
    String base = table.substring(dot + 1);
    if (base.length() + 6 > 63) {
      base = base.substring(0, 52) + String.format("_%04x", base.hashCode() & 0xffff);
    }
    return schema + base + "_queue";
  }

  /**
   * @return the LISTEN channel for a table: at most 63 characters, PostgreSQL's limit
   */
  static String channel(String table) {
    String c = "locksmith:" + table;
    return c.length() <= 63 ? c : c.substring(0, 54) + String.format("#%08x", table.hashCode());
  }

  /**
   * How far the database clock must be past a row's {@code expires_at} before another owner may
   * take it. The holder counts its lease on its own monotonic clock from before it sent the
   * request; the database judges by its wall clock, read in whole milliseconds (truncated or
   * rounded) and stepped forward now and then by time sync. Without this allowance a taker could
   * win up to a millisecond, or a clock step, before the holder's own lease has ended: seen in
   * {@code H2LockCompatibilityIT} rule 3.1 on a machine whose wall clock stepped 8 ms ahead of its
   * monotonic clock within 5 s.
   */
  static final long CLOCK_ALLOWANCE_MILLIS = 25;

  /**
   * @param expiresAt a row's {@code expires_at}
   * @param now the database clock, in the same milliseconds
   * @return whether the row still counts as held: until the clock is more than {@link
   *     #CLOCK_ALLOWANCE_MILLIS} past {@code expires_at}
   */
  static boolean heldAt(long expiresAt, long now) {
    return now - expiresAt <= CLOCK_ALLOWANCE_MILLIS;
  }

  /**
   * @return for a row {@link #heldAt held} at {@code now}: the milliseconds until another owner may
   *     take it, at least 1 (its expiry plus the {@link #CLOCK_ALLOWANCE_MILLIS}), which is what a
   *     state read reports as the lease's remaining
   */
  static long untilTakeable(long expiresAt, long now) {
    return expiresAt + CLOCK_ALLOWANCE_MILLIS - now + 1;
  }

  /**
   * @return whether the row was still ours: owner-checked, never frees another holder's lock
   */
  boolean release(String name, String owner) throws SQLException {
    return onceMore(() -> releaseOnce(name, owner));
  }

  /*
   * Why a release that announces itself only to queued waiters loses no wake-up. A waiter
   * subscribes first (PostgreSQL: registers with the client's listener; MySQL/MariaDB: its
   * watcher will wait on the bell of the holder it reads), then polls: its take transaction
   * locks the lock's row (SELECT ... FOR UPDATE) and, finding it held, enqueues or refreshes
   * its ticket before it commits. The release needs the same row lock. So either
   *  (a) the waiter's transaction holds the row lock first: the release waits for its commit,
   *      and then reads the queue (after it holds the row lock, or after its commit) and sees the
   *      ticket, so it announces; or
   *  (b) the release holds it first: the waiter's SELECT ... FOR UPDATE waits for the release's
   *      commit and reads the row as the release left it, free: the waiter takes it, or, if an
   *      older ticket is queued, queues behind it; that older ticket was committed before the
   *      release got the row lock, so by (a) the release saw it and announced to its waiter.
   * What (a) needs is a read of the queue that comes after the row lock is ours, and that is
   * where the databases differ. PostgreSQL reads with a snapshot per statement, taken when the
   * statement starts, and an UPDATE that waited for a row lock re-reads only its target row:
   * an EXISTS inside the UPDATE (or a CTE around it) would not see a ticket committed while it
   * waited, and that waiter would sleep to its fallback poll. So the check is a second
   * statement, sent in the same round trip, whose snapshot is taken after the UPDATE. On
   * MySQL/MariaDB the bell thread reads the queue (waitersQueued, autocommit: a fresh read view)
   * after the release has committed, so after every ticket committed before the release got the
   * row lock. JdbcWaitQueueIT forces interleaving (a) on every database.
   */
  private boolean releaseOnce(String name, String owner) throws SQLException {
    try (Connection c = borrow()) {
      // Our own pool's connections are in transaction mode: UPDATE, then COMMIT.
      boolean auto = c.getAutoCommit();
      try (PreparedStatement ps = c.prepareStatement(sql.release)) {
        ps.setString(1, name);
        ps.setString(2, owner);
        int n;
        if (channel == null) {
          n = ps.executeUpdate();
        } else {
          ps.setString(3, channel);
          ps.setString(4, name);
          ps.setString(5, name);
          ps.execute(); // two statements, one round trip: the UPDATE's count, then the
          // notification's row (or none)
          n = ps.getUpdateCount();
        }
        if (!auto) {
          c.commit();
        }
        return n > 0;
      } catch (SQLException | RuntimeException e) {
        if (!auto) {
          rollbackQuietly(c);
        }
        throw e;
      }
    }
  }

  /**
   * Releases a set's locks in one transaction: each row as {@link #release} frees it,
   * owner-checked, in the set's order (the order its rows were taken in, so two sets never wait for
   * each other's rows in a cycle), then one commit. On PostgreSQL each name's waiters are told at
   * the commit.
   *
   * @return whether each lock was still ours, in the names' order
   */
  boolean[] releaseAll(java.util.List<String> names, java.util.List<String> owners)
      throws SQLException {
    return onceMore(() -> releaseAllOnce(names, owners));
  }

  private boolean[] releaseAllOnce(java.util.List<String> names, java.util.List<String> owners)
      throws SQLException {
    return inOneTransaction(
        c -> {
          try (PreparedStatement ps = c.prepareStatement(sql.release)) {
            boolean[] ours = new boolean[names.size()];
            for (int i = 0; i < names.size(); i++) {
              ps.setString(1, names.get(i));
              ps.setString(2, owners.get(i));
              if (channel == null) {
                ours[i] = ps.executeUpdate() > 0;
              } else {
                ps.setString(3, channel);
                ps.setString(4, names.get(i));
                ps.setString(5, names.get(i));
                ps.execute(); // the UPDATE's count, then the notification's row (or none)
                ours[i] = ps.getUpdateCount() > 0;
              }
            }
            c.commit();
            return ours;
          }
        });
  }

  /**
   * Break-glass: frees the row whoever holds it, in one UPDATE that keeps the fence; on PostgreSQL
   * the waiters are told as by a release (in the same transaction, delivered at its commit). The
   * holder's renewal and release then find the row no longer theirs.
   *
   * @return whether a holder was freed
   */
  boolean breakLock(String name) throws SQLException {
    return onceMore(() -> breakOnce(name));
  }

  private boolean breakOnce(String name) throws SQLException {
    try (Connection c = borrow()) {
      boolean auto = c.getAutoCommit();
      if (auto) {
        c.setAutoCommit(false);
      }
      try {
        int n;
        try (PreparedStatement ps = c.prepareStatement(sql.breakHeld)) {
          ps.setString(1, name);
          n = ps.executeUpdate();
        }
        if (n > 0 && channel != null) {
          try (PreparedStatement ps = c.prepareStatement(sql.announceIfQueued)) {
            ps.setString(1, channel);
            ps.setString(2, name);
            ps.setString(3, name);
            ps.execute();
          }
        }
        c.commit();
        return n > 0;
      } catch (SQLException | RuntimeException e) {
        rollbackQuietly(c);
        throw e;
      } finally {
        restoreAutoCommit(c, auto);
      }
    }
  }

  /**
   * Moves a lease's expiry to {@code leaseMillis} from now by the database clock, longer or
   * shorter, in one owner-checked UPDATE that also requires the row not to have expired (the test a
   * taker applies).
   *
   * @return whether the row was still ours and not expired, and now expires then
   */
  boolean extend(String name, String owner, long leaseMillis) throws SQLException {
    return onceMore(() -> extendOnce(name, owner, leaseMillis));
  }

  private boolean extendOnce(String name, String owner, long leaseMillis) throws SQLException {
    // A driver that counts changed rather than matched rows (Connector/J with
    // useAffectedRows=true, e.g. a user's DataSource) says 0 when the new expiry equals the
    // old one to the millisecond: ask whether the row is still ours before saying no.
    return updateOwnRow(
        sql.extend,
        owner,
        ps -> {
          ps.setLong(1, leaseMillis);
          ps.setString(2, name);
          ps.setString(3, owner);
        },
        name);
  }

  /** Binds a statement's parameters. */
  private interface Binder {
    void bind(PreparedStatement ps) throws SQLException;
  }

  /**
   * Runs an owner-checked UPDATE in one transaction; when it changed no row, asks in the same
   * transaction whether the row is owned by {@code ownerAfter} and live.
   *
   * @return whether the row was (or, after a repeated run, already is) as the update leaves it
   */
  private boolean updateOwnRow(String sql, String ownerAfter, Binder binder, String name)
      throws SQLException {
    try (Connection c = borrow()) {
      boolean auto = c.getAutoCommit();
      try {
        int n;
        try (PreparedStatement ps = c.prepareStatement(sql)) {
          binder.bind(ps);
          n = ps.executeUpdate();
        }
        boolean ours = n > 0 || isOwnedAndLive(c, name, ownerAfter);
        if (!auto) {
          c.commit();
        }
        return ours;
      } catch (SQLException | RuntimeException e) {
        if (!auto) {
          rollbackQuietly(c);
        }
        throw e;
      }
    }
  }

  private boolean isOwnedAndLive(Connection c, String name, String owner) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.selectOwnerIfLive)) {
      ps.setString(1, name);
      ps.setString(2, owner);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  /** Starts the owner column's value while a lock is held after release; no owner id starts so. */
  static final String HOLD_PREFIX = "held after release by ";

  /**
   * The owner column's width in every dialect's DDL: characters, which H2 counts in UTF-16 units.
   */
  static final int OWNER_COLUMN_CHARS = 255;

  /**
   * @param owner the owner id of the lease given up
   * @return the owner column's value during the hold: no lease has it, so no renewal, release or
   *     extend matches it, and it fits the column whatever the owner id's length
   */
  static String holdMarker(String owner) {
    String marker = HOLD_PREFIX + owner;
    if (marker.length() <= OWNER_COLUMN_CHARS) {
      return marker;
    }
    int end = OWNER_COLUMN_CHARS;
    if (Character.isHighSurrogate(marker.charAt(end - 1))) {
      end--; // never half a character: the column counts characters, and half a pair is not one
    }
    return marker.substring(0, end);
  }

  /**
   * @return whether an owner column's value is a hold after release rather than a lease's owner
   */
  static boolean isHold(String ownerColumn) {
    return ownerColumn != null && ownerColumn.startsWith(HOLD_PREFIX);
  }

  /**
   * Gives a lease up but keeps its row held until {@code keepMillis} from now by the database
   * clock, in one UPDATE: if the row is ours and not expired, its owner becomes {@link #holdMarker}
   * (which no lease matches) and its expiry now + keep. The row then frees itself: a taker takes it
   * once the database clock is past that expiry, as any expired row. The fence is untouched, so the
   * next holder's token is still one higher.
   *
   * @return whether the row was ours, and is now held until then
   */
  boolean releaseAfter(String name, String owner, long keepMillis) throws SQLException {
    return onceMore(() -> releaseAfterOnce(name, owner, keepMillis));
  }

  private boolean releaseAfterOnce(String name, String owner, long keepMillis) throws SQLException {
    String marker = holdMarker(owner);
    // Run again after a connection died on the reply (onceMore): the first run may have
    // committed, and the row then carries our own marker, not our owner id.
    return updateOwnRow(
        sql.holdAfterRelease,
        marker,
        ps -> {
          ps.setString(1, marker);
          ps.setLong(2, keepMillis);
          ps.setString(3, name);
          ps.setString(4, owner);
        },
        name);
  }

  /**
   * Reads a lock's row without locking it: held while its owner is set and its expiry, by the
   * database's clock, is ahead. Writes nothing.
   */
  LockState state(String name) throws SQLException {
    return onceMore(() -> stateOnce(name));
  }

  /**
   * @return up to {@code limit + 1} names of rows with an owner that begin with {@code prefix}, in
   *     name order, after {@code after} ("" for the first page): one range of the primary key
   */
  List<String> heldNames(String prefix, String after, int limit) throws SQLException {
    return onceMore(() -> heldNamesOnce(prefix, after, limit));
  }

  private List<String> heldNamesOnce(String prefix, String after, int limit) throws SQLException {
    try (Connection c = borrow()) {
      boolean auto = c.getAutoCommit();
      try (PreparedStatement ps = c.prepareStatement(sql.listHeld)) {
        ps.setString(1, likePrefix(prefix));
        ps.setString(2, after);
        ps.setInt(3, limit + 1);
        List<String> names;
        try (ResultSet rs = ps.executeQuery()) {
          names = names(rs);
        }
        if (!auto) {
          c.rollback(); // ends the read; nothing was written
        }
        return names;
      } catch (SQLException | RuntimeException e) {
        if (!auto) {
          rollbackQuietly(c);
        }
        throw e;
      }
    }
  }

  /**
   * @return a LIKE pattern (escape character {@code !}) of the names that begin with {@code prefix}
   */
  static String likePrefix(String prefix) {
    return prefix.replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%";
  }

  /**
   * @return the names in the first column of every row of {@code rs}; MySQL and MariaDB keep names
   *     as their UTF-8 bytes (VARBINARY)
   */
  static List<String> names(ResultSet rs) throws SQLException {
    int type = rs.getMetaData().getColumnType(1);
    boolean bytes =
        type == java.sql.Types.VARBINARY
            || type == java.sql.Types.BINARY
            || type == java.sql.Types.LONGVARBINARY;
    List<String> names = new ArrayList<>();
    while (rs.next()) {
      names.add(
          bytes
              ? new String(rs.getBytes(1), java.nio.charset.StandardCharsets.UTF_8)
              : rs.getString(1));
    }
    return names;
  }

  private LockState stateOnce(String name) throws SQLException {
    try (Connection c = borrow()) {
      boolean auto = c.getAutoCommit();
      try (PreparedStatement ps = c.prepareStatement(sql.selectStateWithWaiting)) {
        ps.setString(1, name);
        LockState state = LockState.free();
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next()) {
            String owner = rs.getString(1);
            long fence = rs.getLong(2);
            long expiresAt = rs.getLong(3);
            long now = rs.getLong(4);
            if (owner != null && heldAt(expiresAt, now)) {
              // until it can be taken: the row counts as held until the clock allowance past its
              // expiry has gone too,
              // so "held, 0 ms left" would contradict an acquire refused a moment later
              long left = untilTakeable(expiresAt, now);
              state =
                  LockState.held()
                      .withFencingToken(fence)
                      .withRemaining(java.time.Duration.ofMillis(left));
              if (!isHold(owner)) {
                state =
                    state.withHolder(
                        owner); // held after release: by no lease, so no holder to name
              }
              // the live tickets of other owners: a waiter enqueues at its first busy poll, deletes
              // its ticket when it gives up (withdraw) and in the transaction of its grant
              state = state.withWaiting(rs.getInt(5));
            }
          }
        }
        if (!auto) {
          c.rollback(); // ends the read; nothing was written
        }
        return state;
      } catch (SQLException | RuntimeException e) {
        if (!auto) {
          rollbackQuietly(c);
        }
        throw e;
      }
    }
  }

  /** One lease to renew: its name, owner id and lease time. */
  static final class Due {
    final String name;
    final String owner;
    final long leaseMillis;

    Due(String name, String owner, long leaseMillis) {
      this.name = name;
      this.owner = owner;
      this.leaseMillis = leaseMillis;
    }
  }

  /**
   * Renews every lease in one transaction: one UPDATE per distinct lease time and chunk of 250
   * names (one UPDATE in the usual case), and a SELECT only when some row was no longer ours.
   *
   * @return the owner ids still ours, now renewed
   */
  Set<String> renew(List<Due> leases) throws SQLException {
    return onceMore(() -> renewal.renewOnce(leases));
  }

  /**
   * Makes sure the table and its wait queue exist; see {@link LeaseTableSchema#ensureExists}.
   *
   * @throws dev.locksmith.LockConfigurationException if one is missing and may not be created
   */
  void ensureExists(boolean create) throws SQLException {
    schema.ensureExists(create);
  }

  /**
   * @return the checks and creation of tables, also of {@link SharedTable}'s
   */
  LeaseTableSchema schema() {
    return schema;
  }

  /** One database operation; each is idempotent, so running it again is safe. */
  @FunctionalInterface
  interface Operation<T> {
    T run() throws SQLException;
  }

  /**
   * The highest fence of every row a purge deleted, 0 if none ever was. Read by the insert of a new
   * row after its {@code SELECT ... FOR UPDATE} found none: a purge that deleted this name
   * committed before that read, and raised the floor in the same transaction; one still running
   * holds the floor row, and the share lock waits for it.
   */
  long floorOrZero(Connection c) throws SQLException {
    return Math.max(0, floor(c));
  }

  /** The floor row's fence, or -1 if there is no floor row. */
  private long floor(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.selectFloor)) {
      ps.setString(1, LeaseStatements.FLOOR_NAME);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? rs.getLong(1) : -1;
      }
    }
  }

  /**
   * Writes the floor row if it is not there yet, so that inserts lock a row rather than a gap of
   * the index (InnoDB at repeatable read). A duplicate is another client's: fine.
   */
  void ensureFloor() throws SQLException {
    onceMore(
        () -> {
          try (Connection c = borrow()) {
            boolean auto = c.getAutoCommit();
            if (auto) {
              c.setAutoCommit(false);
            }
            try {
              if (floor(c) < 0) {
                try (PreparedStatement ps = c.prepareStatement(sql.insertFloor)) {
                  ps.setString(1, LeaseStatements.FLOOR_NAME);
                  ps.executeUpdate();
                }
              }
              c.commit();
            } catch (SQLException e) {
              rollbackQuietly(c);
              if (!Dialect.isDuplicateKey(e)) {
                throw e;
              }
            } finally {
              restoreAutoCommit(c, auto);
            }
            return null;
          }
        });
  }

  /**
   * Deletes the rows of names unused for {@code ageMillis} by the database clock (no holder, no
   * hold after release, no queued waiter), and the tickets expired that long, in one transaction
   * that first raises the floor row's fence to the highest fence it deletes. Purges of several
   * clients run one at a time on the floor row's lock, and one that finds that another ran less
   * than {@code everyMillis} ago does nothing: the table is read once per turn, however many
   * clients.
   *
   * @return the rows of names deleted
   */
  int purge(long ageMillis, long everyMillis, SharedTable shared) throws SQLException {
    SharedTable claims = shared != null && shared.present() ? shared : null;
    return onceMore(() -> purgeOnce(ageMillis, everyMillis, claims));
  }

  private int purgeOnce(long ageMillis, long everyMillis, SharedTable shared) throws SQLException {
    for (int round = 0; ; round++) {
      try (Connection c = borrow()) {
        boolean auto = c.getAutoCommit();
        if (auto) {
          c.setAutoCommit(false);
        }
        try {
          int n = purgeInTransaction(c, ageMillis, everyMillis, shared);
          c.commit();
          return n;
        } catch (SQLException e) {
          rollbackQuietly(c);
          // two first purges raced to insert the floor row, or a deadlock victim: run it again
          if (round < 3 && (Dialect.isDuplicateKey(e) || Dialect.isRetryable(e))) {
            continue;
          }
          throw e;
        } finally {
          restoreAutoCommit(c, auto);
        }
      }
    }
  }

  private int purgeInTransaction(Connection c, long ageMillis, long everyMillis, SharedTable shared)
      throws SQLException {
    boolean floorRow;
    try (PreparedStatement ps = c.prepareStatement(sql.lockFloor)) {
      ps.setString(1, LeaseStatements.FLOOR_NAME);
      try (ResultSet rs = ps.executeQuery()) {
        floorRow = rs.next();
        if (floorRow && rs.getLong(2) - rs.getLong(1) < everyMillis) {
          return 0; // another client's purge ran less than a turn ago
        }
      }
    }
    if (!floorRow) {
      try (PreparedStatement ps = c.prepareStatement(sql.insertFloor)) {
        ps.setString(1, LeaseStatements.FLOOR_NAME);
        ps.executeUpdate(); // ours, locked, until the commit
      }
    }
    try (PreparedStatement ps = c.prepareStatement(sql.markPurged)) {
      ps.setString(1, LeaseStatements.FLOOR_NAME);
      ps.executeUpdate();
    }
    try (PreparedStatement ps = c.prepareStatement(sql.dropDeadTickets)) {
      ps.setLong(1, ageMillis);
      ps.executeUpdate();
    }
    long highest;
    try (PreparedStatement ps = c.prepareStatement(sql.maxPurgeable)) {
      ps.setString(1, LeaseStatements.FLOOR_NAME);
      ps.setLong(2, ageMillis);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        highest = rs.getLong(1);
        if (rs.wasNull()) {
          highest = -1;
        }
      }
    }
    long sharedHighest = shared == null ? -1 : shared.idleHeadsFence(c, ageMillis);
    long floor = Math.max(highest, sharedHighest);
    if (floor < 0) {
      return 0;
    }
    // one floor for locks, semaphores and read-write locks: each new row starts above it
    try (PreparedStatement ps = c.prepareStatement(sql.raiseFloor)) {
      ps.setLong(1, floor);
      ps.setString(2, LeaseStatements.FLOOR_NAME);
      ps.executeUpdate();
    }
    int deleted = 0;
    if (highest >= 0) {
      // a row that became purgeable since the read above may have a higher fence: it stays
      try (PreparedStatement ps = c.prepareStatement(sql.purge)) {
        ps.setString(1, LeaseStatements.FLOOR_NAME);
        ps.setLong(2, ageMillis);
        ps.setLong(3, highest);
        deleted += ps.executeUpdate();
      }
    }
    if (sharedHighest >= 0) {
      deleted += shared.deleteIdleHeads(c, sharedHighest);
    }
    return deleted;
  }

  /**
   * Runs an operation, and once more if its connection turned out dead: a pooled connection can die
   * while idle (the server restarted, an administrator killed our sessions) and is not validated if
   * it was used moments ago. Its siblings likely died with it, so the pool's idle connections are
   * evicted first. Timeouts are not retried: they already took their time.
   */
  <T> T onceMore(Operation<T> op) throws SQLException {
    try {
      return op.run();
    } catch (SQLException e) {
      if (!isBrokenConnection(e)) {
        throw e;
      }
      onBrokenConnection.run();
      try {
        return op.run();
      } catch (SQLException again) {
        again.addSuppressed(e);
        throw again;
      }
    }
  }

  static boolean isBrokenConnection(SQLException e) {
    if (e instanceof SQLTimeoutException || e instanceof SQLTransientConnectionException) {
      return false; // a timeout, or the pool found no connection within its timeout
    }
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SocketTimeoutException) {
        return false;
      }
    }
    String state = e.getSQLState();
    return e instanceof SQLRecoverableException
        || e instanceof SQLNonTransientConnectionException
        || (state != null
            && (state.startsWith("08")
                || state.equals("57P01")
                || state.equals("57P02")
                || state.equals("57P03")));
  }

  /** A connection whose every read is bounded by the I/O timeout. */
  Connection borrow() throws SQLException {
    Connection c = source.getConnection();
    if (ioTimeoutMillis > 0 && networkTimeoutSupported) {
      try {
        c.setNetworkTimeout(Runnable::run, ioTimeoutMillis);
      } catch (SQLFeatureNotSupportedException | AbstractMethodError e) {
        networkTimeoutSupported = false; // embedded H2: no socket to time out
      } catch (SQLException e) {
        c.close();
        throw e;
      }
    }
    return c;
  }

  /** Closes a connection that may be broken already, for the listener and bell threads. */
  static void closeQuietly(Connection c) {
    if (c != null) {
      try {
        c.close();
      } catch (SQLException | RuntimeException e) {
        // broken already
      }
    }
  }

  static void rollbackQuietly(Connection c) {
    try {
      c.rollback();
    } catch (SQLException e) {
      // the connection is broken; the pool discards it and the database rolls back on disconnect
    }
  }

  static void restoreAutoCommit(Connection c, boolean auto) {
    try {
      if (auto && !c.isClosed()) {
        c.setAutoCommit(true);
      }
    } catch (SQLException e) {
      // broken connection: the pool discards it
    }
  }
}
