package dev.locksmith.jdbc;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.LockEvents;
import dev.locksmith.Locks;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Locks on a {@link DataSource} you already have (your application's pool), instead of a pool this
 * backend opens from a URI:
 *
 * <pre>{@code
 * try (LockClient client = JdbcLocks.connect(appDataSource, Map.of("lease", "30s", "table", "app_locks"))) {
 *   try (Lease lease = client.lock("nightly-report").acquire(Duration.ofMinutes(1))) {
 *     ...
 *   }
 * }
 * }</pre>
 *
 * The database is recognised from the connection's metadata (MySQL, MariaDB, PostgreSQL or H2).
 * Each lock operation borrows one connection from the DataSource for one short transaction; the
 * DataSource is never closed by the client.
 */
public final class JdbcLocks {
  private JdbcLocks() {}

  /**
   * @param dataSource where to borrow connections
   * @return a connected client with default settings
   * @throws BackendUnavailableException if no connection can be had
   * @throws LockConfigurationException if the database is not one this backend knows
   */
  public static LockClient connect(DataSource dataSource) {
    return connect(dataSource, Map.of());
  }

  /**
   * @param dataSource where to borrow connections
   * @param settings settings every client understands ({@code lease}, {@code renew}, {@code
   *     reentrant}, {@code recheck}) and options of this backend ({@code table}, {@code
   *     create-table}, {@code io-timeout}, {@code backoff-min}, {@code backoff-max}), as they would
   *     be written in a URI's query
   * @return a connected client
   * @throws BackendUnavailableException if no connection can be had
   * @throws LockConfigurationException if a setting is bad or the database is not one this backend
   *     knows
   */
  public static LockClient connect(DataSource dataSource, Map<String, String> settings) {
    return connect(dataSource, settings, LockEvents.NONE);
  }

  /**
   * As {@link #connect(DataSource, Map)}, with a listener for the client's events (metrics, a
   * framework's view of held leases).
   *
   * @param dataSource where to borrow connections
   * @param settings as for {@link #connect(DataSource, Map)}
   * @param events the listener of the client's lock events; {@link LockEvents#NONE} for none
   * @return a connected client
   * @throws BackendUnavailableException if no connection can be had
   * @throws LockConfigurationException if a setting is bad or the database is not one this backend
   *     knows
   */
  public static LockClient connect(
      DataSource dataSource, Map<String, String> settings, LockEvents events) {
    Objects.requireNonNull(
        events, "`events` was null but it must be a LockEvents, such as LockEvents.NONE");
    Objects.requireNonNull(
        dataSource, "`dataSource` was null but it must be the DataSource to lock with");
    Objects.requireNonNull(
        settings,
        "`settings` was null but it must be a map of settings, such as Map.of(\"lease\", \"30s\")");
    String product;
    try (Connection c = dataSource.getConnection()) {
      product = c.getMetaData().getDatabaseProductName();
    } catch (SQLException e) {
      throw new BackendUnavailableException(
          "cannot get a connection from the DataSource "
              + dataSource.getClass().getName()
              + ": "
              + JdbcLockProvider.describe(e),
          e);
    }
    Dialect dialect = Dialect.forProduct(product);
    if (dialect == null) {
      throw new LockConfigurationException(
          List.of(
              "`dataSource` was a "
                  + dataSource.getClass().getName()
                  + " for '"
                  + product
                  + "' but it must be a MySQL, MariaDB, PostgreSQL or H2 database"));
    }
    LockConfig.Builder b = LockConfig.builder().uri(dialect.scheme + ":");
    settings.forEach(b::option);
    b.events(events);
    return Locks.connect(b.build(), new JdbcLockProvider(dataSource));
  }
}
