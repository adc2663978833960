package dev.locksmith.redis.internal;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockException;
import dev.locksmith.spi.Durations;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
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

/**
 * Internal: for lock-redlock, not for applications; may change.
 *
 * <p>One Redis server: a bounded pool of connections, every call bounded by the command timeout,
 * scripts run by SHA with a fallback to their text, and Jedis failures turned into
 * {@link BackendUnavailableException}s that name the server (password redacted). Counts the round
 * trips it makes, so tests can check the protocol's cost.
 */
public final class RedisNode implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RedisNode.class);

  private final RedisSettings settings;
  private final HostAndPort address;
  private final JedisClientConfig clientConfig;
  private final ConnectionPool pool;
  private final int commandTimeoutMillis;
  private final LongAdder roundTrips = new LongAdder();

  private RedisNode(RedisSettings settings, HostAndPort address, JedisClientConfig clientConfig, ConnectionPool pool) {
    this.settings = settings;
    this.address = address;
    this.clientConfig = clientConfig;
    this.pool = pool;
    this.commandTimeoutMillis = millis(settings.commandTimeout);
  }

  /**
   * Connects and proves the server is a Redis that accepts our credentials and database: PING
   * and SCRIPT LOAD on a first connection, bounded by the connect timeout. Nothing is left open
   * on failure.
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
   * Makes a node without connecting: its pool connects on first use. For a server that may be
   * down now and come back later (one of several Redlock servers); {@link #probe} it first.
   *
   * @param settings the server and options
   * @return the node
   */
  public static RedisNode create(RedisSettings settings) {
    HostAndPort address = new HostAndPort(settings.host, settings.port);
    JedisClientConfig clientConfig = clientConfig(settings, millis(settings.commandTimeout), true);
    ConnectionPoolConfig poolConfig = new ConnectionPoolConfig();
    poolConfig.setMaxTotal(settings.poolSize);
    poolConfig.setMaxIdle(settings.poolSize);
    poolConfig.setMinIdle(0);
    poolConfig.setBlockWhenExhausted(true);
    poolConfig.setMaxWait(settings.commandTimeout);
    poolConfig.setTestOnBorrow(false); // a PING per borrow would double every round trip
    poolConfig.setTestWhileIdle(true);
    poolConfig.setJmxEnabled(false);
    ConnectionPool pool = new ConnectionPool(address, clientConfig, poolConfig);
    return new RedisNode(settings, address, clientConfig, pool);
  }

  /**
   * Proves the server is a Redis that accepts our credentials and database: PING and SCRIPT LOAD
   * on a connection of its own, bounded by the connect timeout, closed afterwards.
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
      String shown = pong instanceof byte[] ? new String((byte[]) pong, StandardCharsets.UTF_8) : String.valueOf(pong);
      if (!"PONG".equals(shown)) {
        throw new BackendUnavailableException(describe(settings) + " answered PING with '" + shown + "', not PONG: is it a Redis server?");
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
        if (!RedisScripts.ALL[i].sha.equals(sha instanceof byte[] ? new String((byte[]) sha, StandardCharsets.UTF_8) : sha)) {
          throw new BackendUnavailableException(describe(settings) + " loaded the " + RedisScripts.ALL[i]
              + " script under SHA " + shas.get(i).get() + " instead of " + RedisScripts.ALL[i].sha);
        }
      }
    } catch (JedisException e) {
      throw unavailable(settings, "connecting", e, settings.connectTimeout);
    }
  }

  /** @param jedisTls whether Jedis opens the TLS layer itself (not when a {@link DeadlineSocketFactory} does) */
  private static JedisClientConfig clientConfig(RedisSettings s, int socketTimeoutMillis, boolean jedisTls) {
    DefaultJedisClientConfig.Builder b = DefaultJedisClientConfig.builder()
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

  /** @return how many round trips this node has made: one per command, one per pipeline */
  public long roundTrips() {
    return roundTrips.sum();
  }

  /** @return the server and options */
  public RedisSettings settings() {
    return settings;
  }

  /** @return {@code host:port} */
  public String endpoint() {
    return settings.endpoint();
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
   * Runs a script like {@link #eval(RedisScripts.Script, List, List)}, waiting at most
   * {@code timeout} (and never longer than the command timeout) for the reply. A reply that is
   * late breaks the connection, which the pool then drops.
   *
   * @param script the script
   * @param keys its KEYS
   * @param args its ARGV
   * @param timeout the longest wait for the reply
   * @return the script's reply
   * @throws BackendUnavailableException if the server cannot be reached, answers late or with an error
   */
  public Object eval(RedisScripts.Script script, List<String> keys, List<String> args, Duration timeout) {
    int timeoutMillis = Math.min(commandTimeoutMillis, millis(timeout));
    return call(script.name, connection -> {
      if (timeoutMillis != commandTimeoutMillis) {
        connection.setSoTimeout(timeoutMillis);
      }
      try {
        try {
          return connection.executeCommand(scriptCall(Protocol.Command.EVALSHA, script.sha, keys, args));
        } catch (JedisNoScriptException e) {
          roundTrips.increment();
          return connection.executeCommand(scriptCall(Protocol.Command.EVAL, script.text, keys, args));
        }
      } finally {
        if (timeoutMillis != commandTimeoutMillis && !connection.isBroken()) {
          connection.setSoTimeout(commandTimeoutMillis);
        }
      }
    }, Duration.ofMillis(timeoutMillis));
  }

  private static CommandArguments scriptCall(Protocol.Command command, String script, List<String> keys, List<String> args) {
    return new CommandArguments(command).add(script).add(keys.size()).keys(keys).addObjects(args);
  }

  /**
   * Runs one script for many key sets, pipelined: one round trip per {@code chunk} calls. The
   * pipeline starts with SCRIPT LOAD, so a server that lost its script cache still answers in
   * the same round trip. A chunk that fails to reach the server fails the rest at once.
   *
   * @param script the script
   * @param keys the KEYS of each call
   * @param args the ARGV of each call
   * @param chunk calls per pipeline
   * @param timeout the read timeout for each pipeline, at most the command timeout
   * @return one reply per call: a Long, or the {@link RuntimeException} that call met
   */
  public List<Object> evalMany(RedisScripts.Script script, List<List<String>> keys, List<List<String>> args, int chunk, Duration timeout) {
    List<Object> out = new ArrayList<>(keys.size());
    int timeoutMillis = Math.min(commandTimeoutMillis, millis(timeout));
    RuntimeException unreachable = null;
    for (int from = 0; from < keys.size(); from += chunk) {
      int to = Math.min(keys.size(), from + chunk);
      if (unreachable != null) {
        for (int i = from; i < to; i++) {
          out.add(unreachable);
        }
        continue;
      }
      int start = from;
      try {
        out.addAll(call(script.name + " x" + (to - from), connection -> {
          connection.setSoTimeout(timeoutMillis);
          try {
            Pipeline p = new Pipeline(connection);
            p.sendCommand(Protocol.Command.SCRIPT, "LOAD", script.text);
            List<Response<Object>> replies = new ArrayList<>(to - start);
            for (int i = start; i < to; i++) {
              replies.add(p.evalsha(script.sha, keys.get(i), args.get(i)));
            }
            p.sync();
            List<Object> results = new ArrayList<>(replies.size());
            for (Response<Object> r : replies) {
              try {
                results.add(r.get());
              } catch (JedisDataException e) {
                results.add(new LockException(describe(settings) + " refused " + script.name + ": " + e.getMessage(), e));
              }
            }
            return results;
          } finally {
            if (!connection.isBroken()) {
              connection.setSoTimeout(commandTimeoutMillis);
            }
          }
        }, Duration.ofMillis(timeoutMillis)));
      } catch (RuntimeException e) {
        unreachable = e;
        for (int i = from; i < to; i++) {
          out.add(e);
        }
      }
    }
    return out;
  }

  /**
   * Borrows a connection, runs one round trip on it and gives it back. A connection that broke
   * without a timeout (reset, closed: the server restarted since it was pooled) is thrown away
   * with every other idle one, and the call is retried once on a fresh connection; every call
   * made through here is safe to repeat.
   */
  <T> T call(String what, Function<Connection, T> action) {
    return call(what, action, settings.commandTimeout);
  }

  private <T> T call(String what, Function<Connection, T> action, Duration timeout) {
    for (int attempt = 0; ; attempt++) {
      Connection connection;
      try {
        connection = pool.getResource();
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
          LOG.debug("{}: {} failed on a pooled connection ({}); retrying on a fresh one", endpoint(), what, e.toString());
          connection.close(); // broken: the pool destroys it
          connection = null;
          pool.clear();
          continue;
        }
        throw unavailable(settings, what, e, timeout);
      } catch (JedisDataException e) {
        if (String.valueOf(e.getMessage()).startsWith("WRONGTYPE")) {
          // the server is fine, but something other than Locksmith wrote our key
          throw new LockException(describe(settings) + " refused " + what + ": " + e.getMessage()
              + "; another program uses the same keys: choose another `namespace`", e);
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
   * @return a new connection outside the pool, for a long-lived subscription
   * @throws BackendUnavailableException if it cannot be opened
   */
  Connection dedicatedConnection() {
    try {
      return new Connection(address, clientConfig);
    } catch (JedisException e) {
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

  /** @return "redis server host:port (uri)" with the password redacted */
  static String describe(RedisSettings s) {
    return "Redis server " + s.endpoint() + " (" + s.shownUri + ")";
  }

  /** Turns a Jedis failure into an exception that says which server, what failed and what to check. */
  static BackendUnavailableException unavailable(RedisSettings s, String what, Throwable e, Duration timeout) {
    String server = describe(s);
    String why = null;
    for (Throwable t : causes(e)) {
      if (why != null) {
        break;
      }
      if (t instanceof JedisAccessControlException || String.valueOf(t.getMessage()).startsWith("WRONGPASS")
          || String.valueOf(t.getMessage()).startsWith("NOAUTH")) {
        why = "refused our credentials (user " + (s.user == null ? "default" : "'" + s.user + "'") + ", password "
            + (s.password == null ? "none" : "****") + "): " + t.getMessage()
            + "; check the user and password in the URI";
      } else if (t instanceof JedisDataException && String.valueOf(t.getMessage()).contains("without any password configured")) {
        why = "needs no password but one was given: " + t.getMessage() + "; remove the password from the URI";
      } else if (t instanceof JedisDataException && String.valueOf(t.getMessage()).contains("DB index")) {
        why = "refused database " + s.database + ": " + t.getMessage() + "; use a database number below the server's `databases` setting";
      } else if (t instanceof ConnectException) {
        why = "refused the connection (" + t.getMessage() + "): is redis-server running on that host and port?";
      } else if (t instanceof UnknownHostException) {
        why = "cannot be found: unknown host '" + s.host + "'";
      } else if (t instanceof NoRouteToHostException) {
        why = "cannot be reached: no route to host";
      } else if (t instanceof SocketTimeoutException) {
        why = "did not answer within " + Durations.format(timeout) + " (" + t.getMessage() + ")";
      } else if (t instanceof SSLException) {
        why = "failed the TLS handshake (" + t.getMessage() + "): does the server speak TLS on this port, and does this JVM trust its certificate?";
      } else if (t instanceof JedisConnectionException && String.valueOf(t.getMessage()).startsWith("Unknown reply")) {
        why = "answered with something that is not the Redis protocol (" + t.getMessage() + "): is this port a Redis server?";
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

  /** @return the failure, its causes and what was suppressed in them (Jedis keeps one per address tried there) */
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
    pool.close();
  }

  /** @return "Redis server host:port (uri)", password redacted */
  @Override
  public String toString() {
    return describe(settings);
  }
}
