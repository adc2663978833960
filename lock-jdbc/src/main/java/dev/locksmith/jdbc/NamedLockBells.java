package dev.locksmith.jdbc;

import dev.locksmith.Holder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * MySQL and MariaDB: wakes waiters of other clients with named locks ({@code GET_LOCK}), as door
 * bells. Each client has a bell per lock name, {@link #bell(String, String, String) bell(table,
 * client, name)}, held by its one bell connection from its first grant of that lock on. After a
 * release has committed, the bell thread asks the wait queue whether a waiter is queued (one SELECT
 * on the bell connection); only then does it let the bell go (rings it), and the bell then stays
 * free until the client's next grant of that lock. A release that finds no waiter keeps it held, so
 * a client that takes and releases a lock nobody waits for sends one bell statement per release
 * (that SELECT) after its first grant, off the caller's thread, and a grant of a lock whose bell is
 * held hands nothing to the bell thread. A waiter's client runs one watcher per waited name on a
 * connection of its own, blocked in {@code GET_LOCK} on the bell of the client that holds the lock
 * (the client part of the owner id its poll read): the ring lets it through, it lets the bell go
 * again and wakes the client's waiters of that name, which poll the table.
 *
 * <p>No wake-up is lost: a waiter that read the lock held was queued, under the row lock, before
 * that holder's release got the row lock, so before it committed, and the check after the commit
 * sees the ticket and rings (see {@link LeaseTable}, the note before {@code releaseOnce}); a
 * watcher that asks only after the ring finds the bell free (level-triggered: the holder's client
 * takes it again only at its next grant of the lock, which the queue keeps from it while that
 * waiter is first). A client drops the bells of locks it has not held for {@link #IDLE_NANOS}, and
 * keeps at most {@link #MAX_IDLE_BELLS} idle ones.
 *
 * <p>Correctness never depends on it: the table decides every grant, and a waiter still polls at
 * the holder's expiry and by a fallback interval. A bell found free (the holder has not taken it
 * yet, crashed, or could not take it) wakes the waiters, but after a few such in a row only with a
 * growing delay (up to 200 ms), so an unrung bell costs polls, not a busy loop. Every bell
 * statement of the holder runs on one thread, after the grant or release it follows, so an acquire
 * or release waits for none of them.
 */
final class NamedLockBells implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(NamedLockBells.class);
  private static final AtomicInteger THREADS = new AtomicInteger();

  /** A watcher's GET_LOCK returns after this many seconds without a release, to notice its end. */
  private static final int WATCH_SECONDS = 1;

  /** Most names watched at once by one client (one connection each); further waiters poll. */
  static final int MAX_WATCHERS = 16;

  /** A GET_LOCK answered within this went through a free bell: no release was awaited. */
  private static final long FREE_BELL_NANOS = TimeUnit.MILLISECONDS.toNanos(3);

  /** A watcher without waiters keeps its connection this long, for the lock's next waiters. */
  private static final long LINGER_NANOS = TimeUnit.SECONDS.toNanos(5);

  /** A bell of a lock this client has not held for this long is let go. */
  static final long IDLE_NANOS = TimeUnit.SECONDS.toNanos(30);

  /** Most bells of locks not held now that the bell connection keeps; beyond, the oldest go. */
  static final int MAX_IDLE_BELLS = 256;

  private final DataSource source;
  private final LeaseTable leaseTable;
  private final String table;
  private final String endpoint;
  private final ScheduledThreadPoolExecutor ringer;
  private final Map<String, Watcher> watchers = new ConcurrentHashMap<>();

  /** Owner id → that lease's bell, and until when the lease runs at most. */
  private final Map<String, Lease> leases = new ConcurrentHashMap<>();

  /**
   * The bells our bell connection holds → when a lease of ours last used it (nanoTime). Only the
   * ringer thread adds or removes a bell; a grant or release on a caller's thread only moves the
   * time of one that is there (computeIfPresent), so that a grant of a lock whose bell is held
   * hands nothing to the ringer thread (a release still hands it its check of the queue).
   */
  private final Map<String, Long> held = new ConcurrentHashMap<>();

  /** Ringer thread only. */
  private Connection bellConnection;

  private volatile boolean closed;

  private static final class Lease {
    final String name;
    final String bell;
    volatile long untilNanos;

    Lease(String name, String bell, long untilNanos) {
      this.name = name;
      this.bell = bell;
      this.untilNanos = untilNanos;
    }
  }

  NamedLockBells(DataSource source, LeaseTable leaseTable, String endpoint) {
    this.source = source;
    this.leaseTable = leaseTable;
    this.table = leaseTable.table();
    this.endpoint = endpoint;
    ScheduledThreadPoolExecutor s =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "locksmith-jdbc-bell-" + THREADS.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    s.setRemoveOnCancelPolicy(true);
    this.ringer = s;
    long sweep = IDLE_NANOS / 3;
    s.scheduleWithFixedDelay(() -> submit(this::dropIdleBells), sweep, sweep, TimeUnit.NANOSECONDS);
  }

  /**
   * @param client the client part of an owner id, see {@link #client(String)}
   * @return the named lock for a lock of a table and a client: at most 64 characters (MySQL's
   *     limit), the same in every client
   */
  static String bell(String table, String client, String name) {
    try {
      byte[] d =
          MessageDigest.getInstance("SHA-256")
              .digest(
                  (table + "\u0000" + client + "\u0000" + name).getBytes(StandardCharsets.UTF_8));
      return "locksmith:" + HexFormat.of().formatHex(d, 0, 24);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * @param owner a lease's owner id, or the owner column of a lock held after release
   * @return the part that names the client: the client id of lock-api's owner ids ({@link
   *     Holder#clientId()}), else what comes before the last colon of an older form ({@code <client
   *     id>:<n>}); an owner id without a colon is a client of its own (then each lease has its own
   *     bell, which costs a GET_LOCK per grant, not a lost wake-up: both sides derive the same
   *     name)
   */
  static String client(String owner) {
    String o = LeaseTable.isHold(owner) ? owner.substring(LeaseTable.HOLD_PREFIX.length()) : owner;
    java.util.Optional<Holder> holder = Holder.parse(o);
    if (holder.isPresent()) {
      return holder.get().clientId();
    }
    int colon = o.lastIndexOf(':');
    return colon > 0 ? o.substring(0, colon) : o;
  }

  // --- holder side ---------------------------------------------------------------------------

  /**
   * After a grant: make sure our bell of the lock is held, until a release with waiters rings it.
   * The lease is recorded before the bell is looked at, so a ring or an idle sweep that lets the
   * bell go after that look finds the lease in use and takes the bell again.
   */
  void granted(String name, String ownerId, long leaseMillis) {
    if (closed) {
      return;
    }
    String bell = bell(table, client(ownerId), name);
    leases.put(
        ownerId,
        new Lease(name, bell, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(leaseMillis)));
    if (held.computeIfPresent(bell, (b, t) -> System.nanoTime()) == null) {
      submit(() -> take(bell));
    }
  }

  /**
   * After a renewal, or a release with a hold: the lease's bell stays in use for another {@code
   * leaseMillis}.
   */
  void renewed(String ownerId, long leaseMillis) {
    Lease l = leases.get(ownerId);
    if (l != null) {
      l.untilNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(leaseMillis);
    }
  }

  /**
   * After a release or a loss.
   *
   * @param freed whether a release of ours freed the row (committed): then ring the bell if a
   *     waiter is queued
   */
  void released(String ownerId, boolean freed) {
    Lease l = leases.remove(ownerId);
    if (l == null) {
      return;
    }
    held.computeIfPresent(l.bell, (b, t) -> System.nanoTime());
    if (!freed) {
      return;
    }
    // Whether the bell is ours is asked on the bell thread, after every task before this one:
    // the GET_LOCK of this lease's grant may still be queued there (a hold of a millisecond),
    // and a release that looked now would find the bell not yet held and never ring it.
    submit(
        () -> {
          if (held.containsKey(l.bell) && leaseTable.waitersQueued(bellConnection(), l.name)) {
            ring(l.bell);
          }
        });
  }

  /**
   * After an ambiguous acquire was undone (its commit's reply was lost, so {@link #granted} was
   * never called for it): if the undo freed the row while a waiter is queued, ring our bell of the
   * lock, as a release would; the waiter may have read us as the holder and watch that bell.
   */
  void undone(String name, String ownerId, boolean freed) {
    String bell = bell(table, client(ownerId), name);
    if (!freed) {
      return;
    }
    submit(
        () -> {
          if (held.containsKey(bell) && leaseTable.waitersQueued(bellConnection(), name)) {
            ring(bell);
          }
        });
  }

  private void take(String bell) throws SQLException {
    if (held.containsKey(bell)) {
      held.put(bell, System.nanoTime());
    } else if (getLock(bellConnection(), bell, 0.05)) {
      held.put(bell, System.nanoTime());
    }
  }

  private void ring(String bell) throws SQLException {
    if (held.remove(bell) != null) {
      releaseLock(bellConnection, bell);
    }
    if (inUse(bell, System.nanoTime())) {
      // Another lease of ours on the lock (a thread of this client that was first in line)
      // was granted before this release was rung: its waiters need the bell held again.
      take(bell);
    }
  }

  private boolean inUse(String bell, long now) {
    for (Lease l : leases.values()) {
      if (l.bell.equals(bell) && l.untilNanos - now > 0) {
        return true;
      }
    }
    return false;
  }

  /**
   * Lets go the bells of locks not held for {@link #IDLE_NANOS}, and the oldest beyond {@link
   * #MAX_IDLE_BELLS}.
   */
  private void dropIdleBells() throws SQLException {
    long now = System.nanoTime();
    leases
        .values()
        .removeIf(
            l -> now - l.untilNanos > IDLE_NANOS); // lost without a word (renewals off): long over
    List<Map.Entry<String, Long>> idle = new ArrayList<>();
    for (Map.Entry<String, Long> e : held.entrySet()) {
      if (!inUse(e.getKey(), now)) {
        idle.add(Map.entry(e.getKey(), e.getValue()));
      }
    }
    idle.sort(Map.Entry.comparingByValue((a, b) -> Long.compare(a - now, b - now)));
    int keep = MAX_IDLE_BELLS;
    for (int i = idle.size() - 1; i >= 0; i--) { // newest first
      Map.Entry<String, Long> e = idle.get(i);
      if (keep > 0 && now - e.getValue() < IDLE_NANOS) {
        keep--;
        continue;
      }
      String bell = e.getKey();
      if (inUse(bell, System.nanoTime())) {
        continue; // granted again since the list was made
      }
      held.remove(bell);
      releaseLock(bellConnection, bell);
      if (inUse(bell, System.nanoTime())) {
        take(bell); // a grant that found the bell held just before it went: hold it again for its
        // waiters
      }
    }
  }

  private static void releaseLock(Connection c, String bell) throws SQLException {
    if (c == null) {
      return;
    }
    try (PreparedStatement ps = c.prepareStatement("SELECT RELEASE_LOCK(?)")) {
      ps.setString(1, bell);
      ps.executeQuery().close();
    }
  }

  private interface BellTask {
    void run() throws SQLException;
  }

  private void submit(BellTask task) {
    if (closed) {
      return;
    }
    try {
      ringer.execute(
          () -> {
            try {
              task.run();
            } catch (SQLException | RuntimeException e) {
              // The bells of this connection are gone with it: waiters of other clients then find
              // them free and poll. Start afresh with a new connection.
              LOG.debug(
                  "a named-lock bell on {} failed, waiters of other clients poll instead: {}",
                  endpoint,
                  e.toString());
              held.clear();
              LeaseTable.closeQuietly(bellConnection);
              bellConnection = null;
            }
          });
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // closing
    }
  }

  private Connection bellConnection() throws SQLException {
    if (bellConnection == null) {
      Connection c = source.getConnection();
      c.setAutoCommit(true);
      bellConnection = c;
    }
    return bellConnection;
  }

  private static boolean getLock(Connection c, String bell, double seconds) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT GET_LOCK(?, ?)")) {
      ps.setString(1, bell);
      ps.setDouble(2, seconds);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getInt(1) == 1;
      }
    }
  }

  // --- waiter side ---------------------------------------------------------------------------

  /**
   * Registers a waiter before its poll reads the lock.
   *
   * @return whether a watcher wakes it; false when this client already watches {@link
   *     #MAX_WATCHERS} names (the waiter then polls)
   */
  boolean register(String name, Runnable wake) {
    if (closed) {
      return false;
    }
    boolean[] ok = {true};
    watchers.compute(
        name,
        (k, w) -> {
          if (w == null || w.done) {
            if (watchers.size() >= MAX_WATCHERS) {
              ok[0] = false;
              return w == null || w.done ? null : w;
            }
            w = new Watcher(k);
            w.waiters.add(wake);
            w.start();
            return w;
          }
          w.waiters.add(wake);
          return w;
        });
    return ok[0];
  }

  /**
   * After a busy poll: the watcher waits on the holder's bell again.
   *
   * @param holder the owner column the poll read, whose client rings; null when the lock is free
   *     with an earlier waiter first in line (no bell to watch until one takes it)
   * @param moved whether the lock changed hands since the waiter's poll before: a bell found free
   *     then was a real release, not a holder that rings no bell
   */
  void arm(String name, String holder, boolean moved) {
    Watcher w = watchers.get(name);
    if (w != null) {
      w.bell = holder == null ? null : bell(table, client(holder), name);
      if (moved) {
        w.moved = true;
      }
      w.armed.release();
    }
  }

  void unregister(String name, Runnable wake) {
    Watcher w = watchers.get(name);
    if (w != null) {
      w.waiters.remove(wake);
      w.armed.release(); // lets it notice it has no waiters left
    }
  }

  /** One thread and connection blocked on one name's bell while the client has waiters for it. */
  private final class Watcher extends Thread {
    final Set<Runnable> waiters = ConcurrentHashMap.newKeySet();
    final Semaphore armed = new Semaphore(0);
    final String name;
    volatile boolean done;

    /** Set by a busy poll that saw a new holder. */
    volatile boolean moved;

    /** The bell of the lock's holder at the last busy poll; null: none to watch. */
    volatile String bell;

    Watcher(String name) {
      super("locksmith-jdbc-watch-" + THREADS.incrementAndGet());
      setDaemon(true);
      this.name = name;
    }

    @Override
    public void run() {
      Connection c = null;
      int freeInARow = 0;
      try {
        c = source.getConnection();
        c.setAutoCommit(true);
        while (!closed && !finished()) {
          armed.tryAcquire(WATCH_SECONDS, TimeUnit.SECONDS);
          armed.drainPermits();
          String bell = this.bell;
          if (closed || waiters.isEmpty() || bell == null) {
            continue;
          }
          boolean changedHands = moved;
          moved = false;
          long start = System.nanoTime();
          if (!getLock(c, bell, WATCH_SECONDS)) {
            armed.release(); // no release within the wait: keep waiting
            continue;
          }
          long waited = System.nanoTime() - start;
          try (PreparedStatement ps = c.prepareStatement("SELECT RELEASE_LOCK(?)")) {
            ps.setString(1, bell);
            ps.executeQuery().close();
          }
          if (waited < FREE_BELL_NANOS && !changedHands) {
            // The bell was free while the same holder kept the lock: it rings no bell (it has
            // not taken it yet, crashed, or its client lost its bell connection).
            if (++freeInARow > 2) {
              TimeUnit.MILLISECONDS.sleep(Math.min(200, 5L << Math.min(6, freeInARow - 3)));
            }
          } else {
            freeInARow = 0;
          }
          waiters.forEach(Runnable::run);
        }
      } catch (SQLException | RuntimeException e) {
        if (!closed) {
          LOG.debug(
              "watching the bell of lock '{}' on {} failed, its waiters poll: {}",
              name,
              endpoint,
              e.toString());
        }
        finishNow();
        waiters.forEach(Runnable::run);
      } catch (InterruptedException e) {
        finishNow();
        Thread.currentThread().interrupt(); // our own thread, ending
      } finally {
        LeaseTable.closeQuietly(c);
      }
    }

    private long idleSince;

    /**
     * @return whether it has had no waiters for {@link #LINGER_NANOS}, and then it is out of the
     *     map: a new waiter starts a new watcher
     */
    private boolean finished() {
      if (!waiters.isEmpty()) {
        idleSince = 0;
        return false;
      }
      long now = System.nanoTime();
      if (idleSince == 0) {
        idleSince = now;
      }
      if (now - idleSince < LINGER_NANOS) {
        return false;
      }
      watchers.computeIfPresent(
          name,
          (k, w) -> {
            if (w == this && waiters.isEmpty()) {
              done = true;
              return null;
            }
            return w;
          });
      return done;
    }

    private void finishNow() {
      watchers.computeIfPresent(
          name,
          (k, w) -> {
            if (w == this) {
              done = true;
              return null;
            }
            return w;
          });
      done = true;
    }
  }

  /** Watchers end within a second; the bell connection closes, which lets every bell go. */
  @Override
  public void close() {
    closed = true;
    watchers.values().forEach(w -> w.armed.release());
    ringer.execute(
        () -> {
          LeaseTable.closeQuietly(bellConnection);
          bellConnection = null;
          held.clear();
        });
    ringer.shutdown();
  }
}
