package dev.locksmith.redis.internal;

import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.LockUri;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Internal: for lock-redlock, not for applications; may change.
 *
 * <p>The connection settings of one Redis server, read from a {@code redis://} or {@code rediss://}
 * URI and its options, or of each server of a multi-host URI ({@link #readEach}). Every problem is
 * recorded in the {@link BackendConfig} so that {@link BackendConfig#check()} reports them all at
 * once, and each only once.
 */
public final class RedisSettings {
  static final String NAMESPACE = "namespace";
  static final String DATABASE = "database";
  static final String USER = "user";
  static final String PASSWORD = "password";
  static final String TLS = "tls";
  static final String CONNECT_TIMEOUT = "connect-timeout";
  static final String COMMAND_TIMEOUT = "command-timeout";
  static final String POOL_SIZE = "pool-size";
  static final String SENTINEL_USER = "sentinel-user";
  static final String SENTINEL_PASSWORD = "sentinel-password";
  static final String WAIT_REPLICAS = "wait-replicas";
  static final String WAIT_TIMEOUT = "wait-timeout";

  /** The options every Redis URI understands. */
  public static final Set<String> OPTIONS =
      Set.of(NAMESPACE, DATABASE, USER, PASSWORD, TLS, CONNECT_TIMEOUT, COMMAND_TIMEOUT, POOL_SIZE);

  /**
   * The options of lock-redis's own URIs: {@link #OPTIONS}, the Sentinel credentials and the
   * replica acknowledgement.
   */
  public static final Set<String> TOPOLOGY_OPTIONS =
      Set.of(
          NAMESPACE,
          DATABASE,
          USER,
          PASSWORD,
          TLS,
          CONNECT_TIMEOUT,
          COMMAND_TIMEOUT,
          POOL_SIZE,
          SENTINEL_USER,
          SENTINEL_PASSWORD,
          WAIT_REPLICAS,
          WAIT_TIMEOUT);

  /** How the servers of a URI are arranged. */
  public enum Topology {
    /** One server: {@code redis://}, {@code rediss://}. */
    SINGLE,
    /**
     * A primary and its replicas, found through Sentinels: {@code redis-sentinel://}, {@code
     * rediss-sentinel://}.
     */
    SENTINEL,
    /** A Redis Cluster: {@code redis-cluster://}, {@code rediss-cluster://}. */
    CLUSTER
  }

  /** The port of a Sentinel when a host names none. */
  public static final int DEFAULT_SENTINEL_PORT = 26379;

  static final Duration DEFAULT_WAIT_TIMEOUT = Duration.ofMillis(100);

  /** The port when a host names none. */
  public static final int DEFAULT_PORT = 6379;

  /** The namespace when the {@code namespace} option is absent. */
  public static final String DEFAULT_NAMESPACE = "locksmith:";

  static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);
  static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(2);
  static final int DEFAULT_POOL_SIZE = 8;

  /** Printable, no braces (they would change the Redis Cluster hash tag), no whitespace. */
  private static final Pattern NAMESPACE_TEXT = Pattern.compile("[\\x21-\\x7a\\x7c\\x7e]{1,64}");

  final String host;
  final int port;
  final String user;
  final String password;
  final int database;
  final boolean tls;
  final String namespace;
  final Duration connectTimeout;
  final Duration commandTimeout;
  final int poolSize;

  /** The URI with secrets redacted, for messages. */
  final String shownUri;

  Topology topology = Topology.SINGLE;

  /** The Sentinels or the Cluster's seed nodes, as host:port pairs; empty for one server. */
  List<String[]> seeds = List.of();

  /** The Sentinel master name, or null. */
  String masterName;

  String sentinelUser;
  String sentinelPassword;
  int waitReplicas;
  Duration waitTimeout = DEFAULT_WAIT_TIMEOUT;

  /**
   * Whether host and port name a real data node (always for one server; for the others once found).
   */
  boolean located = true;

  private RedisSettings(
      String host,
      int port,
      String user,
      String password,
      int database,
      boolean tls,
      String namespace,
      Duration connectTimeout,
      Duration commandTimeout,
      int poolSize,
      String shownUri) {
    this.host = host;
    this.port = port;
    this.user = user;
    this.password = password;
    this.database = database;
    this.tls = tls;
    this.namespace = namespace;
    this.connectTimeout = connectTimeout;
    this.commandTimeout = commandTimeout;
    this.poolSize = poolSize;
    this.shownUri = shownUri;
  }

  /**
   * Reads the settings of a URI naming exactly one server ({@code redis://}, {@code rediss://});
   * problems go into {@code config}, the caller then calls {@link BackendConfig#check()}.
   *
   * @param config the URI and options
   * @return the settings (defaults where a value was bad)
   */
  public static RedisSettings read(BackendConfig config) {
    String scheme = config.uri().scheme();
    RedisSettings settings;
    if (scheme.endsWith("-sentinel")) {
      settings = readSentinel(config);
    } else if (scheme.endsWith("-cluster")) {
      settings = readCluster(config);
    } else {
      settings = readSingle(config);
    }
    if (settings.topology != Topology.SENTINEL) {
      for (String only : List.of(SENTINEL_USER, SENTINEL_PASSWORD)) {
        if (config.options().containsKey(only)) {
          config.problem(
              only,
              config.options().get(only),
              "it applies only to redis-sentinel:// and rediss-sentinel:// URIs");
        }
      }
    }
    settings.waitReplicas = config.integer(WAIT_REPLICAS, 0, 0, 64);
    settings.waitTimeout =
        config.duration(
            WAIT_TIMEOUT, DEFAULT_WAIT_TIMEOUT, Duration.ofMillis(1), Duration.ofMinutes(1));
    if (config.options().containsKey(WAIT_TIMEOUT)
        && settings.waitReplicas == 0
        && !config.options().containsKey(WAIT_REPLICAS)) {
      config.problem(
          WAIT_TIMEOUT,
          config.options().get(WAIT_TIMEOUT),
          "it only applies with `"
              + WAIT_REPLICAS
              + "` of 1 or more, such as ?wait-replicas=1&wait-timeout=100ms");
    }
    return settings;
  }

  private static RedisSettings readSentinel(BackendConfig config) {
    LockUri uri = config.uri();
    String form =
        "redis-sentinel://[user:password@]sentinel1:26379,sentinel2:26379/master-name[/database]"
            + " (rediss-sentinel:// for TLS)";
    List<String[]> sentinels = seeds(config, form, DEFAULT_SENTINEL_PORT);
    String path = uri.path();
    String master = null;
    String db = null;
    if (!sentinels.isEmpty()) {
      String rest = path.startsWith("/") ? path.substring(1) : path;
      int slash = rest.indexOf('/');
      master = slash < 0 ? rest : rest.substring(0, slash);
      db = slash < 0 ? null : rest.substring(slash + 1);
      if (master.isEmpty()) {
        config.problem(
            "`uri` was '"
                + uri
                + "' but it names no master: put the name the Sentinels monitor after the hosts, as"
                + " in "
                + form);
        master = null;
      } else if (!master.matches("[\\x21-\\x7e]{1,128}")) {
        config.problem(
            "`uri` was '"
                + uri
                + "' but its master name '"
                + master
                + "' must be 1 to 128 printable ASCII characters, as in "
                + form);
        master = null;
      }
    }
    // the database, if any, is the second path segment; the shared reader takes it as the path
    RedisSettings s =
        readAll(
                config,
                List.<String[]>of(new String[] {"localhost", Integer.toString(DEFAULT_PORT)}),
                db == null ? "" : "/" + db)
            .get(0);
    s.topology = Topology.SENTINEL;
    s.located = false;
    s.seeds = sentinels;
    s.masterName = master == null ? "mymaster" : master;
    s.sentinelUser = config.string(SENTINEL_USER, null);
    s.sentinelPassword = config.string(SENTINEL_PASSWORD, null);
    if (s.sentinelUser != null && s.sentinelPassword == null) {
      config.problem(
          "`"
              + SENTINEL_USER
              + "` was '"
              + s.sentinelUser
              + "' but a Sentinel user needs a `"
              + SENTINEL_PASSWORD
              + "`");
    }
    if (s.sentinelPassword != null && s.sentinelPassword.isEmpty()) {
      config.problem(
          SENTINEL_PASSWORD,
          "",
          "it must not be empty; leave it out when the Sentinels need no password");
    }
    return s;
  }

  private static RedisSettings readCluster(BackendConfig config) {
    LockUri uri = config.uri();
    String form =
        "redis-cluster://[user:password@]node1:7000,node2:7001 (rediss-cluster:// for TLS)";
    List<String[]> nodes = seeds(config, form, DEFAULT_PORT);
    String path = uri.path();
    if (!path.isEmpty() && !path.equals("/") && !path.equals("/0")) {
      config.problem(
          "`uri` was '"
              + uri
              + "' but a Redis Cluster has only database 0: leave the path out, as in "
              + form);
    }
    RedisSettings s =
        readAll(
                config,
                List.<String[]>of(new String[] {"localhost", Integer.toString(DEFAULT_PORT)}),
                "")
            .get(0);
    if (s.database != 0) {
      config.problem(
          DATABASE, config.options().get(DATABASE), "a Redis Cluster has only database 0");
    }
    s.topology = Topology.CLUSTER;
    s.located = false;
    s.seeds = nodes;
    return s;
  }

  /**
   * @return the hosts of a multi-host URI, at least one, each once; problems recorded
   */
  private static List<String[]> seeds(BackendConfig config, String form, int defaultPort) {
    LockUri uri = config.uri();
    List<String[]> hosts = new ArrayList<>();
    if (!uri.raw().regionMatches(uri.scheme().length(), "://", 0, 3)) {
      config.problem("`uri` was '" + uri + "' but it must be " + form);
      return hosts;
    }
    if (uri.hosts().isEmpty()) {
      config.problem("`uri` was '" + uri + "' but it names no host; it must be " + form);
      return hosts;
    }
    Set<String> seen = new LinkedHashSet<>();
    for (LockUri.HostPort hp : uri.hosts()) {
      String[] h = {hp.host(), Integer.toString(hp.portOr(defaultPort))};
      String spelled = endpoint(h[0], Integer.parseInt(h[1]));
      if (!seen.add(spelled.toLowerCase(Locale.ROOT))) {
        config.problem(
            "`uri` was '" + uri + "' but it names " + spelled + " twice; name each host once");
      } else {
        hosts.add(h);
      }
    }
    return hosts;
  }

  private static RedisSettings readSingle(BackendConfig config) {
    String form =
        "redis://[user:password@]host[:port][/database] or rediss://… for TLS, such as"
            + " redis://localhost:6379/0";
    LockUri uri = config.uri();
    List<String[]> hosts = new ArrayList<>();
    if (!uri.raw().regionMatches(uri.scheme().length(), "://", 0, 3)) {
      config.problem("`uri` was '" + uri + "' but it must be " + form);
    } else if (uri.hosts().size() != 1) {
      config.problem(
          "`uri` was '"
              + uri
              + "' but it must name exactly one host, as in "
              + form
              + (uri.hosts().size() > 1
                  ? "; for several independent servers use redlock://h1:p1,h2:p2,h3:p3"
                  : ""));
    } else {
      hosts.add(
          new String[] {
            uri.hosts().get(0).host(), Integer.toString(uri.hosts().get(0).portOr(DEFAULT_PORT))
          });
    }
    if (hosts.isEmpty()) {
      hosts.add(new String[] {"localhost", Integer.toString(DEFAULT_PORT)});
    }
    return readAll(config, hosts, config.uri().path()).get(0);
  }

  /**
   * Reads the settings of a URI naming several independent servers ({@code redlock://h1,h2,h3}):
   * the options, user, password and database are read and checked once and shared by every server,
   * so a bad value is reported once, not once per server. Problems go into {@code config}; the
   * caller then calls {@link BackendConfig#check()}.
   *
   * @param config the URI and options
   * @param minHosts the fewest servers the URI must name
   * @param form how a valid URI looks, for messages, such as {@code redlock://h1:p1,h2:p2,h3:p3}
   * @return one settings per server, in the URI's order (one default server if the hosts were bad)
   */
  public static List<RedisSettings> readEach(BackendConfig config, int minHosts, String form) {
    LockUri uri = config.uri();
    List<String[]> hosts = new ArrayList<>();
    if (!uri.raw().regionMatches(uri.scheme().length(), "://", 0, 3)) {
      config.problem("`uri` was '" + uri + "' but it must be " + form);
    } else if (uri.hosts().size() < minHosts) {
      config.problem(
          "`uri` was '"
              + uri
              + "' but it names "
              + uri.hosts().size()
              + " host"
              + (uri.hosts().size() == 1 ? "" : "s")
              + " and must name at least "
              + minHosts
              + ", separated by commas, as in "
              + form);
    } else {
      Map<String, String> spelledFirst = new HashMap<>();
      for (LockUri.HostPort hp : uri.hosts()) {
        String[] h = {hp.host(), Integer.toString(hp.portOr(DEFAULT_PORT))};
        String spelled = endpoint(h[0], Integer.parseInt(h[1]));
        String twice = null;
        for (String same : sameServer(h[0], Integer.parseInt(h[1]))) {
          String before = spelledFirst.putIfAbsent(same, spelled);
          if (before != null && twice == null) {
            twice =
                before.equalsIgnoreCase(spelled)
                    ? spelled + " twice"
                    : "one server twice: " + before + " and " + spelled + " are both " + same;
          }
        }
        if (twice != null) {
          config.problem(
              "`uri` was '"
                  + uri
                  + "' but it names "
                  + twice
                  + "; every server must be a different, independent one, or it would be counted"
                  + " twice toward a majority");
        } else {
          hosts.add(h);
        }
      }
    }
    if (hosts.isEmpty()) {
      hosts.add(new String[] {"localhost", Integer.toString(DEFAULT_PORT)});
    }
    return readAll(config, hosts, uri.path());
  }

  private static List<RedisSettings> readAll(
      BackendConfig config, List<String[]> hosts, String path) {
    LockUri uri = config.uri();
    String shown = LockUri.redact(uri.withoutQuery());
    String example =
        uri.scheme()
            + (uri.scheme().endsWith("-sentinel")
                ? "://s1:26379,s2:26379/mymaster/0"
                : hosts.size() > 1 ? "://h1:6379,h2:6379,h3:6379/0" : "://localhost:6379/0");
    int database = 0;
    Integer fromPath = null;
    if (!path.isEmpty() && !path.equals("/")) {
      String db = path.substring(1);
      try {
        fromPath = Integer.parseInt(db);
      } catch (NumberFormatException e) {
        fromPath = -1;
      }
      if (fromPath < 0 || fromPath > 9999 || !db.matches("\\d+")) {
        config.problem(
            "`database` was '"
                + db
                + "' (the path of uri '"
                + uri
                + "') but it must be a database number from 0 to 9999, such as "
                + example);
        fromPath = null;
      } else {
        database = fromPath;
      }
    }
    if (config.options().containsKey(DATABASE)) {
      int fromOption = config.integer(DATABASE, database, 0, 9999);
      if (fromPath != null && fromOption != fromPath) {
        config.problem(
            DATABASE,
            config.options().get(DATABASE),
            "the uri's path already selects database " + fromPath + "; give the database once");
      }
      database = fromOption;
    }

    String user = config.string(USER, uri.user());
    String password = config.string(PASSWORD, uri.password());
    if (user != null && password == null) {
      config.problem(
          "`"
              + USER
              + "` was '"
              + user
              + "' but a user needs a password: "
              + uri.scheme()
              + "://user:password@host:port");
    }
    if (password != null && password.isEmpty()) {
      config.problem(
          PASSWORD, "", "it must not be empty; leave it out when the server needs no password");
    }

    boolean tlsByScheme = uri.scheme().startsWith("rediss");
    boolean tls = config.bool(TLS, tlsByScheme);
    if (config.options().containsKey(TLS) && tlsByScheme && !tls) {
      config.problem(
          TLS,
          config.options().get(TLS),
          "the scheme "
              + uri.scheme()
              + ":// always uses TLS; use "
              + uri.scheme().replace("rediss", "redis")
              + ":// for a plain connection");
    }

    String namespace = config.string(NAMESPACE, DEFAULT_NAMESPACE);
    if (!NAMESPACE_TEXT.matcher(namespace).matches()) {
      config.problem(
          NAMESPACE,
          namespace,
          "it must be 1 to 64 printable ASCII characters without spaces, '{' or '}', such as "
              + DEFAULT_NAMESPACE);
      namespace = DEFAULT_NAMESPACE;
    }
    Duration connectTimeout =
        config.duration(
            CONNECT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, Duration.ofMillis(10), Duration.ofMinutes(5));
    Duration commandTimeout =
        config.duration(
            COMMAND_TIMEOUT, DEFAULT_COMMAND_TIMEOUT, Duration.ofMillis(10), Duration.ofMinutes(5));
    int poolSize = config.integer(POOL_SIZE, DEFAULT_POOL_SIZE, 1, 1024);
    List<RedisSettings> all = new ArrayList<>(hosts.size());
    for (String[] h : hosts) {
      all.add(
          new RedisSettings(
              h[0],
              Integer.parseInt(h[1]),
              user,
              password,
              database,
              tls,
              namespace,
              connectTimeout,
              commandTimeout,
              poolSize,
              shown));
    }
    return all;
  }

  /**
   * The spellings of one server: host:port as written, and the address:port it stands for when that
   * is known without asking DNS (an IP literal, or a loopback name such as localhost), so that
   * 127.0.0.1:6379 and localhost:6379 are seen to be one server.
   */
  private static Set<String> sameServer(String host, int port) {
    Set<String> all = new LinkedHashSet<>();
    String h = host.toLowerCase(Locale.ROOT);
    all.add(endpoint(h, port));
    boolean literal = h.indexOf(':') >= 0 || h.matches("\\d{1,3}(\\.\\d{1,3}){3}");
    if (literal || h.equals("localhost") || h.endsWith(".localhost")) {
      try {
        for (InetAddress a : InetAddress.getAllByName(h)) {
          all.add(endpoint(a.getHostAddress(), port));
        }
      } catch (UnknownHostException e) {
        // not resolvable here: compared as written; connecting reports it
      }
    }
    return all;
  }

  private static String endpoint(String host, int port) {
    return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
  }

  /**
   * @return the host name or address
   */
  public String host() {
    return host;
  }

  /**
   * @return the port
   */
  public int port() {
    return port;
  }

  /**
   * @return the ACL user, or null
   */
  public String user() {
    return user;
  }

  /**
   * @return the password, or null; never log it
   */
  public String password() {
    return password;
  }

  /**
   * @return the database number
   */
  public int database() {
    return database;
  }

  /**
   * @return whether the connection uses TLS
   */
  public boolean tls() {
    return tls;
  }

  /**
   * @return the prefix of every key and channel
   */
  public String namespace() {
    return namespace;
  }

  /**
   * @return the bound on connecting, the TLS handshake and the check at connect
   */
  public Duration connectTimeout() {
    return connectTimeout;
  }

  /**
   * @return the bound on every command, and on waiting for a pooled connection
   */
  public Duration commandTimeout() {
    return commandTimeout;
  }

  /**
   * @return the most pooled connections
   */
  public int poolSize() {
    return poolSize;
  }

  /**
   * @return {@code host:port}, for messages
   */
  public String endpoint() {
    return endpoint(host, port);
  }

  /**
   * @return how the servers are arranged
   */
  public Topology topology() {
    return topology;
  }

  /**
   * @return the replicas that must acknowledge a grant (WAIT), 0 for none
   */
  public int waitReplicas() {
    return waitReplicas;
  }

  /**
   * @return how long a grant waits for {@link #waitReplicas()} acknowledgements
   */
  public Duration waitTimeout() {
    return waitTimeout;
  }

  /**
   * @return the Sentinel master name, or null
   */
  public String masterName() {
    return masterName;
  }

  /**
   * @return the Sentinels or seed nodes, for messages: {@code h1:p1,h2:p2} (empty for one server)
   */
  public String seedList() {
    StringBuilder b = new StringBuilder();
    for (String[] h : seeds) {
      b.append(b.length() == 0 ? "" : ",").append(endpoint(h[0], Integer.parseInt(h[1])));
    }
    return b.toString();
  }

  /**
   * @param nodeHost a data node found through the Sentinels or the Cluster
   * @param nodePort its port
   * @return these settings for that one node (for its check at connect and its messages)
   */
  RedisSettings at(String nodeHost, int nodePort) {
    RedisSettings s =
        new RedisSettings(
            nodeHost,
            nodePort,
            user,
            password,
            database,
            tls,
            namespace,
            connectTimeout,
            commandTimeout,
            poolSize,
            shownUri);
    s.topology = topology;
    s.seeds = seeds;
    s.masterName = masterName;
    s.sentinelUser = sentinelUser;
    s.sentinelPassword = sentinelPassword;
    s.waitReplicas = waitReplicas;
    s.waitTimeout = waitTimeout;
    s.located = true;
    return s;
  }

  /**
   * @return the URI without its query, password redacted
   */
  @Override
  public String toString() {
    return shownUri;
  }
}
