package dev.locksmith.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * PostgreSQL only: one connection per client that {@code LISTEN}s on the table's channel, shared by
 * all the client's waiters. Releases and withdrawals announce the lock's name with {@code
 * pg_notify}; this thread wakes the waiters registered for that name, which then poll.
 *
 * <p>Correctness never depends on it: a waiter still polls by its fallback interval and at the
 * holder's expiry. After the connection is (re)established, every registered waiter is woken once,
 * so a release announced while nobody listened costs one poll, not a lost hand-off.
 */
final class ReleaseListener implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ReleaseListener.class);

  /** How long one wait for notifications lasts; also how often a dead connection is noticed. */
  private static final int WAIT_MILLIS = 500;

  /** Every so many waits, a round trip checks that a silent connection is still alive. */
  private static final int CHECK_EVERY = 10;

  private final DataSource source;
  private final String channel;
  private final String endpoint;
  private final int ioTimeoutMillis;
  private final Map<String, Set<Runnable>> waiters = new ConcurrentHashMap<>();
  private final Thread thread;
  private volatile boolean closed;
  private volatile Connection connection;

  /**
   * @param source where the listening connection comes from (unpooled for our own pool; the user's
   *     DataSource, which then lends one connection for the client's lifetime)
   * @param channel the checked channel name, see {@link LeaseTable#channel(String)}
   */
  ReleaseListener(DataSource source, String channel, String endpoint, int ioTimeoutMillis) {
    this.source = source;
    this.channel = channel;
    this.endpoint = endpoint;
    this.ioTimeoutMillis = ioTimeoutMillis;
    this.thread = new Thread(this::run, "locksmith-jdbc-listen");
    this.thread.setDaemon(true);
    this.thread.start();
  }

  /**
   * Registers a waiter before its poll reads the lock, so a release committed after that read wakes
   * it.
   */
  void register(String name, Runnable wake) {
    waiters.computeIfAbsent(name, k -> ConcurrentHashMap.newKeySet()).add(wake);
  }

  void unregister(String name, Runnable wake) {
    waiters.computeIfPresent(
        name,
        (k, set) -> {
          set.remove(wake);
          return set.isEmpty() ? null : set;
        });
  }

  private void run() {
    long retryMillis = 50;
    while (!closed) {
      Connection c = null;
      try {
        c = source.getConnection();
        connection = c;
        if (ioTimeoutMillis > 0) {
          try {
            c.setNetworkTimeout(Runnable::run, ioTimeoutMillis + WAIT_MILLIS);
          } catch (SQLException | AbstractMethodError e) {
            // the driver's own timeouts apply
          }
        }
        c.setAutoCommit(true);
        try (Statement s = c.createStatement()) {
          s.execute("LISTEN \"" + channel + "\"");
        }
        PGConnection pg = c.unwrap(PGConnection.class);
        retryMillis = 50;
        wakeAll(); // anything released while we were not listening
        for (int n = 0; !closed; n++) {
          PGNotification[] got = pg.getNotifications(WAIT_MILLIS);
          if (got != null) {
            for (PGNotification note : got) {
              wake(note.getParameter());
            }
          }
          if (n % CHECK_EVERY == CHECK_EVERY - 1) {
            try (Statement s = c.createStatement()) {
              s.execute("SELECT 1");
            }
          }
        }
      } catch (SQLException | RuntimeException e) {
        if (!closed) {
          LOG.warn(
              "listening for releases on {} failed, waiters poll meanwhile; retrying in {} ms: {}",
              endpoint,
              retryMillis,
              e.toString());
          wakeAll();
        }
      } finally {
        connection = null;
        LeaseTable.closeQuietly(c);
      }
      if (closed) {
        return;
      }
      try {
        TimeUnit.MILLISECONDS.sleep(retryMillis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt(); // closing: our own thread ends with its flag kept
        return;
      }
      retryMillis = Math.min(2_000, retryMillis * 2);
    }
  }

  private void wake(String name) {
    Set<Runnable> set = waiters.get(name);
    if (set != null) {
      set.forEach(Runnable::run);
    }
  }

  private void wakeAll() {
    waiters.values().forEach(set -> set.forEach(Runnable::run));
  }

  @Override
  public void close() {
    closed = true;
    thread.interrupt();
    LeaseTable.closeQuietly(connection);
    try {
      thread.join(1_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
