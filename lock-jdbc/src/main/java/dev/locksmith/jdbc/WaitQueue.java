package dev.locksmith.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The wait queue beside one {@link LeaseTable}: a waiter's ticket, enqueued, refreshed and deleted
 * under the lock row's lock by the take transaction, or withdrawn on its own; and, on PostgreSQL,
 * the announcements that tell every client's listener a lock may be worth polling again. The grant
 * goes to the oldest live ticket (FIFO).
 */
final class WaitQueue {
  private final LeaseTable leases;
  private final LeaseStatements sql;
  private final LeaseTableSchema schema;

  /** The PostgreSQL channel releases are announced on; null where the database cannot notify. */
  private final String channel;

  WaitQueue(LeaseTable leases, LeaseStatements sql, LeaseTableSchema schema, String channel) {
    this.leases = leases;
    this.sql = sql;
    this.schema = schema;
    this.channel = channel;
  }

  /**
   * In the take's transaction: makes our ticket live another {@code ticketMillis}.
   *
   * @return false if it expired (we were paused) and was dropped
   */
  boolean refreshTicket(
      Connection c, String name, String owner, long ticket, long ticketMillis, boolean hinted)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(hinted ? sql.refreshTicketCapped : sql.refreshTicket)) {
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
  long enqueue(Connection c, String name, String owner, long ticketMillis, boolean hinted)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.dropExpiredTickets)) {
      ps.setString(1, name);
      ps.executeUpdate(); // waiters that vanished, so the queue does not grow without bound
    }
    long next;
    try (PreparedStatement ps = c.prepareStatement(sql.lastTicket)) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        next = rs.getLong(1) + 1;
      }
    }
    try (PreparedStatement ps =
        c.prepareStatement(hinted ? sql.insertTicketCapped : sql.insertTicket)) {
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

  /** In the take's transaction, after a grant: deletes our ticket, if we had one. */
  void leaveQueue(Connection c, String name, String owner, long ticket) throws SQLException {
    if (ticket <= 0) {
      return; // never queued: the uncontended path stays at its five statements
    }
    try (PreparedStatement ps = c.prepareStatement(sql.deleteTicket)) {
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
    leases.onceMore(
        () -> {
          for (int round = 0; ; round++) {
            try (Connection c = leases.borrow()) {
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
                  LeaseTable.rollbackQuietly(c);
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
    leases.onceMore(
        () -> {
          try (Connection c = leases.borrow()) {
            boolean auto = c.getAutoCommit();
            try {
              announce(c, name);
              if (!auto) {
                c.commit();
              }
              return null;
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
   * After our ticket is deleted, in the same transaction: announces only if a live ticket is still
   * queued, as a release does. A waiter whose ticket commits after this statement's snapshot read
   * ours as live (not yet deleted), so it found itself queued behind us and announces to itself
   * (the nudge of its poll).
   */
  private void announceIfQueued(Connection c, String name) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql.announceIfQueued)) {
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
    if (schema.queueHint()) {
      // First the lock's own row: queued_until passed means no live ticket, the usual answer of
      // an uncontended release, from a primary-key lookup rather than a read of the queue.
      try (PreparedStatement ps = c.prepareStatement(sql.mayBeQueued)) {
        ps.setString(1, name);
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            return false;
          }
        }
      }
    }
    try (PreparedStatement ps = c.prepareStatement(sql.waitersQueued)) {
      ps.setString(1, name);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }
}
