package dev.locksmith.redis.internal;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockException;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockUri;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.Predicate;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.Response;
import redis.clients.jedis.SslOptions;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisNoScriptException;
import redis.clients.jedis.exceptions.JedisRedirectionException;
import redis.clients.jedis.providers.ClusterConnectionProvider;
import redis.clients.jedis.providers.SentineledConnectionProvider;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Internal: for lock-redlock, not for applications; may change.
 *
 * <p>One Redis server: a bounded pool of connections, every call bounded by the command timeout,
 * scripts run by SHA with a fallback to their text, and Jedis failures turned into {@link
 * BackendUnavailableException}s that name the server (password redacted). Counts the round trips it
 * makes, so tests can check the protocol's cost.
 */
public final class RedisNode implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RedisNode.class);

  private final RedisSettings settings;
  private final JedisClientConfig clientConfig;
  private final Servers servers;
  private final int commandTimeoutMillis;
  private final LongAdder roundTrips = new LongAdder();

  private RedisNode(RedisSettings settings, JedisClientConfig clientConfig, Servers servers) {
    this.settings = settings;
    this.clientConfig = clientConfig;
    this.servers = servers;
    this.commandTimeoutMillis = millis(settings.commandTimeout);
  }

  /**
   * @param settings the URI's settings: one server, a Sentinel set or a Cluster
   * @return the node, connected and checked
   * @throws BackendUnavailableException if the servers cannot be used
   */
  public static RedisNode openAny(RedisSettings settings) {
    switch (settings.topology) {
      case SENTINEL:
        return openSentinel(settings);
      case CLUSTER:
        return openCluster(settings);
      default:
        return open(settings);
    }
  }

  private static RedisNode openSentinel(RedisSettings settings) {
    JedisClientConfig clientConfig = clientConfig(settings, millis(settings.commandTimeout), true);
    DefaultJedisClientConfig.Builder sb =
        DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis(millis(settings.connectTimeout))
            .socketTimeoutMillis(millis(settings.connectTimeout))
            .clientName("locksmith-sentinel");
    if (settings.tls) {
      sb.sslOptions(SslOptions.defaults());
    }
    if (settings.sentinelPassword != null) {
      sb.user(settings.sentinelUser).password(settings.sentinelPassword);
    }
    Set<HostAndPort> sentinels = new LinkedHashSet<>();
    for (String[] h : settings.seeds) {
      sentinels.add(new HostAndPort(h[0], Integer.parseInt(h[1])));
    }
    SentineledConnectionProvider provider;
    try {
      provider =
          new SentineledConnectionProvider(
              settings.masterName, clientConfig, poolConfig(settings), sentinels, sb.build());
    } catch (JedisException e) {
      throw sentinelsUnavailable(settings, e);
    }
    try {
      HostAndPort master = provider.getCurrentMaster();
      probe(settings.at(master.getHost(), master.getPort()));
      return new RedisNode(settings, clientConfig, new SentinelServers(provider, clientConfig));
    } catch (RuntimeException e) {
      provider.close();
      throw e;
    }
  }

  private static BackendUnavailableException sentinelsUnavailable(
      RedisSettings s, JedisException e) {
    String msg = String.valueOf(e.getMessage());
    String why;
    if (msg.contains("seems to be not monitored")) {
      why =
          "answered, but none of them monitors a master named '"
              + s.masterName
              + "': check the master name after the hosts (SENTINEL MASTERS lists the names)";
    } else if (msg.contains("All sentinels down")) {
      why =
          "could not be used (each tried within the connect timeout of "
              + Durations.format(s.connectTimeout)
              + "): are they Redis Sentinels (redis-server --sentinel) listening there, and are"
              + " `sentinel-user` and `sentinel-password` right?";
    } else {
      why = "could not be used: " + LockUri.redact(msg);
    }
    return new BackendUnavailableException(
        "Redis Sentinels "
            + s.seedList()
            + " ("
            + s.shownUri
            + ") "
            + why
            + " [while asking for the address of master '"
            + s.masterName
            + "']",
        e);
  }

  private static RedisNode openCluster(RedisSettings settings) {
    JedisClientConfig clientConfig = clientConfig(settings, millis(settings.commandTimeout), true);
    Set<HostAndPort> seeds = new LinkedHashSet<>();
    for (String[] h : settings.seeds) {
      seeds.add(new HostAndPort(h[0], Integer.parseInt(h[1])));
    }
    // every seed is probed first (PING, credentials, SCRIPT LOAD within the connect timeout), so a
    // seed that is no Redis, refuses our password or does not answer is named in the failure
    RuntimeException firstFailure = null;
    for (HostAndPort seed : seeds) {
      try {
        probe(settings.at(seed.getHost(), seed.getPort()));
        firstFailure = null;
        break;
      } catch (RuntimeException e) {
        if (firstFailure == null) {
          firstFailure = e;
        }
      }
    }
    if (firstFailure != null) {
      throw firstFailure;
    }
    ClusterConnectionProvider provider;
    try {
      provider = new ClusterConnectionProvider(seeds, clientConfig, poolConfig(settings));
    } catch (JedisException e) {
      throw new BackendUnavailableException(
          "Redis Cluster "
              + settings.seedList()
              + " ("
              + settings.shownUri
              + ") could not be used: "
              + e.getMessage()
              + "; are these nodes of a Redis Cluster (cluster-enabled yes, CLUSTER INFO says"
              + " cluster_state:ok)? For one server use redis://, for a Sentinel set"
              + " redis-sentinel:// [while reading the slot map]",
          e);
    }
    try {
      for (String primary : provider.getPrimaryNodes().keySet()) {
        HostAndPort hp = HostAndPort.from(primary);
        probe(settings.at(hp.getHost(), hp.getPort()));
      }
      return new RedisNode(settings, clientConfig, new ClusterServers(provider, clientConfig));
    } catch (RuntimeException e) {
      provider.close();
      throw e;
    }
  }

  private static ConnectionPoolConfig poolConfig(RedisSettings settings) {
    ConnectionPoolConfig poolConfig = new ConnectionPoolConfig();
    poolConfig.setMaxTotal(settings.poolSize);
    poolConfig.setMaxIdle(settings.poolSize);
    poolConfig.setMinIdle(0);
    poolConfig.setBlockWhenExhausted(true);
    poolConfig.setMaxWait(settings.commandTimeout);
    poolConfig.setTestOnBorrow(false); // a PING per borrow would double every round trip
    poolConfig.setTestWhileIdle(true);
    poolConfig.setJmxEnabled(false);
    return poolConfig;
  }

  /**
   * Where a command goes: the one server, the Sentinels' current primary, or the primary of a key's
   * slot.
   */
  private interface Servers {
    /**
     * @param key a key of the command (it picks the Cluster slot), or null
     */
    Connection connection(String key);

    /** Forgets what may be stale after a failure: idle connections, the slot map. */
    void refresh();

    /**
     * @return the server a key's commands go to now
     */
    HostAndPort serverOf(String key);

    void close();
  }

  private static final class OneServer implements Servers {
    private final HostAndPort address;
    private final ConnectionPool pool;

    OneServer(HostAndPort address, ConnectionPool pool) {
      this.address = address;
      this.pool = pool;
    }

    @Override
    public Connection connection(String key) {
      return pool.getResource();
    }

    @Override
    public void refresh() {
      pool.clear();
    }

    @Override
    public HostAndPort serverOf(String key) {
      return address;
    }

    @Override
    public void close() {
      pool.close();
    }
  }

  private static final class SentinelServers implements Servers {
    private final SentineledConnectionProvider provider;

    SentinelServers(SentineledConnectionProvider provider, JedisClientConfig config) {
      this.provider = provider;
    }

    @Override
    public Connection connection(String key) {
      return provider.getConnection();
    }

    @Override
    public void refresh() {
      // the provider switches its pool when a Sentinel announces +switch-master; idle
      // connections to the old primary are dropped by their failure
    }

    @Override
    public HostAndPort serverOf(String key) {
      return provider.getCurrentMaster();
    }

    @Override
    public void close() {
      provider.close();
    }
  }

  private static final class ClusterServers implements Servers {
    private final ClusterConnectionProvider provider;

    ClusterServers(ClusterConnectionProvider provider, JedisClientConfig config) {
      this.provider = provider;
    }

    @Override
    public Connection connection(String key) {
      return key == null
          ? provider.getConnection()
          : provider.getConnectionFromSlot(JedisClusterCRC16.getSlot(key));
    }

    @Override
    public void refresh() {
      try {
        provider.renewSlotCache();
      } catch (RuntimeException e) {
        LOG.debug("renewing the Cluster slot map failed: {}", e.toString());
      }
    }

    @Override
    public HostAndPort serverOf(String key) {
      HostAndPort hp = provider.getNode(JedisClusterCRC16.getSlot(key));
      if (hp == null) {
        refresh();
        hp = provider.getNode(JedisClusterCRC16.getSlot(key));
      }
      return hp;
    }

    @Override
    public void close() {
      provider.close();
    }
  }

  /**
   * Connects and proves the server is a Redis that accepts our credentials and database: PING and
   * SCRIPT LOAD on a first connection, bounded by the connect timeout. Nothing is left open on
   * failure.
   *
   * @param settings the server and options
   * @return the node
   * @throws BackendUnavailableException naming host:port if it cannot be used
   */
  public static RedisNode open(RedisSettings settings) {
    probe(settings);
    return create(settings);
  }

  /**
   * Makes a node without connecting: its pool connects on first use. For a server that may be down
   * now and come back later (one of several Redlock servers); {@link #probe} it first.
   *
   * @param settings the server and options
   * @return the node
   */
  public static RedisNode create(RedisSettings settings) {
    HostAndPort address = new HostAndPort(settings.host, settings.port);
    JedisClientConfig clientConfig = clientConfig(settings, millis(settings.commandTimeout), true);
    ConnectionPool pool = new ConnectionPool(address, clientConfig, poolConfig(settings));
    return new RedisNode(settings, clientConfig, new OneServer(address, pool));
  }

  /**
   * Proves the server is a Redis that accepts our credentials and database: PING and SCRIPT LOAD on
   * a connection of its own, bounded by the connect timeout, closed afterwards.
   *
   * @param settings the server and options
   * @throws BackendUnavailableException naming host:port if it cannot be used
   */
  public static void probe(RedisSettings settings) {
    // one deadline for the TCP connect, the TLS handshake, the hello and each reply below
    DeadlineSocketFactory sockets = new DeadlineSocketFactory(settings);
    JedisClientConfig probeConfig = clientConfig(settings, millis(settings.connectTimeout), false);
    try (Connection probe = new Connection(sockets, probeConfig)) {
      probe.setSoTimeout(sockets.remainingMillis());
      Object pong = probe.executeCommand(new CommandArguments(Protocol.Command.PING));
      String shown =
          pong instanceof byte[]
              ? new String((byte[]) pong, StandardCharsets.UTF_8)
              : String.valueOf(pong);
      if (!"PONG".equals(shown)) {
        throw new BackendUnavailableException(
            describe(settings)
                + " answered PING with '"
                + shown
                + "', not PONG: is it a Redis server?");
      }
      Pipeline p = new Pipeline(probe);
      List<Response<Object>> shas = new ArrayList<>();
      for (RedisScripts.Script s : RedisScripts.ALL) {
        shas.add(p.sendCommand(Protocol.Command.SCRIPT, "LOAD", s.text));
      }
      probe.setSoTimeout(sockets.remainingMillis());
      p.sync();
      for (int i = 0; i < shas.size(); i++) {
        Object sha = shas.get(i).get();
        if (!RedisScripts.ALL[i].sha.equals(
            sha instanceof byte[] ? new String((byte[]) sha, StandardCharsets.UTF_8) : sha)) {
          throw new BackendUnavailableException(
              describe(settings)
                  + " loaded the "
                  + RedisScripts.ALL[i]
                  + " script under SHA "
                  + shas.get(i).get()
                  + " instead of "
                  + RedisScripts.ALL[i].sha);
        }
      }
    } catch (JedisException e) {
      throw unavailable(settings, "connecting", e, settings.connectTimeout);
    }
  }

  /**
   * @param jedisTls whether Jedis opens the TLS layer itself (not when a {@link
   *     DeadlineSocketFactory} does)
   */
  private static JedisClientConfig clientConfig(
      RedisSettings s, int socketTimeoutMillis, boolean jedisTls) {
    DefaultJedisClientConfig.Builder b =
        DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis(millis(s.connectTimeout))
            .socketTimeoutMillis(socketTimeoutMillis)
            .database(s.database)
            .clientName("locksmith");
    if (s.tls && jedisTls) {
      b.sslOptions(SslOptions.defaults());
    }
    if (s.password != null) {
      b.user(s.user).password(s.password);
    }
    return b.build();
  }

  private static int millis(Duration d) {
    return (int) Math.min(Integer.MAX_VALUE, Math.max(1, d.toMillis()));
  }

  /**
   * @return how many round trips this node has made: one per command, one per pipeline
   */
  public long roundTrips() {
    return roundTrips.sum();
  }

  /**
   * @return the server and options
   */
  public RedisSettings settings() {
    return settings;
  }

  /**
   * @return {@code host:port} of one server; for a Sentinel set or a Cluster, what the URI names
   *     ({@code primary of 'mymaster' via Sentinels h1:p1,h2:p2}, {@code Cluster h1:p1,h2:p2})
   */
  public String endpoint() {
    switch (settings.topology) {
      case SENTINEL:
        return "primary of '" + settings.masterName + "' via Sentinels " + settings.seedList();
      case CLUSTER:
        return "Cluster " + settings.seedList();
      default:
        return settings.endpoint();
    }
  }

  /**
   * @param key a key
   * @return {@code host:port} of the server that holds it now (the current primary, or the primary
   *     of its Cluster slot)
   */
  public String serverOf(String key) {
    HostAndPort hp = servers.serverOf(key);
    return hp == null ? endpoint() : hp.toString();
  }

  /**
   * @return whether this is a Redis Cluster (release notifications then use sharded pub/sub)
   */
  public boolean isCluster() {
    return settings.topology == RedisSettings.Topology.CLUSTER;
  }

  /**
   * Runs a script in one round trip (two if the server lost its script cache, as after a restart).
   *
   * @param script the script
   * @param keys its KEYS
   * @param args its ARGV
   * @return the script's reply
   * @throws BackendUnavailableException if the server cannot be reached or answers with an error
   * @throws LockException if the reply says another program uses our keys (WRONGTYPE)
   */
  public Object eval(RedisScripts.Script script, List<String> keys, List<String> args) {
    return eval(script, keys, args, settings.commandTimeout);
  }

  /**
   * Runs a script like {@link #eval(RedisScripts.Script, List, List)}, waiting at most {@code
   * timeout} (and never longer than the command timeout) for the reply. A reply that is late breaks
   * the connection, which the pool then drops.
   *
   * @param script the script
   * @param keys its KEYS
   * @param args its ARGV
   * @param timeout the longest wait for the reply
   * @return the script's reply
   * @throws BackendUnavailableException if the server cannot be reached, answers late or with an
   *     error
   */
  public Object eval(
      RedisScripts.Script script, List<String> keys, List<String> args, Duration timeout) {
    int timeoutMillis = Math.min(commandTimeoutMillis, millis(timeout));
    return call(
        script.name,
        keys.isEmpty() ? null : keys.get(0),
        connection -> {
          if (timeoutMillis != commandTimeoutMillis) {
            connection.setSoTimeout(timeoutMillis);
          }
          try {
            try {
              return connection.executeCommand(
                  scriptCall(Protocol.Command.EVALSHA, script.sha, keys, args));
            } catch (JedisNoScriptException e) {
              roundTrips.increment();
              return connection.executeCommand(
                  scriptCall(Protocol.Command.EVAL, script.text, keys, args));
            }
          } finally {
            if (timeoutMillis != commandTimeoutMillis && !connection.isBroken()) {
              connection.setSoTimeout(commandTimeoutMillis);
            }
          }
        },
        Duration.ofMillis(timeoutMillis));
  }

  private static CommandArguments scriptCall(
      Protocol.Command command, String script, List<String> keys, List<String> args) {
    return new CommandArguments(command).add(script).add(keys.size()).keys(keys).addObjects(args);
  }

  /**
   * Runs a script like {@link #eval(RedisScripts.Script, List, List)} and, if {@code wrote} says
   * its reply is a write that must be replicated (a grant), then sends {@code WAIT replicas
   * timeout} on the same connection: the second round trip waits until that many replicas
   * acknowledged everything this connection wrote, or the timeout passed.
   *
   * @param script the script
   * @param keys its KEYS
   * @param args its ARGV
   * @param wrote whether a reply needs the replicas' acknowledgement
   * @return the script's reply and, if WAIT was sent, how many replicas acknowledged (else -1)
   * @throws BackendUnavailableException if the server cannot be reached or answers with an error
   */
  public Replicated evalReplicated(
      RedisScripts.Script script, List<String> keys, List<String> args, Predicate<Object> wrote) {
    int waitMillis = millis(settings.waitTimeout);
    return call(
        script.name,
        keys.isEmpty() ? null : keys.get(0),
        connection -> {
          Object reply;
          try {
            reply =
                connection.executeCommand(
                    scriptCall(Protocol.Command.EVALSHA, script.sha, keys, args));
          } catch (JedisNoScriptException e) {
            roundTrips.increment();
            reply =
                connection.executeCommand(
                    scriptCall(Protocol.Command.EVAL, script.text, keys, args));
          }
          if (settings.waitReplicas <= 0 || !wrote.test(reply)) {
            return new Replicated(reply, -1);
          }
          roundTrips.increment();
          connection.setSoTimeout(
              (int) Math.min(Integer.MAX_VALUE, (long) commandTimeoutMillis + waitMillis));
          try {
            Object acked =
                connection.executeCommand(
                    new CommandArguments(Protocol.Command.WAIT)
                        .add(settings.waitReplicas)
                        .add(waitMillis));
            return new Replicated(reply, acked instanceof Long ? (Long) acked : 0);
          } finally {
            if (!connection.isBroken()) {
              connection.setSoTimeout(commandTimeoutMillis);
            }
          }
        },
        settings.commandTimeout.plus(settings.waitTimeout));
  }

  /** Internal: a script's reply and how many replicas acknowledged it (-1: not asked). */
  public static final class Replicated {
    /** The script's reply. */
    public final Object reply;

    /**
     * How many replicas acknowledged the write within the wait timeout; -1 if WAIT was not sent.
     */
    public final long acknowledged;

    Replicated(Object reply, long acknowledged) {
      this.reply = reply;
      this.acknowledged = acknowledged;
    }
  }

  /**
   * Runs one script for many key sets, pipelined: one round trip per {@code chunk} calls to each
   * server (on a Cluster the calls are grouped by the primary that owns their first key's slot).
   * Each pipeline starts with SCRIPT LOAD, so a server that lost its script cache still answers in
   * the same round trip. A chunk that fails to reach its server fails the rest of that server's
   * calls at once. A call answered with a Cluster redirection (the slot moved) is sent again once,
   * alone, after the slot map is read again.
   *
   * @param script the script
   * @param keys the KEYS of each call
   * @param args the ARGV of each call
   * @param chunk calls per pipeline
   * @param timeout the read timeout for each pipeline, at most the command timeout
   * @return one reply per call: a Long, or the {@link RuntimeException} that call met
   */
  public List<Object> evalMany(
      RedisScripts.Script script,
      List<List<String>> keys,
      List<List<String>> args,
      int chunk,
      Duration timeout) {
    Object[] out = new Object[keys.size()];
    Map<HostAndPort, List<Integer>> byServer = new LinkedHashMap<>();
    if (settings.topology == RedisSettings.Topology.CLUSTER) {
      for (int i = 0; i < keys.size(); i++) {
        HostAndPort server = servers.serverOf(keys.get(i).get(0));
        byServer.computeIfAbsent(server, k -> new ArrayList<>()).add(i);
      }
    } else {
      List<Integer> all = new ArrayList<>(keys.size());
      for (int i = 0; i < keys.size(); i++) {
        all.add(i);
      }
      byServer.put(null, all);
    }
    int timeoutMillis = Math.min(commandTimeoutMillis, millis(timeout));
    List<Integer> redirected = new ArrayList<>();
    for (List<Integer> group : byServer.values()) {
      RuntimeException unreachable = null;
      for (int from = 0; from < group.size(); from += chunk) {
        List<Integer> part = group.subList(from, Math.min(group.size(), from + chunk));
        if (unreachable != null) {
          for (int i : part) {
            out[i] = unreachable;
          }
          continue;
        }
        try {
          List<Object> results =
              call(
                  script.name + " x" + part.size(),
                  keys.get(part.get(0)).get(0),
                  connection -> {
                    connection.setSoTimeout(timeoutMillis);
                    try {
                      Pipeline p = new Pipeline(connection);
                      p.sendCommand(Protocol.Command.SCRIPT, "LOAD", script.text);
                      List<Response<Object>> replies = new ArrayList<>(part.size());
                      for (int i : part) {
                        replies.add(p.evalsha(script.sha, keys.get(i), args.get(i)));
                      }
                      p.sync();
                      List<Object> got = new ArrayList<>(replies.size());
                      for (Response<Object> r : replies) {
                        try {
                          got.add(r.get());
                        } catch (JedisRedirectionException e) {
                          got.add(e);
                        } catch (JedisDataException e) {
                          got.add(
                              new LockException(
                                  describe(settings)
                                      + " refused "
                                      + script.name
                                      + ": "
                                      + e.getMessage(),
                                  e));
                        }
                      }
                      return got;
                    } finally {
                      if (!connection.isBroken()) {
                        connection.setSoTimeout(commandTimeoutMillis);
                      }
                    }
                  },
                  Duration.ofMillis(timeoutMillis));
          for (int j = 0; j < part.size(); j++) {
            Object r = results.get(j);
            if (r instanceof JedisRedirectionException) {
              redirected.add(part.get(j));
            } else {
              out[part.get(j)] = r;
            }
          }
        } catch (RuntimeException e) {
          unreachable = e;
          for (int i : part) {
            out[i] = e;
          }
        }
      }
    }
    if (!redirected.isEmpty()) {
      servers.refresh();
      for (int i : redirected) {
        try {
          out[i] = eval(script, keys.get(i), args.get(i), Duration.ofMillis(timeoutMillis));
        } catch (RuntimeException e) {
          out[i] = e;
        }
      }
    }
    return java.util.Arrays.asList(out);
  }

  /**
   * Borrows a connection, runs one round trip on it and gives it back. A connection that broke
   * without a timeout (reset, closed: the server restarted since it was pooled) is thrown away with
   * every other idle one, and the call is retried once on a fresh connection; every call made
   * through here is safe to repeat. On a Cluster, a redirection (MOVED, ASK: the slot has another
   * owner since the slot map was read) reads the slot map again and retries once.
   */
  /**
   * One SCAN step on the server (a single server, or a Sentinel-managed primary; not a Cluster,
   * whose keys are spread over many).
   *
   * @param cursor SCAN's cursor, "0" for the first step
   * @param pattern the MATCH pattern
   * @param count the COUNT hint
   * @return the next cursor ("0" after the last step) and the keys this step found
   * @throws BackendUnavailableException if the server cannot be reached or answers with an error
   */
  public Map.Entry<String, List<String>> scan(String cursor, String pattern, int count) {
    if (isCluster()) {
      throw new UnsupportedOperationException("SCAN across a Redis Cluster is not supported");
    }
    return call(
        "scan",
        connection -> {
          List<?> reply =
              (List<?>)
                  connection.executeCommand(
                      new CommandArguments(Protocol.Command.SCAN)
                          .add(cursor)
                          .add("MATCH")
                          .add(pattern)
                          .add("COUNT")
                          .add(count));
          List<String> found = new ArrayList<>();
          for (Object k : (List<?>) reply.get(1)) {
            found.add(new String((byte[]) k, java.nio.charset.StandardCharsets.UTF_8));
          }
          return Map.entry(
              new String((byte[]) reply.get(0), java.nio.charset.StandardCharsets.UTF_8), found);
        });
  }

  <T> T call(String what, Function<Connection, T> action) {
    return call(what, null, action, settings.commandTimeout);
  }

  private <T> T call(String what, String key, Function<Connection, T> action, Duration timeout) {
    for (int attempt = 0; ; attempt++) {
      Connection connection;
      try {
        connection = servers.connection(key);
      } catch (JedisException e) {
        throw unavailable(settings, what, e, settings.commandTimeout);
      } catch (RuntimeException e) {
        throw unavailable(settings, what, e, settings.commandTimeout);
      }
      try {
        roundTrips.increment();
        return action.apply(connection);
      } catch (JedisConnectionException e) {
        if (attempt == 0 && !isTimeout(e)) {
          LOG.debug(
              "{}: {} failed on a pooled connection ({}); retrying on a fresh one",
              endpoint(),
              what,
              e.toString());
          connection.close(); // broken: the pool destroys it
          connection = null;
          servers.refresh();
          continue;
        }
        throw unavailable(settings, what, e, timeout);
      } catch (JedisRedirectionException e) {
        if (attempt == 0) {
          LOG.debug(
              "{}: {} was redirected ({}); reading the slot map again",
              endpoint(),
              what,
              e.getMessage());
          servers.refresh();
          continue;
        }
        throw unavailable(settings, what, e, timeout);
      } catch (JedisDataException e) {
        if (String.valueOf(e.getMessage()).startsWith("WRONGTYPE")) {
          // the server is fine, but something other than Locksmith wrote our key
          throw new LockException(
              describe(settings)
                  + " refused "
                  + what
                  + ": "
                  + e.getMessage()
                  + "; another program uses the same keys: choose another `namespace`",
              e);
        }
        if (attempt == 0 && String.valueOf(e.getMessage()).startsWith("READONLY")) {
          // a primary demoted by a failover: ask the Sentinels' (or the slot map's) new primary
          servers.refresh();
          continue;
        }
        throw unavailable(settings, what, e, timeout); // NOAUTH, LOADING, BUSY, READONLY, …
      } catch (JedisException e) {
        throw unavailable(settings, what, e, settings.commandTimeout);
      } finally {
        if (connection != null) {
          connection.close(); // back to the pool, or destroyed if broken
        }
      }
    }
  }

  /**
   * @return a new connection outside the pool, for a long-lived subscription (to the current
   *     primary of a Sentinel set)
   * @throws BackendUnavailableException if it cannot be opened
   */
  Connection dedicatedConnection() {
    return dedicatedConnection(null);
  }

  /**
   * @param channel a channel, whose Cluster slot picks the server; null for one server or a
   *     Sentinel set
   * @return a new connection outside the pool to the server that holds the channel's slot now
   * @throws BackendUnavailableException if it cannot be opened
   */
  Connection dedicatedConnection(String channel) {
    try {
      HostAndPort address =
          settings.topology == RedisSettings.Topology.CLUSTER && channel != null
              ? servers.serverOf(channel)
              : servers.serverOf(null);
      return new Connection(address, clientConfig);
    } catch (JedisException e) {
      if (settings.topology == RedisSettings.Topology.CLUSTER) {
        servers
            .refresh(); // the slot's node may have failed over: look again before the next attempt
      }
      throw unavailable(settings, "opening the subscriber connection", e, settings.connectTimeout);
    }
  }

  private static boolean isTimeout(Throwable e) {
    for (Throwable t : causes(e)) {
      if (t instanceof SocketTimeoutException) {
        return true;
      }
    }
    return false;
  }

  /**
   * @return "redis server host:port (uri)" with the password redacted
   */
  static String describe(RedisSettings s) {
    if (s.topology == RedisSettings.Topology.SENTINEL) {
      return "Redis primary of '"
          + s.masterName
          + "'"
          + (s.located ? " at " + s.endpoint() : "")
          + " via Sentinels "
          + s.seedList()
          + " ("
          + s.shownUri
          + ")";
    }
    if (s.topology == RedisSettings.Topology.CLUSTER) {
      return "Redis Cluster "
          + (s.located ? "node " + s.endpoint() : s.seedList())
          + " ("
          + s.shownUri
          + ")";
    }
    return "Redis server " + s.endpoint() + " (" + s.shownUri + ")";
  }

  /**
   * Turns a Jedis failure into an exception that says which server, what failed and what to check.
   */
  static BackendUnavailableException unavailable(
      RedisSettings s, String what, Throwable e, Duration timeout) {
    String server = describe(s);
    String why = null;
    for (Throwable t : causes(e)) {
      if (why != null) {
        break;
      }
      if (t instanceof JedisAccessControlException
          || String.valueOf(t.getMessage()).startsWith("WRONGPASS")
          || String.valueOf(t.getMessage()).startsWith("NOAUTH")) {
        why =
            "refused our credentials (user "
                + (s.user == null ? "default" : "'" + s.user + "'")
                + ", password "
                + (s.password == null ? "none" : "****")
                + "): "
                + t.getMessage()
                + "; check the user and password in the URI";
      } else if (t instanceof JedisDataException
          && String.valueOf(t.getMessage()).contains("without any password configured")) {
        why =
            "needs no password but one was given: "
                + t.getMessage()
                + "; remove the password from the URI";
      } else if (t instanceof JedisDataException
          && String.valueOf(t.getMessage()).contains("DB index")) {
        why =
            "refused database "
                + s.database
                + ": "
                + t.getMessage()
                + "; use a database number below the server's `databases` setting";
      } else if (t instanceof ConnectException) {
        why =
            "refused the connection ("
                + t.getMessage()
                + "): is redis-server running on that host and port?";
      } else if (t instanceof UnknownHostException) {
        why = "cannot be found: unknown host '" + s.host + "'";
      } else if (t instanceof NoRouteToHostException) {
        why = "cannot be reached: no route to host";
      } else if (t instanceof SocketTimeoutException) {
        why = "did not answer within " + Durations.format(timeout) + " (" + t.getMessage() + ")";
      } else if (t instanceof SSLException) {
        why =
            "failed the TLS handshake ("
                + t.getMessage()
                + "): does the server speak TLS on this port, and does this JVM trust its"
                + " certificate?";
      } else if (t instanceof JedisConnectionException
          && String.valueOf(t.getMessage()).startsWith("Unknown reply")) {
        why =
            "answered with something that is not the Redis protocol ("
                + t.getMessage()
                + "): is this port a Redis server?";
      } else if (t instanceof JedisDataException) {
        why = "answered with an error: " + t.getMessage();
      }
    }
    if (why == null) {
      why = "could not be used: " + e;
      if (e instanceof JedisConnectionException && e.getCause() == null) {
        why += " (is this port a Redis server?)";
      }
    }
    if (s.tls && !why.contains("TLS")) {
      why += "; TLS is on (rediss:// or tls=true): does the server speak TLS on this port?";
    }
    return new BackendUnavailableException(server + " " + why + " [while " + what + "]", e);
  }

  /**
   * @return the failure, its causes and what was suppressed in them (Jedis keeps one per address
   *     tried there)
   */
  private static List<Throwable> causes(Throwable e) {
    List<Throwable> all = new ArrayList<>();
    java.util.ArrayDeque<Throwable> todo = new java.util.ArrayDeque<>();
    todo.add(e);
    while (!todo.isEmpty() && all.size() < 20) {
      Throwable t = todo.poll();
      if (all.stream().anyMatch(seen -> seen == t)) {
        continue;
      }
      all.add(t);
      if (t.getCause() != null) {
        todo.add(t.getCause());
      }
      todo.addAll(List.of(t.getSuppressed()));
    }
    return all;
  }

  /** Closes the pool and its connections. */
  @Override
  public void close() {
    servers.close();
  }

  /**
   * @return "Redis server host:port (uri)", password redacted
   */
  @Override
  public String toString() {
    return describe(settings);
  }
}
