package dev.locksmith.jdbc;

/**
 * The SQL of every statement {@link LeaseTable} and {@link WaitQueue} run, built once from the
 * checked table names: only those names are written into the SQL, every value is a parameter.
 */
final class LeaseStatements {
  final String selectForUpdate;

  /** {@link #selectForUpdate} with {@code queued_until}, for a table that has that column. */
  final String selectForUpdateHinted;

  /** Raises {@code queued_until} before a ticket is written, under the row lock. */
  final String raiseQueuedUntil;

  final String insert;
  final String take;
  final String takeIfFirst;
  final String refreshTicket;
  final String refreshTicketCapped;
  final String insertTicketCapped;
  final String dropExpiredTickets;
  final String lastTicket;
  final String insertTicket;
  final String headTicket;
  final String deleteTicket;
  final String release;
  final String waitersQueued;

  /** Whether the lock's queued_until has not passed: no live ticket if it has. */
  final String mayBeQueued;

  final String announceIfQueued;
  final String extend;
  final String holdAfterRelease;
  final String selectOwnerIfLive;
  final String selectState;

  /**
   * {@link #selectState} with the number of callers waiting: the distinct owners of the name's live
   * tickets, the holder's own excluded, read in the same statement (one snapshot).
   */
  final String selectStateWithWaiting;

  /** Held names (owner set) under a LIKE prefix, after a name, in name order: one index range. */
  final String listHeld;

  /**
   * The name of the reserved row whose fence is the highest fence of every row ever purged: a row
   * inserted for a name takes this plus one, so a purged name's tokens never go back. Names of
   * locks hold no control characters, so none is this.
   */
  static final String FLOOR_NAME = "\u0001fence-floor";

  /** The floor row's fence, read by an insert of a new row (share-locked where that exists). */
  final String selectFloor;

  /**
   * The floor row, locked by a purge (purges run one at a time), with when the last purge ran (its
   * {@code expires_at}) and the database's now.
   */
  final String lockFloor;

  /** Records that a purge ran now, so that the other clients' purges skip until the next turn. */
  final String markPurged;

  final String insertFloor;

  /** Tickets expired for longer than the purge's age: a vanished waiter's. */
  final String dropDeadTickets;

  /** The highest fence of the rows a purge may delete. */
  final String maxPurgeable;

  final String raiseFloor;

  /** Deletes the rows unused for the purge's age whose fence the floor covers. */
  final String purge;

  /**
   * Break-glass: frees a held row whoever holds it (a lease or a hold after release), keeping its
   * fence.
   */
  final String breakHeld;

  /**
   * @param table the lease table's checked name
   * @param queueTable its wait queue's ({@link LeaseTable#queueTable})
   * @param channel the PostgreSQL channel releases are announced on; null where the database cannot
   *     notify
   */
  LeaseStatements(Dialect dialect, String table, String queueTable, String channel) {
    String now = dialect.nowMillis;
    this.selectState =
        "SELECT owner, fence, expires_at, " + now + " FROM " + table + " WHERE name = ?";
    this.selectForUpdate = selectState + " FOR UPDATE";
    this.selectStateWithWaiting =
        "SELECT t.owner, t.fence, t.expires_at, "
            + now
            + ", (SELECT COUNT(DISTINCT q.owner) FROM "
            + queueTable
            + " q WHERE q.name = t.name AND q.owner <> t.owner AND q.expires_at >= "
            + now
            + " - "
            + LeaseTable.CLOCK_ALLOWANCE_MILLIS
            + ") FROM "
            + table
            + " t WHERE t.name = ?";
    this.listHeld =
        "SELECT name FROM "
            + table
            + " WHERE name LIKE ? ESCAPE '!' AND name > ? AND owner IS NOT NULL"
            + " ORDER BY name LIMIT ?";
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
            + " (name, owner, fence, expires_at, acquired_at, holder) VALUES (?, ?, ?, "
            + now
            + " + ?, "
            + now
            + ", ?)";
    String floorRow = "SELECT fence FROM " + table + " WHERE name = ?";
    this.selectFloor = floorRow + dialect.shareLock;
    this.lockFloor = "SELECT expires_at, " + now + " FROM " + table + " WHERE name = ? FOR UPDATE";
    this.markPurged = "UPDATE " + table + " SET expires_at = " + now + " WHERE name = ?";
    this.insertFloor =
        "INSERT INTO "
            + table
            + " (name, owner, fence, expires_at, acquired_at, holder) VALUES (?, NULL, 0, 0, 0,"
            + " NULL)";
    this.dropDeadTickets = "DELETE FROM " + queueTable + " WHERE expires_at < " + now + " - ?";
    // unused for the age by the database clock (a held row's expiry is ahead of now, a released
    // one's is its release), not the floor, and no ticket queued for it
    String purgeable =
        " WHERE name <> ? AND expires_at < "
            + now
            + " - ? AND NOT EXISTS (SELECT 1 FROM "
            + queueTable
            + " q WHERE q.name = "
            + table
            + ".name)";
    this.maxPurgeable = "SELECT MAX(fence) FROM " + table + purgeable;
    this.raiseFloor = "UPDATE " + table + " SET fence = GREATEST(fence, ?) WHERE name = ?";
    this.purge = "DELETE FROM " + table + purgeable + " AND fence <= ?";
    this.take =
        "UPDATE "
            + table
            + " SET owner = ?, fence = ?, expires_at = ?, acquired_at = ?, holder = ? WHERE name ="
            + " ?";
    // Run while we hold the row lock, which every enqueue needs too: each ticket committed
    // before is visible to this statement's own read (PostgreSQL and H2 read committed per
    // statement; InnoDB's first consistent read of the transaction comes after the row lock).
    String liveTicket = " AND expires_at >= " + now + " - " + LeaseTable.CLOCK_ALLOWANCE_MILLIS;
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
            + LeaseTable.CLOCK_ALLOWANCE_MILLIS;
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
            + LeaseTable.CLOCK_ALLOWANCE_MILLIS;
    this.waitersQueued =
        "SELECT 1 FROM " + queueTable + " WHERE name = ?" + liveTicket + " LIMIT 1";
    this.announceIfQueued =
        "SELECT pg_notify(?, ?) WHERE EXISTS (SELECT 1 FROM "
            + queueTable
            + " WHERE name = ?"
            + liveTicket
            + ")";
    this.breakHeld =
        "UPDATE "
            + table
            + " SET owner = NULL, expires_at = "
            + now
            + " WHERE name = ? AND owner IS NOT NULL AND expires_at >= "
            + now
            + " - "
            + LeaseTable.CLOCK_ALLOWANCE_MILLIS;
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
        " WHERE name = ? AND owner = ? AND expires_at >= "
            + now
            + " - "
            + LeaseTable.CLOCK_ALLOWANCE_MILLIS;
    this.extend = "UPDATE " + table + " SET expires_at = " + now + " + ?" + live;
    this.holdAfterRelease =
        "UPDATE " + table + " SET owner = ?, expires_at = " + now + " + ?" + live;
    this.selectOwnerIfLive = "SELECT owner FROM " + table + live;
  }
}
