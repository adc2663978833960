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
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The JDBC backend: locks as rows of a lease table in MySQL, MariaDB, PostgreSQL or H2, through a
 * HikariCP pool. Serves {@code jdbc:mysql:}, {@code jdbc:mariadb:}, {@code jdbc:postgresql:} and
 * {@code jdbc:h2:} URIs:
 *
 * <pre>{@code
 * LockClient client = Locks.connect("jdbc:postgresql://db:5432/app?user=app&password=secret&table=app_locks");
 * }</pre>
 *
 * <p>Options of this backend: {@code table}, {@code create-table}, {@code pool-size}, {@code
 * connect-timeout}, {@code io-timeout}, {@code backoff-min}, {@code backoff-max}, {@code
 * purge-after} (rows of lock names unused this long are deleted, default {@code 1d}; {@code off}
 * keeps them). Every other query parameter is handed to the JDBC driver as a connection property
 * ({@code sslmode=require}, {@code user}, {@code password}, …). The driver itself is not a
 * dependency of this artifact: add the one for your database. To lock with a {@link DataSource} you
 * already have, use {@link JdbcLocks#connect(DataSource)}.
 */
public final class JdbcLockProvider implements LockProvider {
  static final String TABLE = "table";
  static final String CREATE_TABLE = "create-table";
  static final String POOL_SIZE = "pool-size";
  static final String CONNECT_TIMEOUT = "connect-timeout";
  static final String IO_TIMEOUT = "io-timeout";
  static final String BACKOFF_MIN = "backoff-min";
  static final String BACKOFF_MAX = "backoff-max";
  static final String PURGE_AFTER = "purge-after";
  static final Set<String> OPTIONS =
      Set.of(
          TABLE,
          CREATE_TABLE,
          POOL_SIZE,
          CONNECT_TIMEOUT,
          IO_TIMEOUT,
          BACKOFF_MIN,
          BACKOFF_MAX,
          PURGE_AFTER);
  static final Duration MIN_PURGE_AFTER = Duration.ofSeconds(1);
  static final Duration MAX_PURGE_AFTER = Duration.ofDays(365);
  static final String DEFAULT_TABLE = "locksmith_locks";

  private static final Pattern DRIVER_KEY = Pattern.compile("[A-Za-z][A-Za-z0-9_.\\-]{0,99}");
  private static final AtomicInteger POOLS = new AtomicInteger();
  private static final Logger LOG = LoggerFactory.getLogger(JdbcLockProvider.class);

  /**
   * The application's own DataSource, for {@link JdbcLocks}; null when the pool is opened from the
   * URI.
   */
  private final DataSource dataSource;

  /** Made by {@link java.util.ServiceLoader}. */
  public JdbcLockProvider() {
    this(null);
  }

  /**
   * For {@link JdbcLocks}: locks on the application's own DataSource, which the client never
   * closes.
   */
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

  /**
   * Every key is accepted: our own options are checked in {@link #open}, the rest go to the driver.
   */
  @Override
  public boolean acceptsOption(String key) {
    return true;
  }

  @Override
  public LockBackend open(BackendConfig config, BackendContext context) {
    LockUri uri = config.uri();
    Dialect dialect = Dialect.forScheme(uri.scheme());
    if (dialect == null) {
      config.problem(
          "`uri` was '" + uri + "' but this provider serves only " + new TreeSet<>(schemes()));
      config.check();
    }
    JdbcUrl url = dataSource != null ? null : JdbcUrl.parse(dialect, uri.raw());
    Secrets secrets = url != null ? url.secrets : new Secrets();
    String table = config.string(TABLE, DEFAULT_TABLE);
    if (!LeaseTable.IDENTIFIER.matcher(table).matches()) {
      config.problem(
          TABLE,
          table,
          "it must be a plain identifier (letters, digits and '_', not starting with a digit, "
              + "at most 63), optionally schema-qualified as schema.table");
      table = DEFAULT_TABLE;
    }
    boolean create = config.bool(CREATE_TABLE, true);
    int poolSize = config.integer(POOL_SIZE, 10, 1, 200);
    Duration connectTimeout =
        config.duration(
            CONNECT_TIMEOUT, Duration.ofSeconds(5), Duration.ofMillis(500), Duration.ofMinutes(5));
    Duration ioTimeout =
        config.duration(
            IO_TIMEOUT, Duration.ofSeconds(5), Duration.ofMillis(100), Duration.ofMinutes(10));
    Duration backoffMin =
        config.duration(
            BACKOFF_MIN, Duration.ofMillis(5), Duration.ofMillis(1), Duration.ofMinutes(1));
    Duration backoffMax =
        config.duration(
            BACKOFF_MAX, Duration.ofMillis(200), Duration.ofMillis(1), Duration.ofMinutes(10));
    Duration purgeAfter = purgeAfter(config);
    if (backoffMax.compareTo(backoffMin) < 0) {
      config.problem(
          BACKOFF_MAX,
          Durations.format(backoffMax),
          "it must not be less than backoff-min (" + Durations.format(backoffMin) + ")");
    }
    Properties driverProps = new Properties();
    for (Map.Entry<String, String> e : config.options().entrySet()) {
      String key = e.getKey();
      if (OPTIONS.contains(key)) {
        continue;
      }
      if (Secrets.isSecretKey(key)) {
        secrets.add(e.getValue());
      }
      String near = nearMiss(key);
      // the value of a key that may name a secret (pasword=, pass=, auth=) is never echoed
      String shownValue = Secrets.shown(key, e.getValue());
      if (near != null) {
        config.problem(
            key,
            shownValue,
            "it is not an option; did you mean `"
                + near
                + "`? (other keys are passed to the JDBC driver)");
      } else if (!DRIVER_KEY.matcher(key).matches()) {
        config.problem(
            key,
            shownValue,
            "it is not a valid JDBC driver property name (letters, digits, '_', '.', '-')");
      } else {
        driverProps.setProperty(key, e.getValue());
      }
    }
    if (dataSource != null) {
      return openDataSource(
          config,
          context,
          dialect,
          dataSource,
          table,
          create,
          ioTimeout,
          backoffMin,
          backoffMax,
          purgeAfter,
          driverProps);
    }
    String shown = url.shown();
    if (!url.namesDatabase()) {
      config.problem(
          "`uri` was '"
              + shown
              + "' but it names no database; write it as a JDBC URL such as "
              + example(dialect));
    }
    if (url.problem() != null) {
      config.problem(
          "`uri` was '"
              + shown
              + "' but "
              + url.problem()
              + "; write it as a JDBC URL such as "
              + example(dialect));
    }
    if (dialect == Dialect.H2
        && driverProps.values().stream().anyMatch(v -> String.valueOf(v).contains(";"))) {
      config.problem(
          "`uri` was '"
              + shown
              + "' but an H2 setting given as a query parameter contains ';'; write H2 settings in"
              + " the URL as ;KEY=VALUE");
    }
    credentials(config, url, driverProps, shown);
    String driverUrl = url.driverUrl();
    Driver driver = driver(driverUrl);
    if (driver == null && dialect == Dialect.MARIADB) {
      // MySQL Connector/J speaks to MariaDB too: use it when no MariaDB driver is present.
      driverUrl = "jdbc:mysql:" + driverUrl.substring("jdbc:mariadb:".length());
      driver = driver(driverUrl);
    }
    if (driver == null) {
      config.problem(
          "`uri` was '"
              + shown
              + "' but no JDBC driver on the class path accepts it; add "
              + dialect.driverArtifact);
    }
    config.check();

    String endpoint = url.endpointText();
    boolean durable = !(dialect == Dialect.H2 && isH2Memory(uri));
    boolean shared = dialect != Dialect.H2 || isH2Server(uri);
    addTimeouts(dialect, driverProps, connectTimeout, url.endpoints.size());
    addStatementCache(driver, driverProps);
    String user = driverProps.getProperty("user");
    String who = user == null ? "" : " as user '" + secrets.scrub(user) + "'";
    DataSource connections =
        new DriverConnections(driver, driverUrl, driverProps, secrets, endpoint);
    // One bounded attempt of our own first: the driver's connect, login and socket timeouts
    // bound it, and wrong credentials fail at once (the pool would retry and sleep between tries).
    long started = System.nanoTime();
    try (java.sql.Connection probe = connections.getConnection()) {
      LOG.debug(
          "connected to {} at {}{} in {} ms",
          dialect.scheme,
          endpoint,
          who,
          (System.nanoTime() - started) / 1_000_000);
    } catch (SQLException e) {
      throw connectFailed(url, endpoint + who, connectTimeout, e);
    }
    HikariConfig hc = new HikariConfig();
    hc.setPoolName(
        "locksmith-" + dialect.name().toLowerCase(Locale.ROOT) + "-" + POOLS.incrementAndGet());
    hc.setDataSource(connections);
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
      throw new BackendUnavailableException(
          "cannot connect to "
              + dialect.scheme
              + " at "
              + endpoint
              + who
              + ": "
              + describe(cause, secrets),
          cause instanceof SQLException ? secrets.scrubbed((SQLException) cause) : null);
    }
    LeaseTable leases =
        new LeaseTable(
            pool,
            dialect,
            table,
            (int) Math.min(Integer.MAX_VALUE, ioTimeout.toMillis()),
            () -> {
              if (pool.getHikariPoolMXBean() != null) {
                pool.getHikariPoolMXBean().softEvictConnections();
              }
            });
    try {
      leases.ensureExists(create);
      leases.ensureFloor();
    } catch (SQLException e) {
      pool.close();
      throw new BackendUnavailableException(
          "preparing lock table " + table + " on " + endpoint + " failed: " + describe(e, secrets),
          secrets.scrubbed(e));
    } catch (RuntimeException e) {
      pool.close();
      throw e;
    }
    ReleaseListener listener =
        leases.channel() == null
            ? null
            : new ReleaseListener(
                connections,
                leases.channel(),
                endpoint,
                (int) Math.min(Integer.MAX_VALUE, ioTimeout.toMillis()));
    NamedLockBells bells =
        dialect.isMysqlFamily() ? new NamedLockBells(connections, leases, endpoint) : null;
    SharedTable claims =
        new SharedTable(leases, dialect, table, create, context.recheck().toMillis());
    return new JdbcBackend(
        leases,
        claims,
        endpoint,
        secrets,
        JdbcBackend.guarantees(
            durable,
            shared,
            listener != null || bells != null,
            listener != null,
            !dialect.isMysqlFamily()),
        ioTimeout,
        backoffMin,
        backoffMax,
        purgeAfter,
        pool,
        listener,
        bells,
        () -> {});
  }

  /**
   * User and password from {@code user:password@} become driver properties. A user given both there
   * and as {@code ?user=} with another value is a problem, not a silent choice (a password given
   * twice is refused by the core for every scheme).
   */
  private static void credentials(
      BackendConfig config, JdbcUrl url, Properties driverProps, String shown) {
    if (url.user != null
        && driverProps.containsKey("user")
        && !url.user.equals(driverProps.getProperty("user"))) {
      config.problem(
          "`uri` was '"
              + shown
              + "' but it names two users, '"
              + url.secrets.scrub(url.user)
              + "' as user@ and '"
              + url.secrets.scrub(driverProps.getProperty("user"))
              + "' as ?user=; give the user once");
    }
    if (url.user != null) {
      driverProps.putIfAbsent("user", url.user);
    }
    if (url.password != null) {
      driverProps.putIfAbsent("password", url.password);
    }
  }

  /**
   * The probe's failure, saying which endpoint, within what time, and what is at the port when the
   * driver's own words do not tell (PostgreSQL says only "Connection attempt timed out."). The look
   * at the port takes at most a tenth of the connect timeout (and at most 500 ms), taken from the
   * driver's own timeout where it counts in milliseconds (H2, MySQL/MariaDB), so that the whole
   * failure stays within the time the message states, give or take 20%.
   */
  private static BackendUnavailableException connectFailed(
      JdbcUrl url, String where, Duration timeout, SQLException e) {
    String state = e.getSQLState() == null ? "" : e.getSQLState();
    String message =
        "cannot connect to "
            + url.dialect.scheme
            + " at "
            + where
            + " within "
            + Durations.format(timeout)
            + " (`"
            + CONNECT_TIMEOUT
            + "`): "
            + describe(e, url.secrets).replaceAll("\\.+$", "");
    boolean credentials = state.startsWith("28") || e.getErrorCode() == 1045;
    if (!credentials && !url.endpoints.isEmpty()) {
      message +=
          ". What is at the port: "
              + url.secrets.scrub(
                  PortProbe.diagnose(url.endpoints, url.dialect, probeBudget(timeout)));
    } else if (credentials) {
      message += ". Check the user and password of the URI";
    }
    return new BackendUnavailableException(message, url.secrets.scrubbed(e));
  }

  private LockBackend openDataSource(
      BackendConfig config,
      BackendContext context,
      Dialect dialect,
      DataSource ds,
      String table,
      boolean create,
      Duration ioTimeout,
      Duration backoffMin,
      Duration backoffMax,
      Duration purgeAfter,
      Properties driverProps) {
    LockUri uri = config.uri();
    if (!uri.hosts().isEmpty() || !uri.path().isEmpty()) {
      config.problem(
          "`uri` was '"
              + uri
              + "' but with a DataSource the URI must be the bare scheme, such as "
              + dialect.scheme
              + ":");
    }
    if (!driverProps.isEmpty()) {
      config.problem(
          "`"
              + String.join("`, `", driverProps.stringPropertyNames())
              + "` cannot be given with a DataSource:"
              + " configure the DataSource itself; options of this backend are "
              + OPTIONS.stream().sorted().collect(Collectors.toList()));
    }
    config.check();
    String endpoint = "the DataSource " + ds.getClass().getName();
    LeaseTable leases = new LeaseTable(ds, dialect, table, 0, () -> {});
    try {
      leases.ensureExists(create);
      leases.ensureFloor();
    } catch (SQLException e) {
      throw new BackendUnavailableException(
          "preparing lock table " + table + " through " + endpoint + " failed: " + describe(e), e);
    }
    // PostgreSQL: the DataSource lends one connection for the client's lifetime, to LISTEN on.
    ReleaseListener listener =
        leases.channel() == null ? null : new ReleaseListener(ds, leases.channel(), endpoint, 0);
    // MySQL/MariaDB: the DataSource lends a connection for the bells and one per watched name.
    NamedLockBells bells =
        dialect.isMysqlFamily() ? new NamedLockBells(ds, leases, endpoint) : null;
    SharedTable claims =
        new SharedTable(leases, dialect, table, create, context.recheck().toMillis());
    return new JdbcBackend(
        leases,
        claims,
        endpoint,
        new Secrets(),
        JdbcBackend.guarantees(
            dialect != Dialect.H2,
            dialect != Dialect.H2,
            listener != null || bells != null,
            listener != null,
            !dialect.isMysqlFamily()),
        ioTimeout,
        backoffMin,
        backoffMax,
        purgeAfter,
        null,
        listener,
        bells,
        () -> {});
  }

  /**
   * @return {@code purge-after}: how long a lock name's row stays unused before it is deleted; null
   *     for {@code off}
   */
  private static Duration purgeAfter(BackendConfig config) {
    String text = config.options().get(PURGE_AFTER);
    if (text != null && text.trim().equalsIgnoreCase("off")) {
      return null;
    }
    Duration d = Duration.ofDays(1);
    if (text != null) {
      try {
        d = Durations.parse(text);
      } catch (IllegalArgumentException e) {
        d = null;
      }
      if (d == null || d.compareTo(MIN_PURGE_AFTER) < 0 || d.compareTo(MAX_PURGE_AFTER) > 0) {
        config.problem(
            PURGE_AFTER,
            text,
            "it must be a duration from 1s to 365d, such as 1d, or off (rows of lock names are"
                + " then kept for ever)");
        return null;
      }
    }
    return d;
  }

  /**
   * @return how long a failed connect may spend looking at what is at the port: a tenth of the
   *     timeout, 100 to 500 ms
   */
  static Duration probeBudget(Duration connectTimeout) {
    return Duration.ofMillis(Math.max(100, Math.min(500, connectTimeout.toMillis() / 10)));
  }

  /**
   * Connect timeouts for the driver, unless the user set their own. The socket timeout bounds the
   * login handshake (a port that accepts but never answers); each statement then runs under the I/O
   * timeout, set on the borrowed connection. Connector/J tries the hosts of a multi-host URL one
   * after the other and, by default, goes round all of them 120 times: each host gets its share of
   * the timeout and no second round, so that the whole attempt ends within it.
   */
  private static void addTimeouts(Dialect dialect, Properties props, Duration connect, int hosts) {
    long connectSeconds = Math.max(1, (connect.toMillis() + 999) / 1000);
    // drivers that count in milliseconds leave the failed connect's look at the port its time
    // within the timeout, so
    // the whole failure takes what its message states, with the 20% margin left for a loaded
    // machine (it once took
    // 2415 ms for '2s' with the look after the full 2 s)
    long driverMillis = Math.max(100, connect.toMillis() - probeBudget(connect).toMillis());
    if (dialect == Dialect.H2 && hosts > 0) {
      // without it the H2 client waits for ever on a port that accepts but never answers
      props.putIfAbsent("NETWORK_TIMEOUT", Long.toString(driverMillis));
    } else if (dialect.isMysqlFamily()) {
      // the first host is tried once more when the round over all of them begins
      long perHost = hosts > 1 ? Math.max(100, driverMillis / (hosts + 1)) : driverMillis;
      props.putIfAbsent("connectTimeout", Long.toString(perHost));
      props.putIfAbsent("socketTimeout", Long.toString(perHost));
      if (hosts > 1) {
        props.putIfAbsent("retriesAllDown", "0");
      }
    } else if (dialect == Dialect.POSTGRESQL) {
      // loginTimeout bounds the whole login, every host of a multi-host URL included
      props.putIfAbsent("connectTimeout", Long.toString(connectSeconds));
      props.putIfAbsent("loginTimeout", Long.toString(connectSeconds));
      props.putIfAbsent("socketTimeout", Long.toString(connectSeconds));
    }
  }

  /**
   * MySQL Connector/J parses the SQL text of every {@code prepareStatement} on the client unless
   * told to keep the parse per connection, and an acquire + release prepares three statements: that
   * parse cost more client CPU than the round trips themselves and was most of the gap to a plain
   * connection at 8 threads. The pool's connections keep it, with room for every statement this
   * backend sends (a renewal of 250 names is the longest). The user's own values win.
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

  private static boolean isH2Memory(LockUri uri) {
    String p = uri.path().toLowerCase(Locale.ROOT);
    return p.startsWith("mem:") || p.contains("/mem:");
  }

  /**
   * @return whether other processes can open the same H2 database: through its server, or
   *     AUTO_SERVER
   */
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

  /**
   * @return our option the key was probably meant to be, or null
   */
  private static String nearMiss(String key) {
    String k = key.toLowerCase(Locale.ROOT).replace("_", "").replace("-", "").replace(".", "");
    for (String o : OPTIONS) {
      if (!o.equals(key) && o.replace("-", "").equals(k)) {
        return o;
      }
    }
    // one slip of the keyboard: a letter left out, added, changed or two swapped (tabel, tablee)
    for (String o : new java.util.TreeSet<>(OPTIONS)) {
      String n = o.replace("-", "");
      if (n.length() >= 5 && oneSlip(n, k)) {
        return o;
      }
    }
    return null;
  }

  /**
   * @return whether b is a one letter away from a: one inserted, deleted, changed, or two
   *     neighbours swapped
   */
  private static boolean oneSlip(String a, String b) {
    if (a.equals(b) || Math.abs(a.length() - b.length()) > 1) {
      return false;
    }
    int i = 0;
    while (i < Math.min(a.length(), b.length()) && a.charAt(i) == b.charAt(i)) {
      i++;
    }
    if (a.length() != b.length()) {
      String longer = a.length() > b.length() ? a : b;
      String shorter = a.length() > b.length() ? b : a;
      return longer.substring(i + 1).equals(shorter.substring(i));
    }
    return a.substring(i + 1).equals(b.substring(i + 1)) // one changed
        || (i + 1 < a.length()
            && a.charAt(i) == b.charAt(i + 1)
            && a.charAt(i + 1) == b.charAt(i)
            && a.substring(i + 2).equals(b.substring(i + 2))); // two neighbours swapped
  }

  /** The failure's message and its causes', with anything that looks like a secret redacted. */
  static String describe(Throwable e) {
    return describe(e, new Secrets());
  }

  /**
   * The failure's message and its causes', with the given secrets and anything that looks like one
   * masked.
   */
  static String describe(Throwable e, Secrets secrets) {
    StringBuilder sb = new StringBuilder();
    Throwable t = e;
    for (int depth = 0; t != null && depth < 4; depth++, t = t.getCause()) {
      String m = t.getMessage();
      if (m == null) {
        continue;
      }
      m = m.replaceAll("\\s*\n\\s*", " ").trim();
      if (sb.indexOf(m) >= 0) {
        continue;
      }
      if (sb.length() > 0) {
        sb.append("; caused by: ");
      }
      sb.append(m);
    }
    return secrets.scrub(LockUri.redact(sb.length() == 0 ? e.toString() : sb.toString()));
  }
}
