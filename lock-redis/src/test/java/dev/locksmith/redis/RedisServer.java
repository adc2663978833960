package dev.locksmith.redis;

import dev.locksmith.tck.FakeClock;
import dev.locksmith.tck.ServerProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

/**
 * A real {@code redis-server} on a free loopback port, without persistence ({@code --save ""
 * --appendonly no}) unless started with {@link #startWithAof(String)}, that a test can pause
 * (SIGSTOP), resume, kill and restart on the same port. Shipped in lock-redis's test-jar so that
 * other modules' tests (lock-redlock) can start servers the same way.
 *
 * <pre>{@code
 * try (RedisServer redis = RedisServer.start("kit")) {
 *   LockClient client = Locks.connect(redis.uri());
 *   try (Jedis admin = redis.admin()) { admin.del("..."); }
 * }
 * }</pre>
 */
public final class RedisServer implements AutoCloseable {
  private final ServerProcess process;
  private final int port;
  private final String password;
  private final FakeClock clock;

  private RedisServer(ServerProcess process, int port, String password, FakeClock clock) {
    this.process = process;
    this.port = port;
    this.password = password;
    this.clock = clock;
  }

  /**
   * Starts a server without a password.
   *
   * @param name a short name for its log file and work directory
   * @return the running server
   */
  public static RedisServer start(String name) {
    return start(name, null);
  }

  /**
   * Starts a server.
   *
   * @param name a short name for its log file and work directory
   * @param password the password of the default user ({@code --requirepass}), or null for none
   * @return the running server
   * @throws IllegalStateException if redis-server is missing (a failure, never a skip) or does not
   *     start
   */
  public static RedisServer start(String name, String password) {
    return start(name, password, false, false);
  }

  /**
   * Starts a server without a password that persists every write before answering it ({@code
   * --appendonly yes --appendfsync always}), so that a kill and {@link #restart()} keep its keys
   * (with their expiry times) and counters.
   *
   * @param name a short name for its log file and work directory
   * @return the running server
   */
  public static RedisServer startWithAof(String name) {
    return start(name, null, true, false);
  }

  /**
   * Starts a server without a password or persistence with its wall clock shifted by {@link
   * FakeClock#shimIn} (libfaketime cannot start a redis-server built with jemalloc), which {@link
   * #jumpClock} moves forward: Redis expires keys by its wall clock.
   *
   * @param name a short name for its log file and work directory
   * @return the running server
   * @throws IllegalStateException if no C compiler is installed to build the shift
   */
  public static RedisServer startWithFakeClock(String name) {
    return start(name, null, false, true);
  }

  /**
   * Moves this server's wall clock forward (see {@link FakeClock}).
   *
   * @param jump how far
   * @throws UnsupportedOperationException if it was not started with {@link #startWithFakeClock}
   */
  public void jumpClock(java.time.Duration jump) {
    if (clock == null) {
      throw new UnsupportedOperationException("jumpServerClock");
    }
    clock.jump(jump);
  }

  private static RedisServer start(String name, String password, boolean aof, boolean fakeClock) {
    Path binary = ServerProcess.requireBinary("redis-server", "apt-get install redis-server");
    int port = ServerProcess.freePort();
    List<String> command =
        new ArrayList<>(
            List.of(
                binary.toString(),
                "--port",
                Integer.toString(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                aof ? "yes" : "no",
                "--protected-mode",
                "no",
                "--daemonize",
                "no"));
    if (aof) {
      command.addAll(List.of("--appendfsync", "always"));
    }
    if (password != null) {
      command.add("--requirepass");
      command.add(password);
    }
    Path workDir = Path.of("target", "redis-servers", name + "-" + port).toAbsolutePath();
    command.add("--dir");
    command.add(workDir.toString());
    FakeClock clock = null;
    Map<String, String> env = Map.of();
    if (fakeClock) {
      try {
        clock = FakeClock.shimIn(workDir);
      } catch (java.io.IOException e) {
        throw new IllegalStateException("cannot write the clock file in " + workDir + ": " + e, e);
      }
      env = clock.environment();
    }
    ServerProcess process =
        ServerProcess.start(
            "redis-" + name,
            command,
            workDir,
            env,
            Duration.ofSeconds(20),
            answersPing(port, password));
    return new RedisServer(process, port, password, clock);
  }

  private static BooleanSupplier answersPing(int port, String password) {
    BooleanSupplier open = ServerProcess.portOpen(port);
    return () -> {
      if (!open.getAsBoolean()) {
        return false;
      }
      try (Jedis j = connect(port, password)) {
        return "PONG".equals(j.ping());
      } catch (RuntimeException e) {
        return false;
      }
    };
  }

  private static Jedis connect(int port, String password) {
    DefaultJedisClientConfig.Builder b =
        DefaultJedisClientConfig.builder().connectionTimeoutMillis(2000).socketTimeoutMillis(5000);
    if (password != null) {
      b.password(password);
    }
    return new Jedis(new HostAndPort("127.0.0.1", port), b.build());
  }

  /**
   * @return the port on 127.0.0.1
   */
  public int port() {
    return port;
  }

  /**
   * @return {@code redis://[:password@]127.0.0.1:port}
   */
  public String uri() {
    return "redis://" + (password == null ? "" : "default:" + password + "@") + "127.0.0.1:" + port;
  }

  /**
   * @return a new direct connection for inspecting or changing the server; close it
   */
  public Jedis admin() {
    return connect(port, password);
  }

  /** Freezes the server (SIGSTOP). */
  public void pause() {
    process.pause();
  }

  /** Thaws the server (SIGCONT). */
  public void resume() {
    process.resume();
  }

  /**
   * Kills the server (SIGKILL); its data is gone unless it was started {@link #startWithAof(String)
   * with AOF}.
   */
  public void kill() {
    process.kill();
  }

  /** Starts the server again on the same port: empty, or with what its AOF kept. */
  public void restart() {
    process.restart();
  }

  /**
   * @return the tail of the server's log
   */
  public String logTail() {
    return process.tail();
  }

  @Override
  public void close() {
    process.close();
  }

  @Override
  public String toString() {
    return "redis-server on 127.0.0.1:" + port + " (" + process + ")";
  }
}
