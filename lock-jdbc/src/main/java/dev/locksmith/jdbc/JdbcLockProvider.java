package dev.locksmith.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.locksmith.BackendUnavailableException;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import dev.locksmith.spi.LockUri;
import java.sql.Driver;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * The JDBC backend: locks as rows of a lease table in MySQL, MariaDB, PostgreSQL or H2, through
 * a HikariCP pool. Serves {@code jdbc:mysql:}, {@code jdbc:mariadb:}, {@code jdbc:postgresql:}
 * and {@code jdbc:h2:} URIs:
 *
 * <pre>{@code
 * LockClient client = Locks.connect("jdbc:postgresql://db:5432/app?user=app&password=secret&table=app_locks");
 * }</pre>
 *
 * <p>Options of this backend: {@code table}, {@code create-table}, {@code pool-size},
 * {@code connect-timeout}, {@code io-timeout}, {@code backoff-min}, {@code backoff-max}. Every
 * other query parameter is handed to the JDBC driver as a connection property
 * ({@code sslmode=require}, {@code user}, {@code password}, …). The driver itself is not a
 * dependency of this artifact: add the one for your database. To lock with a
 * {@link DataSource} you already have, use {@link JdbcLocks#connect(DataSource)}.
 */
public final class JdbcLockProvider implements LockProvider {
  static final String TABLE = "table";
  static final String CREATE_TABLE = "create-table";
  static final String POOL_SIZE = "pool-size";
  static final String CONNECT_TIMEOUT = "connect-timeout";
  static final String IO_TIMEOUT = "io-timeout";
  static final String BACKOFF_MIN = "backoff-min";
  static final String BACKOFF_MAX = "backoff-max";
  static final Set<String> OPTIONS = Set.of(TABLE, CREATE_TABLE, POOL_SIZE, CONNECT_TIMEOUT, IO_TIMEOUT, BACKOFF_MIN,
      BACKOFF_MAX);
  static final String DEFAULT_TABLE = "locksmith_locks";

  private static final Pattern DRIVER_KEY = Pattern.compile("[A-Za-z][A-Za-z0-9_.\\-]{0,99}");
  private static final AtomicInteger POOLS = new AtomicInteger();

  /** The application's own DataSource, for {@link JdbcLocks}; null when the pool is opened from the URI. */
  private final DataSource dataSource;

  /** Made by {@link java.util.ServiceLoader}. */
  public JdbcLockProvider() {
    this(null);
  }

  /** For {@link JdbcLocks}: locks on the application's own DataSource, which the client never closes. */
  JdbcLockProvider(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  @Override
  public Set<String> schemes() {
    return Set.of("jdbc:mysql", "jdbc:mariadb", "jdbc:postgresql", "jdbc:h2");
  }

  @Override
  public Set<String> optionNames() {
    return OPTIONS;
  }

  /** Every key is accepted: our own options are checked in {@link #open}, the rest go to the driver. */
  @Override
  public boolean acceptsOption(String key) {
    return true;
  }

  @Override
  public LockBackend open(BackendConfig config, BackendContext context) {
    LockUri uri = config.uri();
    Dialect dialect = Dialect.forScheme(uri.scheme());
    if (dialect == null) {
      config.problem("`uri` was '" + uri + "' but this provider serves only " + schemes());
      config.check();
    }
    String table = config.string(TABLE, DEFAULT_TABLE);
    if (!LeaseTable.IDENTIFIER.matcher(table).matches()) {
      config.problem(TABLE, table, "it must be a plain identifier (letters, digits and '_', not starting with a digit, "
          + "at most 63), optionally schema-qualified as schema.table");
      table = DEFAULT_TABLE;
    }
    boolean create = config.bool(CREATE_TABLE, true);
    int poolSize = config.integer(POOL_SIZE, 10, 1, 200);
    Duration connectTimeout = config.duration(CONNECT_TIMEOUT, Duration.ofSeconds(5), Duration.ofMillis(500), Duration.ofMinutes(5));
    Duration ioTimeout = config.duration(IO_TIMEOUT, Duration.ofSeconds(5), Duration.ofMillis(100), Duration.ofMinutes(10));
    Duration backoffMin = config.duration(BACKOFF_MIN, Duration.ofMillis(5), Duration.ofMillis(1), Duration.ofMinutes(1));
    Duration backoffMax = config.duration(BACKOFF_MAX, Duration.ofMillis(200), Duration.ofMillis(1), Duration.ofMinutes(10));
    if (backoffMax.compareTo(backoffMin) < 0) {
      config.problem(BACKOFF_MAX, Durations.format(backoffMax), "it must not be less than backoff-min ("
          + Durations.format(backoffMin) + ")");
    }
    Properties driverProps = new Properties();
    for (Map.Entry<String, String> e : config.options().entrySet()) {
      String key = e.getKey();
      if (OPTIONS.contains(key)) {
        continue;
      }
      String near = nearMiss(key);
      if (near != null) {
        config.problem(key, e.getValue(), "it is not an option; did you mean `" + near + "`? (other keys are passed to the JDBC driver)");
      } else if (!DRIVER_KEY.matcher(key).matches()) {
        config.problem(key, e.getValue(), "it is not a valid JDBC driver property name (letters, digits, '_', '.', '-')");
      } else {
        driverProps.setProperty(key, e.getValue());
      }
    }
    if (dataSource != null) {
      return openDataSource(config, dialect, dataSource, table, create, ioTimeout, backoffMin, backoffMax, driverProps);
    }
    if (uri.hosts().isEmpty() && uri.path().isEmpty()) {
      config.problem("`uri` was '" + uri + "' but it names no database; write it as a JDBC URL such as "
          + example(dialect));
    }
    if (dialect == Dialect.H2 && driverProps.values().stream().anyMatch(v -> String.valueOf(v).contains(";"))) {
      config.problem("`uri` was '" + uri + "' but an H2 setting given as a query parameter contains ';'; write H2 settings in the URL as ;KEY=VALUE");
    }
    String url = jdbcUrl(uri, dialect);
    if (uri.user() != null && !driverProps.containsKey("user")) {
      driverProps.setProperty("user", uri.user());
    }
    if (uri.password() != null && !driverProps.containsKey("password")) {
      driverProps.setProperty("password", uri.password());
    }
    String driverUrl = url;
    Driver driver = driver(url);
    if (driver == null && dialect == Dialect.MARIADB) {
      // MySQL Connector/J speaks to MariaDB too: use it when no MariaDB driver is present.
      driverUrl = "jdbc:mysql:" + url.substring("jdbc:mariadb:".length());
      driver = driver(driverUrl);
    }
    if (driver == null) {
      config.problem("`uri` was '" + uri + "' but no JDBC driver on the class path accepts it; add " + dialect.driverArtifact);
    }
    config.check();

    String endpoint = endpoint(uri, dialect);
    boolean durable = !(dialect == Dialect.H2 && isH2Memory(uri));
    boolean shared = dialect != Dialect.H2 || isH2Server(uri);
    addTimeouts(dialect, driverProps, connectTimeout);
    addStatementCache(driver, driverProps);
    String user = driverProps.getProperty("user");
    String who = user == null ? "" : " as user '" + user + "'";
    // One bounded attempt of our own first: the driver's connect, login and socket timeouts
    // bound it, and wrong credentials fail at once (the pool would retry and sleep between tries).
    try (java.sql.Connection probe = driver.connect(driverUrl, driverProps)) {
      if (probe == null) {
        throw new SQLException("the driver " + driver.getClass().getName() + " does not accept the URL");
      }
    } catch (SQLException e) {
      throw new BackendUnavailableException("cannot connect to " + dialect.scheme + " at " + endpoint + who + " within "
          + Durations.format(connectTimeout) + ": " + describe(e), e);
    }
    HikariConfig hc = new HikariConfig();
    hc.setPoolName("locksmith-" + dialect.name().toLowerCase(Locale.ROOT) + "-" + POOLS.incrementAndGet());
    hc.setDriverClassName(driver.getClass().getName());
    hc.setJdbcUrl(driverUrl);
    if (user != null) {
      hc.setUsername(user);
    }
    String password = driverProps.getProperty("password");
    if (password != null) {
      hc.setPassword(password);
    }
    driverProps.remove("user");
    driverProps.remove("password");
    hc.setDataSourceProperties(driverProps);
    hc.setMaximumPoolSize(poolSize);
    hc.setMinimumIdle(Math.min(2, poolSize));
    hc.setConnectionTimeout(connectTimeout.toMillis());
    hc.setValidationTimeout(Math.max(250, connectTimeout.toMillis() / 2));
    hc.setInitializationFailTimeout(-1); // the probe above has checked the database is there
    // Connections stay in transaction mode: every operation ends with its own commit or
    // rollback, so an acquire sends no SET autocommit before and after its transaction.
    hc.setAutoCommit(false);
    hc.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
    HikariDataSource pool;
    try {
      pool = new HikariDataSource(hc);
    } catch (RuntimeException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      throw new BackendUnavailableException("cannot connect to " + dialect.scheme + " at " + endpoint + who + ": "
          + describe(cause), e);
    }
    LeaseTable leases = new LeaseTable(pool, dialect, table, (int) Math.min(Integer.MAX_VALUE, ioTimeout.toMillis()),
        () -> {
          if (pool.getHikariPoolMXBean() != null) {
            pool.getHikariPoolMXBean().softEvictConnections();
          }
        });
    try {
      leases.ensureExists(create);
    } catch (SQLException e) {
      pool.close();
      throw new BackendUnavailableException("preparing lock table " + table + " on " + endpoint + " failed: " + describe(e), e);
    } catch (RuntimeException e) {
      pool.close();
      throw e;
    }
    return new JdbcBackend(leases, endpoint, JdbcBackend.guarantees(durable, shared), ioTimeout, backoffMin, backoffMax,
        pool, () -> { });
  }

  private LockBackend openDataSource(BackendConfig config, Dialect dialect, DataSource ds, String table, boolean create,
      Duration ioTimeout, Duration backoffMin, Duration backoffMax, Properties driverProps) {
    LockUri uri = config.uri();
    if (!uri.hosts().isEmpty() || !uri.path().isEmpty()) {
      config.problem("`uri` was '" + uri + "' but with a DataSource the URI must be the bare scheme, such as " + dialect.scheme + ":");
    }
    if (!driverProps.isEmpty()) {
      config.problem("`" + String.join("`, `", driverProps.stringPropertyNames()) + "` cannot be given with a DataSource:"
          + " configure the DataSource itself; options of this backend are " + OPTIONS.stream().sorted().collect(Collectors.toList()));
    }
    config.check();
    String endpoint = "the DataSource " + ds.getClass().getName();
    LeaseTable leases = new LeaseTable(ds, dialect, table, 0, () -> { });
    try {
      leases.ensureExists(create);
    } catch (SQLException e) {
      throw new BackendUnavailableException("preparing lock table " + table + " through " + endpoint + " failed: " + describe(e), e);
    }
    return new JdbcBackend(leases, endpoint, JdbcBackend.guarantees(dialect != Dialect.H2, dialect != Dialect.H2), ioTimeout,
        backoffMin, backoffMax, null, () -> { });
  }

  /**
   * Connect timeouts for the driver, unless the user set their own. The socket timeout bounds
   * the login handshake (a port that accepts but never answers); each statement then runs under
   * the I/O timeout, set on the borrowed connection.
   */
  private static void addTimeouts(Dialect dialect, Properties props, Duration connect) {
    long connectSeconds = Math.max(1, (connect.toMillis() + 999) / 1000);
    if (dialect.isMysqlFamily()) {
      props.putIfAbsent("connectTimeout", Long.toString(connect.toMillis()));
      props.putIfAbsent("socketTimeout", Long.toString(connect.toMillis()));
    } else if (dialect == Dialect.POSTGRESQL) {
      props.putIfAbsent("connectTimeout", Long.toString(connectSeconds));
      props.putIfAbsent("loginTimeout", Long.toString(connectSeconds));
      props.putIfAbsent("socketTimeout", Long.toString(connectSeconds));
    }
  }

  /**
   * MySQL Connector/J parses the SQL text of every {@code prepareStatement} on the client unless
   * told to keep the parse per connection, and an acquire + release prepares three statements:
   * that parse cost more client CPU than the round trips themselves and was most of the gap to a
   * plain connection at 8 threads. The pool's connections keep it, with room for every statement
   * this backend sends (a renewal of 250 names is the longest). The user's own values win.
   */
  static void addStatementCache(Driver driver, Properties props) {
    if (driver.getClass().getName().startsWith("com.mysql.")) {
      props.putIfAbsent("cachePrepStmts", "true");
      props.putIfAbsent("prepStmtCacheSize", "64");
      props.putIfAbsent("prepStmtCacheSqlLimit", "4096");
    }
  }

  private static Driver driver(String url) {
    try {
      return DriverManager.getDriver(url);
    } catch (SQLException e) {
      return null;
    }
  }

  /** The JDBC URL without user info and without our query: options travel as driver properties. */
  static String jdbcUrl(LockUri uri, Dialect dialect) {
    if (uri.hosts().isEmpty()) {
      return dialect.scheme + ":" + uri.path();
    }
    return dialect.scheme + "://" + uri.hosts().stream().map(LockUri.HostPort::toString).collect(Collectors.joining(","))
        + uri.path();
  }

  /** host:port of every host, default ports filled in, for messages. */
  static String endpoint(LockUri uri, Dialect dialect) {
    if (uri.hosts().isEmpty()) {
      return "H2 database " + uri.path();
    }
    int port = dialect.isMysqlFamily() ? 3306 : dialect == Dialect.POSTGRESQL ? 5432 : 9092;
    return uri.hosts().stream().map(h -> new StringBuilder().append(h.host().indexOf(':') >= 0 ? "[" + h.host() + "]" : h.host())
        .append(':').append(h.portOr(port)).toString()).collect(Collectors.joining(","));
  }

  private static boolean isH2Memory(LockUri uri) {
    String p = uri.path().toLowerCase(Locale.ROOT);
    return p.startsWith("mem:") || p.contains("/mem:");
  }

  /** @return whether other processes can open the same H2 database: through its server, or AUTO_SERVER */
  private static boolean isH2Server(LockUri uri) {
    String p = uri.path().toLowerCase(Locale.ROOT);
    return p.startsWith("tcp:") || p.startsWith("ssl:") || p.contains("auto_server=true");
  }

  private static String example(Dialect d) {
    switch (d) {
      case POSTGRESQL:
        return "jdbc:postgresql://localhost:5432/app";
      case H2:
        return "jdbc:h2:file:/var/lib/app/locks";
      default:
        return d.scheme + "://localhost:3306/app";
    }
  }

  /** @return our option the key was probably meant to be, or null */
  private static String nearMiss(String key) {
    String k = key.toLowerCase(Locale.ROOT).replace("_", "").replace("-", "").replace(".", "");
    for (String o : OPTIONS) {
      if (!o.equals(key) && o.replace("-", "").equals(k)) {
        return o;
      }
    }
    return null;
  }

  /** The failure's message and its causes', with anything that looks like a secret redacted. */
  static String describe(Throwable e) {
    StringBuilder sb = new StringBuilder();
    Throwable t = e;
    for (int depth = 0; t != null && depth < 4; depth++, t = t.getCause()) {
      String m = t.getMessage();
      if (m == null || sb.indexOf(m) >= 0) {
        continue;
      }
      if (sb.length() > 0) {
        sb.append("; caused by: ");
      }
      sb.append(m.replace('\n', ' '));
    }
    return LockUri.redact(sb.length() == 0 ? e.toString() : sb.toString());
  }
}
