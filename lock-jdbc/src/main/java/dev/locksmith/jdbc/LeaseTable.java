package dev.locksmith.jdbc;

import dev.locksmith.LockConfigurationException;
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
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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

  /** Names per renewal statement: well below every driver's bind-parameter limit. */
  private static final int RENEW_CHUNK = 250;

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

  private final String selectForUpdate;

  /** {@link #selectForUpdate} with {@code queued_until}, for a table that has that column. */
  private final String selectForUpdateHinted;

  /** Raises {@code queued_until} before a ticket is written, under the row lock. */
  private final String raiseQueuedUntil;

  /**
   * Whether the table has {@code queued_until} (set by {@link #ensureExists}): a taker then skips
   * the wait queue while it reads that column in the past. Without it (a table of an earlier
   * version, create-table=false), every free take asks the queue, as before.
   */
  private volatile boolean queueHint;

  private final String insert;
  private final String take;
  private final String takeIfFirst;
  private final String refreshTicket;
  private final String refreshTicketCapped;
  private final String insertTicketCapped;
  private final String dropExpiredTickets;
  private final String lastTicket;
  private final String insertTicket;
  private final String headTicket;
  private final String deleteTicket;
  private final String release;
  private final String waitersQueued;

  /** Whether the lock's queued_until has not passed: no live ticket if it has. */
  private final String mayBeQueued;

  private final String announceIfQueued;
  private final String extend;
  private final String holdAfterRelease;
  private final String selectOwnerIfLive;
  private final String selectState;

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
    String now = dialect.nowMillis;
    this.selectState =
        "SELECT owner, fence, expires_at, " + now + " FROM " + table + " WHERE name = ?";
    this.selectForUpdate = selectState + " FOR UPDATE";
    this.selectForUpdateHinted =
        "SELECT owner, fence, expires_at, "
            + now
            + ", queued_until FROM "
            + table
            + " WHERE name = ? FOR UPDATE";
    this.raiseQueuedUntil =
        "UPDATE "
            + table
            + " SET queued_until = GREATEST(queued_until, "
            + now
            + " + ?) WHERE name = ?";
    this.insert =
        "INSERT INTO "
            + table
            + " (name, owner, fence, expires_at, acquired_at, holder) VALUES (?, ?, 1, "
            + now
            + " + ?, "
            + now
            + ", ?)";
    this.take =
        "UPDATE "
            + table
            + " SET owner = ?, fence = ?, expires_at = ?, acquired_at = ?, holder = ? WHERE name ="
            + " ?";
    // Run while we hold the row lock, which every enqueue needs too: each ticket committed
    // before is visible to this statement's own read (PostgreSQL and H2 read committed per
    // statement; InnoDB's first consistent read of the transaction comes after the row lock).
    String liveTicket = " AND expires_at >= " + now + " - " + CLOCK_ALLOWANCE_MILLIS;
    this.takeIfFirst =
        take
            + " AND NOT EXISTS (SELECT 1 FROM "
            + queueTable
            + " WHERE name = ? AND ticket < ?"
            + liveTicket
            + ")";
    this.refreshTicket =
        "UPDATE "
            + queueTable
            + " SET expires_at = "
            + now
            + " + ? WHERE name = ? AND ticket = ? AND owner = ?";
    // With queued_until: a ticket never outlives it, whatever happened between the two writes.
    this.refreshTicketCapped =
        "UPDATE "
            + queueTable
            + " SET expires_at = LEAST("
            + now
            + " + ?, (SELECT queued_until FROM "
            + table
            + " WHERE name = ?)) WHERE name = ? AND ticket = ? AND owner = ?";
    this.insertTicketCapped =
        "INSERT INTO "
            + queueTable
            + " (name, ticket, owner, expires_at) SELECT ?, ?, ?, LEAST("
            + now
            + " + ?, queued_until) FROM "
            + table
            + " WHERE name = ?";
    this.dropExpiredTickets =
        "DELETE FROM "
            + queueTable
            + " WHERE name = ? AND expires_at < "
            + now
            + " - "
            + CLOCK_ALLOWANCE_MILLIS;
    this.lastTicket = "SELECT COALESCE(MAX(ticket), 0) FROM " + queueTable + " WHERE name = ?";
    this.insertTicket =
        "INSERT INTO "
            + queueTable
            + " (name, ticket, owner, expires_at) VALUES (?, ?, ?, "
            + now
            + " + ?)";
    this.headTicket =
        "SELECT ticket, expires_at, "
            + now
            + " FROM "
            + queueTable
            + " WHERE name = ?"
            + liveTicket
            + " ORDER BY ticket LIMIT 1";
    this.deleteTicket = "DELETE FROM " + queueTable + " WHERE name = ? AND owner = ?";
    this.mayBeQueued =
        "SELECT 1 FROM "
            + table
            + " WHERE name = ? AND queued_until >= "
            + now
            + " - "
            + CLOCK_ALLOWANCE_MILLIS;
    this.waitersQueued =
        "SELECT 1 FROM " + queueTable + " WHERE name = ?" + liveTicket + " LIMIT 1";
    this.announceIfQueued =
        "SELECT pg_notify(?, ?) WHERE EXISTS (SELECT 1 FROM "
            + queueTable
            + " WHERE name = ?"
            + liveTicket
            + ")";
    String free =
        "UPDATE "
            + table
            + " SET owner = NULL, expires_at = "
            + now
            + " WHERE name = ? AND owner = ?";
    // PostgreSQL: announce the release to every client's listener (delivered at commit), but
    // only while a waiter is queued: an uncontended release then sends no pg_notify, whose commit
    // takes the cluster-wide notification queue lock and wakes every listener. The check is a
    // second statement sent in the same round trip, never a part of the UPDATE: see the note
    // before releaseOnce for why that loses no wake-up, and why inside the UPDATE it would.
    if (channel != null) {
      this.release = free + "; " + announceIfQueued;
    } else {
      // MySQL/MariaDB: the bell thread asks whether a waiter is queued after the commit
      // (waitersQueued), off the caller's thread; H2: waiters poll. Two ways to learn it in the
      // release's own round trip measured slower on MariaDB than the plain UPDATE: a
      // multi-table UPDATE joining the queue, and a second statement reading the queue sent
      // with the UPDATE (allowMultiQueries): 1.36x the raw floor's acquire + release against
      // 1.30x, in interleaved rounds.
      this.release = free;
    }
    // Ours and not expired: the same test a taker applies (heldAt), by the same database clock.
    String live =
        " WHERE name = ? AND owner = ? AND expires_at >= " + now + " - " + CLOCK_ALLOWANCE_MILLIS;
    this.extend = "UPDATE " + table + " SET expires_at = " + now + " + ?" + live;
    this.holdAfterRelease =
        "UPDATE " + table + " SET owner = ?, expires_at = " + now + " + ?" + live;
    this.selectOwnerIfLive = "SELECT owner FROM " + table + live;
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
    boolean hinted = queueHint;
    long queuedUntil = Long.MAX_VALUE; // unknown: someone may be queued
    try (PreparedStatement select =
        c.prepareStatement(hinted ? selectForUpdateHinted : selectForUpdate)) {
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
      try (PreparedStatement ins = c.prepareStatement(insert)) {
        ins.setString(1, name);
        ins.setString(2, owner);
        ins.setLong(3, leaseMillis);
        ins.setString(4, holder);
        ins.executeUpdate();
      }
      leaveQueue(c, name, owner, ticket); // only after the row was deleted by hand while we waited
      beforeCommit.run();
      return Take.granted(1);
    }
    if (owner.equals(current)) {
      // Ours already: a retry after a commit whose reply was lost. Keep the fence, extend the
      // lease.
      takeRow(c, take, name, owner, fence, now, leaseMillis, holder, 0);
      leaveQueue(c, name, owner, ticket);
      beforeCommit.run();
      return Take.granted(fence);
    }
    boolean held = current != null && heldAt(expiresAt, now);
    if (!held && !heldAt(queuedUntil, now)) {
      // No ticket lives past queued_until, and it has passed: nobody is queued, so the row
      // (locked by us) is taken without asking the queue.
      takeRow(c, take, name, owner, fence + 1, now, leaseMillis, holder, 0);
      leaveQueue(c, name, owner, ticket);
      beforeCommit.run();
      return Take.granted(fence + 1);
    }
    if (!held) {
      long next = fence + 1;
      int taken =
          takeRow(
              c,
              takeIfFirst,
              name,
              owner,
              next,
              now,
              leaseMillis,
              holder,
              ticket > 0 ? ticket : Long.MAX_VALUE);
      if (taken > 0) {
        leaveQueue(c, name, owner, ticket);
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
      try (PreparedStatement ps = c.prepareStatement(raiseQueuedUntil)) {
        ps.setLong(1, 3 * ticketMillis);
        ps.setString(2, name);
        ps.executeUpdate();
      }
    }
    long ours =
        ticket > 0 && refreshTicket(c, name, owner, ticket, ticketMillis, hinted)
            ? ticket
            : enqueue(c, name, owner, ticketMillis, hinted);
    if (held) {
      return new Take(false, fence, untilTakeable(expiresAt, now), ours, false, current);
    }
    long wait = ticketMillis;
    try (PreparedStatement ps = c.prepareStatement(headTicket)) {
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
   * Runs {@link #take} or {@link #takeIfFirst} on the row we hold locked.
   *
   * @param before for {@link #takeIfFirst}: the ticket no older live one may precede; 0 for {@link
   *     #take}
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

  private boolean refreshTicket(
      Connection c, String name, String owner, long ticket, long ticketMillis, boolean hinted)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(hinted ? refreshTicketCapped : refreshTicket)) {
      int i = 1;
      ps.setLong(i++, ticketMillis);
      if (hinted) {
        ps.setString(i++, name);
      }
      ps.setString(i++, name);
      ps.setLong(i++, ticket);
      ps.setString(i, owner);
      return ps.executeUpdate() > 0; // 0: it expired (we were paused) and was dropped
    }
  }

  /** Under the row lock, which serializes every enqueue for the name: the next ticket is unique. */
  private long enqueue(Connection c, String name, String owner, long ticketMillis, boolean hinted)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(dropExpiredTickets)) {
      ps.setString(1, name);
      ps.executeUpdate(); // waiters that vanished, so the queue does not grow without bound
    }
    long next;
    try (PreparedStatement ps = c.prepareStatement(lastTicket)) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        next = rs.getLong(1) + 1;
      }
    }
    try (PreparedStatement ps = c.prepareStatement(hinted ? insertTicketCapped : insertTicket)) {
      ps.setString(1, name);
      ps.setLong(2, next);
      ps.setString(3, owner);
      ps.setLong(4, ticketMillis);
      if (hinted) {
        ps.setString(5, name); // the lock's row, whose queued_until caps the ticket
      }
      ps.executeUpdate();
    }
    return next;
  }

  private void leaveQueue(Connection c, String name, String owner, long ticket)
      throws SQLException {
    if (ticket <= 0) {
      return; // never queued: the uncontended path stays at its five statements
    }
    try (PreparedStatement ps = c.prepareStatement(deleteTicket)) {
      ps.setString(1, name);
      ps.setString(2, owner);
      ps.executeUpdate();
    }
  }

  /**
   * Withdraws a waiter: deletes its ticket, and on PostgreSQL announces it, since the waiter behind
   * it may now be first in line for a free lock.
   */
  void withdraw(String name, String owner) throws SQLException {
    onceMore(
        () -> {
          for (int round = 0; ; round++) {
            try (Connection c = borrow()) {
              boolean auto = c.getAutoCommit();
              try {
                leaveQueue(c, name, owner, 1);
                if (channel != null) {
                  announceIfQueued(c, name);
                }
                if (!auto) {
                  c.commit();
                }
                return null;
              } catch (SQLException | RuntimeException e) {
                if (!auto) {
                  rollbackQuietly(c);
                }
                if (round < 3
                    && e instanceof SQLException
                    && Dialect.isRetryable((SQLException) e)) {
                  continue;
                }
                throw e;
              }
            }
          }
        });
  }

  /** PostgreSQL only: tells every client's listener that the lock may be worth polling again. */
  void announce(String name) throws SQLException {
    if (channel == null) {
      return;
    }
    onceMore(
        () -> {
          try (Connection c = borrow()) {
            boolean auto = c.getAutoCommit();
            try {
              announce(c, name);
              if (!auto) {
                c.commit();
              }
              return null;
            } catch (SQLException | RuntimeException e) {
              if (!auto) {
                rollbackQuietly(c);
              }
              throw e;
            }
          }
        });
  }

  /**
   * After our ticket is deleted, in the same transaction: announces only if a live ticket is still
   * queued, as a release does. A waiter whose ticket commits after this statement's snapshot read
   * ours as live (not yet deleted), so it found itself queued behind us and announces to itself
   * (the nudge of its poll).
   */
  private void announceIfQueued(Connection c, String name) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(announceIfQueued)) {
      ps.setString(1, channel);
      ps.setString(2, name);
      ps.setString(3, name);
      ps.executeQuery().close();
    }
  }

  private void announce(Connection c, String name) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT pg_notify(?, ?)")) {
      ps.setString(1, channel);
      ps.setString(2, name);
      ps.executeQuery().close();
    }
  }

  /**
   * MySQL/MariaDB, on the bell connection (autocommit) after a release has committed: whether a
   * live ticket is queued for the name, so the release's bell must ring.
   */
  boolean waitersQueued(Connection c, String name) throws SQLException {
    if (queueHint) {
      // First the lock's own row: queued_until passed means no live ticket, the usual answer of
      // an uncontended release, from a primary-key lookup rather than a read of the queue.
      try (PreparedStatement ps = c.prepareStatement(mayBeQueued)) {
        ps.setString(1, name);
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            return false;
          }
        }
      }
    }
    try (PreparedStatement ps = c.prepareStatement(waitersQueued)) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
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
      try (PreparedStatement ps = c.prepareStatement(release)) {
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
        extend,
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
    try (PreparedStatement ps = c.prepareStatement(selectOwnerIfLive)) {
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
        holdAfterRelease,
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

  private LockState stateOnce(String name) throws SQLException {
    try (Connection c = borrow()) {
      boolean auto = c.getAutoCommit();
      try (PreparedStatement ps = c.prepareStatement(selectState)) {
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
    return onceMore(() -> renewOnce(leases));
  }

  private Set<String> renewOnce(List<Due> leases) throws SQLException {
    Map<Long, List<Due>> byLease = new LinkedHashMap<>();
    for (Due d : leases) {
      byLease.computeIfAbsent(d.leaseMillis, k -> new ArrayList<>()).add(d);
    }
    Set<String> ours = new HashSet<>();
    try (Connection c = borrow()) {
      boolean auto = c.getAutoCommit();
      if (auto) {
        c.setAutoCommit(false);
      }
      try {
        for (Map.Entry<Long, List<Due>> group : byLease.entrySet()) {
          List<Due> all = group.getValue();
          for (int from = 0; from < all.size(); from += RENEW_CHUNK) {
            List<Due> chunk = all.subList(from, Math.min(all.size(), from + RENEW_CHUNK));
            renewChunk(c, group.getKey(), chunk, ours);
          }
        }
        c.commit();
      } catch (SQLException | RuntimeException e) {
        rollbackQuietly(c);
        throw e;
      } finally {
        restoreAutoCommit(c, auto);
      }
    }
    return ours;
  }

  private void renewChunk(Connection c, long leaseMillis, List<Due> chunk, Set<String> ours)
      throws SQLException {
    String in = placeholders(chunk.size());
    String where = " WHERE name IN (" + in + ") AND owner IN (" + in + ")";
    int updated;
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE " + table + " SET expires_at = " + dialect.nowMillis + " + ?" + where)) {
      int i = 1;
      ps.setLong(i++, leaseMillis);
      i = bind(ps, i, chunk);
      updated = ps.executeUpdate();
    }
    if (updated == chunk.size()) {
      chunk.forEach(d -> ours.add(d.owner));
      return;
    }
    // Some rows are no longer ours (taken after expiry, deleted): find out which.
    try (PreparedStatement ps = c.prepareStatement("SELECT owner FROM " + table + where)) {
      bind(ps, 1, chunk);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ours.add(rs.getString(1));
        }
      }
    }
  }

  private static int bind(PreparedStatement ps, int i, List<Due> chunk) throws SQLException {
    for (Due d : chunk) {
      ps.setString(i++, d.name);
    }
    for (Due d : chunk) {
      ps.setString(i++, d.owner);
    }
    return i;
  }

  private static String placeholders(int n) {
    StringBuilder sb = new StringBuilder(n * 3);
    for (int i = 0; i < n; i++) {
      sb.append(i == 0 ? "?" : ", ?");
    }
    return sb.toString();
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
        try (Connection c = borrow();
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
    try (Connection c = borrow();
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
    try (Connection c = borrow()) {
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
            rollbackQuietly(c);
          }
          return false;
        }
        throw e;
      }
    }
  }

  /** One database operation; each is idempotent, so running it again is safe. */
  @FunctionalInterface
  interface Operation<T> {
    T run() throws SQLException;
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
