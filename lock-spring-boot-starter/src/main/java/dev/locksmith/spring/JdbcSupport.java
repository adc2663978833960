package dev.locksmith.spring;

import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.LockEvents;
import dev.locksmith.jdbc.JdbcLocks;
import java.time.Duration;
import java.util.Map;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * The default client over the application's {@link DataSource} ({@code
 * locksmith.jdbc.use-application-datasource=true}). Kept apart so the starter loads no lock-jdbc
 * class when lock-jdbc is absent.
 */
final class JdbcSupport {
  private JdbcSupport() {}

  /**
   * @param dataSource the application's DataSource; never closed by the client
   * @param settings the client settings and the JDBC backend's options
   * @param events the listener, given the connected client's scheme (the database's, such as
   *     jdbc:postgresql)
   * @return the connected client
   */
  static LockClient connect(
      DataSource dataSource, Map<String, String> settings, Function<String, LockEvents> events) {
    Forwarding forwarding = new Forwarding();
    LockClient client = JdbcLocks.connect(dataSource, settings, forwarding);
    forwarding.target =
        events.apply(client.config().uri().scheme()); // no lock is taken before connect returns
    return client;
  }

  /** Passes events on to a listener set once the database's scheme is known. */
  private static final class Forwarding implements LockEvents {
    private volatile LockEvents target = LockEvents.NONE;

    @Override
    public void acquired(String name, long fencingToken, Duration waited) {
      target.acquired(name, fencingToken, waited);
    }

    @Override
    public void gaveUp(String name, Duration waited, GiveUpReason reason) {
      target.gaveUp(name, waited, reason);
    }

    @Override
    public void renewed(String name, long fencingToken, Duration took) {
      target.renewed(name, fencingToken, took);
    }

    @Override
    public void renewalFailed(String name, long fencingToken, Throwable cause) {
      target.renewalFailed(name, fencingToken, cause);
    }

    @Override
    public void lost(String name, long fencingToken, LeaseLostException cause) {
      target.lost(name, fencingToken, cause);
    }

    @Override
    public void released(String name, long fencingToken, Duration held, boolean stillHeld) {
      target.released(name, fencingToken, held, stillHeld);
    }
  }
}
