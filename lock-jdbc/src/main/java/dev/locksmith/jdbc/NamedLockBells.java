package dev.locksmith.jdbc;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * MySQL and MariaDB: wakes waiters of other clients with named locks ({@code GET_LOCK}), as a
 * door bell. While this client holds a lock, its one bell connection also holds the named lock
 * {@link #bell(String, String) bell(name)}; a release lets it go. A waiter's client runs one
 * watcher per waited name on a connection of its own, blocked in {@code GET_LOCK(bell)}: the
 * release lets it through at once, it lets the bell go again and wakes the client's waiters of
 * that name, which poll the table.
 *
 * <p>Correctness never depends on it: the table decides every grant, and a waiter still polls
 * at the holder's expiry and by a fallback interval. A bell found free (the holder has not
 * taken it yet, crashed, or could not take it) wakes the waiters, but after a few such in a
 * row only with a growing delay (up to 200 ms), so an unrung bell costs polls, not a busy loop.
 * Every bell operation of the holder runs on one thread, after the grant or release it
 * follows, so an acquire or release waits for none of them.
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

  private final DataSource source;
  private final String table;
  private final String endpoint;
  private final ScheduledExecutorService ringer;
  private final Map<String, Watcher> watchers = new ConcurrentHashMap<>();
  /** Ringer thread only: owner id → bell held for that lease, and until when at most. */
  private final Map<String, Held> held = new HashMap<>();
  /** Ringer thread only. */
  private Connection bellConnection;
  private volatile boolean closed;

  private static final class Held {
    final String bell;
    long untilNanos;

    Held(String bell, long untilNanos) {
      this.bell = bell;
      this.untilNanos = untilNanos;
    }
  }

  NamedLockBells(DataSource source, String table, String endpoint) {
    this.source = source;
    this.table = table;
    this.endpoint = endpoint;
    ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "locksmith-jdbc-bell-" + THREADS.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    s.setRemoveOnCancelPolicy(true);
    this.ringer = s;
  }

  /**
   * @return the named lock for a lock of a table: at most 64 characters (MySQL's limit), the
   *     same in every client
   */
  static String bell(String table, String name) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest((table + "\u0000" + name).getBytes(StandardCharsets.UTF_8));
      return "locksmith:" + HexFormat.of().formatHex(d, 0, 24);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  // --- holder side ---------------------------------------------------------------------------

  /** After a grant: hold the lock's bell until the lease is released, lost or runs out. */
  void granted(String name, String ownerId, long leaseMillis) {
    submit(() -> {
      String bell = bell(table, name);
      long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(leaseMillis);
      if (getLock(bellConnection(), bell, 0.05)) {
        held.put(ownerId, new Held(bell, until));
        ringer.schedule(() -> submit(() -> expire(ownerId)), leaseMillis, TimeUnit.MILLISECONDS);
      }
    });
  }

  /** After a renewal: the bell stays held for another lease. */
  void renewed(String ownerId, long leaseMillis) {
    submit(() -> {
      Held h = held.get(ownerId);
      if (h != null) {
        h.untilNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(leaseMillis);
      }
    });
  }

  /** After a release, a hold-after-release's end, or a loss: ring. */
  void released(String ownerId) {
    submit(() -> ring(ownerId));
  }

  private void expire(String ownerId) throws SQLException {
    Held h = held.get(ownerId);
    if (h == null) {
      return;
    }
    long left = h.untilNanos - System.nanoTime();
    if (left > 0) {
      ringer.schedule(() -> submit(() -> expire(ownerId)), left, TimeUnit.NANOSECONDS);
    } else {
      ring(ownerId); // lost or ran out without a release: waiters poll the table at its expiry anyway
    }
  }

  private void ring(String ownerId) throws SQLException {
    Held h = held.remove(ownerId);
    if (h != null && bellConnection != null) {
      try (PreparedStatement ps = bellConnection.prepareStatement("SELECT RELEASE_LOCK(?)")) {
        ps.setString(1, h.bell);
        ps.executeQuery().close();
      }
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
      ringer.execute(() -> {
        try {
          task.run();
        } catch (SQLException | RuntimeException e) {
          // The bells of this connection are gone with it: waiters of other clients then find
          // them free and poll. Start afresh with a new connection.
          LOG.debug("a named-lock bell on {} failed, waiters of other clients poll instead: {}", endpoint, e.toString());
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
   * @return whether a watcher wakes it; false when this client already watches
   *     {@link #MAX_WATCHERS} names (the waiter then polls)
   */
  boolean register(String name, Runnable wake) {
    if (closed) {
      return false;
    }
    boolean[] ok = {true};
    watchers.compute(name, (k, w) -> {
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
   * After a busy poll: the watcher waits on the bell again.
   *
   * @param moved whether the lock changed hands since the waiter's poll before: a bell found
   *     free then was a real release, not a holder that rings no bell
   */
  void arm(String name, boolean moved) {
    Watcher w = watchers.get(name);
    if (w != null) {
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

    Watcher(String name) {
      super("locksmith-jdbc-watch-" + THREADS.incrementAndGet());
      setDaemon(true);
      this.name = name;
    }

    @Override
    public void run() {
      String bell = bell(table, name);
      Connection c = null;
      int freeInARow = 0;
      try {
        c = source.getConnection();
        c.setAutoCommit(true);
        while (!closed && !finished()) {
          armed.tryAcquire(WATCH_SECONDS, TimeUnit.SECONDS);
          armed.drainPermits();
          if (closed || waiters.isEmpty()) {
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
          LOG.debug("watching the bell of lock '{}' on {} failed, its waiters poll: {}", name, endpoint, e.toString());
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
      watchers.computeIfPresent(name, (k, w) -> {
        if (w == this && waiters.isEmpty()) {
          done = true;
          return null;
        }
        return w;
      });
      return done;
    }

    private void finishNow() {
      watchers.computeIfPresent(name, (k, w) -> {
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
    ringer.execute(() -> {
      LeaseTable.closeQuietly(bellConnection);
      bellConnection = null;
      held.clear();
    });
    ringer.shutdown();
  }
}
