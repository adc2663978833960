package dev.locksmith.jdbc;

import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.compare.Comparison;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A real MariaDB or PostgreSQL server and its fault hooks, as a target of the fault comparison
 * (lock-compare runs it beside the other backends). Shipped in the test-jar. The servers are the
 * ones the kit runs against, started once per JVM and stopped when it exits.
 */
public final class JdbcComparisonTarget {
  private static final Pattern PORT = Pattern.compile("//127\\.0\\.0\\.1:(\\d+)/");

  private JdbcComparisonTarget() {}

  /**
   * @return MariaDB through mysql-connector-j
   * @throws Exception if the server cannot be started
   */
  public static Comparison.Target mariadb() throws Exception {
    return target(TestDatabases.mariadb());
  }

  /**
   * @return PostgreSQL
   * @throws Exception if the server cannot be started
   */
  public static Comparison.Target postgres() throws Exception {
    return target(TestDatabases.postgres());
  }

  /**
   * @return a MariaDB server of its own running under libfaketime, shown as "mariadb+faketime", for
   *     the clock jump alone (its hook moves that server's clock forward, nothing else's); the
   *     plain MariaDB target covers the other scenarios
   * @throws Exception if the server cannot be started (libfaketime missing included)
   */
  public static Comparison.Target mariadbWithFakeClock() throws Exception {
    return clockJumpOnly(TestDatabases.mariadbWithFakeClock());
  }

  /**
   * @return a PostgreSQL server of its own with a shifted wall clock, shown as
   *     "postgresql+faketime", for the clock jump alone; the plain PostgreSQL target covers the
   *     other scenarios
   * @throws Exception if the server cannot be started (no C compiler for the shift included)
   */
  public static Comparison.Target postgresWithFakeClock() throws Exception {
    return clockJumpOnly(TestDatabases.postgresWithFakeClock());
  }

  /** A database whose clock can jump, as a target of the clock jump alone. */
  private static Comparison.Target clockJumpOnly(TestDatabases.Db db) {
    FaultHooks hooks =
        new FaultHooks() {
          @Override
          public void jumpServerClock(Duration jump) {
            db.jumpClock(jump);
          }
        };
    return Comparison.Target.of(db.name, db.uri, hooks, Duration.ZERO)
        .only(Comparison.Scenario.CLOCK_JUMP);
  }

  private static Comparison.Target target(TestDatabases.Db db) {
    return Comparison.Target.of(db.name, db.uri, hooks(db), Duration.ZERO);
  }

  /** The server hooks of a test database; the kit adds revocation to them. */
  static FaultHooks hooks(TestDatabases.Db db) {
    return new FaultHooks() {
      @Override
      public void pauseServer() {
        db.pause();
      }

      @Override
      public void resumeServer() {
        db.resume();
      }

      @Override
      public void killServer() {
        db.kill();
      }

      @Override
      public void restartServer() {
        db.restart();
      }

      @Override
      public InetSocketAddress serverAddress() {
        return new InetSocketAddress("127.0.0.1", port(db));
      }

      @Override
      public String uriVia(InetSocketAddress proxy) {
        return db.uri.replace("127.0.0.1:" + port(db) + "/", "127.0.0.1:" + proxy.getPort() + "/");
      }
    };
  }

  private static int port(TestDatabases.Db db) {
    Matcher m = PORT.matcher(db.uri);
    if (!m.find()) {
      throw new UnsupportedOperationException(
          "serverAddress"); // H2 runs in this JVM: no address to cut off
    }
    return Integer.parseInt(m.group(1));
  }
}
