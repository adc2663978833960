package dev.locksmith.jdbc;

import static dev.locksmith.BadInputCheck.bad;
import static dev.locksmith.BadInputCheck.connect;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.BadInputCheck;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.spi.Durations;
import dev.locksmith.tck.WrongPorts;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Bad JDBC URIs, every driver's host forms, options at and beyond their bounds, wrong credentials
 * against the fixtures' MariaDB and PostgreSQL, and wrong or dead ports; each case checked by
 * {@link BadInputCheck} (type, message, no secret anywhere, bounded, no thread left). Then the
 * connect timeout itself: a failure takes what its message says, within 20%.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcBadInputIT {
  /**
   * A password only MySQL's address=(…) form can hold unencoded; not among BadInputCheck's secrets,
   * so checked here too.
   */
  private static final String PAREN_SECRET = "x)(y=z";

  private static final Duration BOUND = Duration.ofSeconds(12);
  private static int mariadb;
  private static int postgres;

  @BeforeAll
  static void servers() throws Exception {
    mariadb = port(TestDatabases.mariadb().uri);
    postgres = port(TestDatabases.postgres().uri);
  }

  private static int port(String uri) {
    String hostPort = uri.substring(uri.indexOf("//") + 2, uri.indexOf('/', uri.indexOf("//") + 2));
    return Integer.parseInt(hostPort.substring(hostPort.lastIndexOf(':') + 1));
  }

  static Stream<Arguments> cases() {
    int closed = WrongPorts.closed();
    int silent = WrongPorts.silent();
    int redis = WrongPorts.redis();
    String h2 = "jdbc:h2:mem:bad-input;DB_CLOSE_DELAY=-1";
    String maria = "jdbc:mariadb://127.0.0.1:" + mariadb + "/locks";
    String pg = "jdbc:postgresql://127.0.0.1:" + postgres + "/postgres";
    Class<LockConfigurationException> config = LockConfigurationException.class;
    Class<BackendUnavailableException> down = BackendUnavailableException.class;
    return Stream.of(
        // options at and beyond their bounds
        bad(
            "table not an identifier",
            config,
            connect(h2 + "?table=1locks"),
            "`table` was '1locks'",
            "plain identifier"),
        bad(
            "pool-size 0",
            config,
            connect(h2 + "?pool-size=0"),
            "`pool-size` was '0'",
            "from 1 to 200"),
        bad(
            "pool-size 201",
            config,
            connect(h2 + "?pool-size=201"),
            "`pool-size` was '201'",
            "from 1 to 200"),
        bad(
            "connect-timeout below 500ms",
            config,
            connect(h2 + "?connect-timeout=499ms"),
            "`connect-timeout` was '499ms'",
            "from 500ms to 5m"),
        bad(
            "connect-timeout above 5m",
            config,
            connect(h2 + "?connect-timeout=301s"),
            "`connect-timeout` was '301s'",
            "to 5m"),
        bad(
            "io-timeout below 100ms",
            config,
            connect(h2 + "?io-timeout=99ms"),
            "`io-timeout` was '99ms'",
            "from 100ms to 10m"),
        bad(
            "io-timeout above 10m",
            config,
            connect(h2 + "?io-timeout=11m"),
            "`io-timeout` was '11m'",
            "to 10m"),
        bad(
            "backoff-min 0",
            config,
            connect(h2 + "?backoff-min=0ms"),
            "`backoff-min` was '0ms'",
            "from 1ms to 1m"),
        bad(
            "backoff-max below backoff-min",
            config,
            connect(h2 + "?backoff-min=50ms&backoff-max=10ms"),
            "`backoff-max` was '10ms'",
            "not be less than backoff-min (50ms)"),
        bad(
            "create-table maybe",
            config,
            connect(h2 + "?create-table=maybe"),
            "`create-table` was 'maybe'",
            "true or false"),
        bad(
            "misspelt option",
            config,
            connect(h2 + "?Pool_Size=3"),
            "`Pool_Size` was '3'",
            "did you mean `pool-size`"),
        bad(
            "secret under a key that is no property name",
            config,
            connect(h2 + "?pass%20word=tok3n-Z"),
            "`pass word` was '****'",
            "not a valid JDBC driver property name"),
        bad(
            "H2 setting with ';' in the query",
            config,
            connect(h2 + "?MODE=MySQL%3BX=1"),
            "contains ';'",
            ";KEY=VALUE"),
        bad(
            "no database",
            config,
            connect("jdbc:postgresql:"),
            "names no database",
            "jdbc:postgresql://localhost:5432/app"),
        // host forms
        bad(
            "port beyond 65535 in (host=…,port=…)",
            config,
            connect("jdbc:mysql://(host=127.0.0.1,port=99999,user=root,password=hunter2-Q)/locks"),
            "the port '99999' of host '127.0.0.1'",
            "from 1 to 65535"),
        bad(
            "raw '/' in an address=(…) password",
            config,
            connect(
                "jdbc:mysql://address=(host=127.0.0.1)(port="
                    + mariadb
                    + ")(user=root)(password=Se/cret1)/locks"),
            "address=(host=name)(port=number)",
            "percent-encoded"),
        bad(
            "unclosed (host=…) form",
            config,
            connect("jdbc:mysql://(host=127.0.0.1,port=" + mariadb + ",password=Se/cret1)/locks"),
            "must end with ')'",
            "%2F"),
        bad(
            "two different users",
            config,
            connect("jdbc:mysql://root:Se:cr@t9@127.0.0.1:" + mariadb + "/locks?user=admin"),
            "names two users, 'root' as user@ and 'admin' as ?user=",
            "give the user once"),
        // wrong credentials against real servers
        bad(
            "MariaDB root, wrong password in the query",
            down,
            connect(maria + "?user=root&password=hunter2-Q"),
            "127.0.0.1:" + mariadb,
            "as user 'root'",
            "Access denied",
            "Check the user and password"),
        bad(
            "MariaDB root, wrong password as user:password@",
            down,
            connect("jdbc:mariadb://root:Se:cr@t9@127.0.0.1:" + mariadb + "/locks"),
            "127.0.0.1:" + mariadb,
            "Access denied"),
        bad(
            "MariaDB address=(…) form, password holding ')('",
            down,
            withParenSecret(
                connect(
                    "jdbc:mysql://address=(host=127.0.0.1)(port="
                        + mariadb
                        + ")(user=root)(password="
                        + PAREN_SECRET
                        + ")/locks")),
            "at 127.0.0.1:" + mariadb + " within",
            "Access denied"),
        bad(
            "MariaDB (host=…,port=…,password=…) form",
            down,
            connect(
                "jdbc:mysql://(host=127.0.0.1,port="
                    + mariadb
                    + ",user=root,password=hunter2-Q)/locks"),
            "at 127.0.0.1:" + mariadb + " within",
            "Access denied"),
        bad(
            "MariaDB multi-host, second one real",
            down,
            connect(
                "jdbc:mysql://127.0.0.1:"
                    + closed
                    + ",127.0.0.1:"
                    + mariadb
                    + "/locks?user=root&password=Se:cr@t9"),
            "127.0.0.1:" + closed + ",127.0.0.1:" + mariadb),
        bad(
            "PostgreSQL unknown user",
            down,
            connect(pg + "?user=nobody_here&password=hunter2-Q"),
            "127.0.0.1:" + postgres,
            "as user 'nobody_here'",
            "nobody_here",
            "Check the user and password"),
        bad(
            "PostgreSQL unknown user as user:password@",
            down,
            connect("jdbc:postgresql://nobody_here:Se:cr@t9@127.0.0.1:" + postgres + "/postgres"),
            "as user 'nobody_here'"),
        // wrong or dead ports
        bad(
            "PostgreSQL at a closed port",
            down,
            connect("jdbc:postgresql://127.0.0.1:" + closed + "/x?user=u&password=Se:cr@t9"),
            "127.0.0.1:" + closed,
            "connection refused: nothing listens"),
        bad(
            "PostgreSQL at a silent port",
            down,
            connect(
                "jdbc:postgresql://127.0.0.1:"
                    + silent
                    + "/x?user=u&password=hunter2-Q&connect-timeout=1s"),
            "127.0.0.1:" + silent,
            "within 1s",
            "did not answer"),
        bad(
            "PostgreSQL at a Redis port",
            down,
            connect(
                "jdbc:postgresql://127.0.0.1:"
                    + redis
                    + "/x?user=u&password=tok3n-Z&connect-timeout=1s"),
            "127.0.0.1:" + redis,
            "a Redis server answers there",
            "not a PostgreSQL server",
            "5432"),
        bad(
            "PostgreSQL at the MariaDB port",
            down,
            connect("jdbc:postgresql://127.0.0.1:" + mariadb + "/x?user=u&password=tok3n-Z"),
            "a MySQL or MariaDB server answers there, not a PostgreSQL server"),
        bad(
            "PostgreSQL multi-host, closed and silent",
            down,
            connect(
                "jdbc:postgresql://127.0.0.1:"
                    + closed
                    + ",127.0.0.1:"
                    + silent
                    + "/x?connect-timeout=1s"),
            "127.0.0.1:" + closed + ",127.0.0.1:" + silent,
            "within 1s"),
        bad(
            "PostgreSQL at IPv6 loopback, closed",
            down,
            connect("jdbc:postgresql://[::1]:" + closed + "/x?password=Se:cr@t9"),
            "[::1]:" + closed),
        bad(
            "MariaDB at the PostgreSQL port",
            down,
            connect(
                "jdbc:mariadb://127.0.0.1:"
                    + postgres
                    + "/x?user=u&password=hunter2-Q&connect-timeout=1s"),
            "a PostgreSQL server answers there, not a MySQL or MariaDB server"),
        bad(
            "MariaDB at a Redis port",
            down,
            connect("jdbc:mariadb://127.0.0.1:" + redis + "/x?connect-timeout=1s"),
            "a Redis server answers there"),
        bad(
            "MariaDB at a silent port",
            down,
            connect("jdbc:mariadb://u:hunter2-Q@127.0.0.1:" + silent + "/x?connect-timeout=1s"),
            "127.0.0.1:" + silent,
            "within 1s",
            "as user 'u'"),
        bad(
            "MySQL multi-host, silent and closed",
            down,
            connect(
                "jdbc:mysql://127.0.0.1:"
                    + silent
                    + ",127.0.0.1:"
                    + closed
                    + "/x?connect-timeout=2s"),
            "within 2s"),
        bad(
            "misspelt password key at a closed port",
            down,
            connect(
                "jdbc:mysql://127.0.0.1:"
                    + closed
                    + "/x?user=root&pasword=hunter2-Q&pass=tok3n-Z&auth=Se:cr@t9"),
            "127.0.0.1:" + closed),
        bad(
            "H2 server at a silent port, ;PASSWORD=",
            down,
            connect(
                "jdbc:h2:tcp://127.0.0.1:" + silent + "/x;PASSWORD=Se:cr@t9?connect-timeout=1s"),
            "127.0.0.1:" + silent,
            "within 1s"),
        bad(
            "H2 server at a closed port",
            down,
            connect("jdbc:h2:tcp://127.0.0.1:" + closed + "/x;PASSWORD=tok3n-Z"),
            "127.0.0.1:" + closed,
            "nothing listens"),
        bad(
            "H2 embedded, unknown setting next to ;PASSWORD=",
            down,
            connect("jdbc:h2:mem:x;PASSWORD=hunter2-Q;NO_SUCH=1"),
            "H2 database mem:x",
            "NO_SUCH"),
        // misuse
        bad(
            "JdbcLocks with a null DataSource",
            NullPointerException.class,
            () -> JdbcLocks.connect(null),
            "`dataSource` was null"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void badInputFailsClearlyWithoutLeaks(BadInputCheck.Case c) {
    BadInputCheck.check(c, BOUND);
  }

  /**
   * Also checks {@link #PAREN_SECRET}: absent from messages, causes and what was logged meanwhile.
   */
  private static ThrowingCallable withParenSecret(ThrowingCallable call) {
    return () -> {
      PrintStream err = System.err;
      ByteArrayOutputStream log = new ByteArrayOutputStream();
      System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
      Throwable thrown;
      try {
        thrown = catchThrowable(call);
      } finally {
        System.setErr(err);
        err.print(log.toString(StandardCharsets.UTF_8));
      }
      assertThat(log.toString(StandardCharsets.UTF_8)).doesNotContain(PAREN_SECRET);
      for (Throwable t = thrown; t != null; t = t.getCause()) {
        assertThat(t.toString()).doesNotContain(PAREN_SECRET);
      }
      if (thrown != null) {
        throw thrown;
      }
    };
  }

  static Stream<Arguments> timeouts() {
    return Stream.of(
        Arguments.of("jdbc:postgresql://127.0.0.1:" + WrongPorts.redis() + "/x", "2s"),
        Arguments.of("jdbc:postgresql://127.0.0.1:" + WrongPorts.silent() + "/x", "2s"),
        Arguments.of("jdbc:postgresql://127.0.0.1:" + WrongPorts.closed() + "/x", "2s"),
        Arguments.of("jdbc:mariadb://127.0.0.1:" + WrongPorts.redis() + "/x", "2s"),
        Arguments.of("jdbc:mariadb://127.0.0.1:" + WrongPorts.silent() + "/x", "2s"),
        Arguments.of(
            "jdbc:mariadb://127.0.0.1:"
                + WrongPorts.silent()
                + ",127.0.0.1:"
                + WrongPorts.redis()
                + "/x",
            "2s"),
        Arguments.of("jdbc:h2:tcp://127.0.0.1:" + WrongPorts.silent() + "/x", "2s"),
        Arguments.of("jdbc:h2:tcp://127.0.0.1:" + WrongPorts.redis() + "/x", "2s"));
  }

  /**
   * What the message states is what it takes, within 20% (after one warm-up connect, so class
   * loading is not counted).
   */
  @ParameterizedTest(name = "{0} with connect-timeout={1}")
  @MethodSource("timeouts")
  void aFailedConnectTakesWhatTheMessageSays(String uri, String timeout) {
    long millis =
        WrongPorts.assertFailedConnectWithin(uri, "connect-timeout", Durations.parse(timeout));
    System.out.printf("connect timeout: %s took %d ms for '%s'%n", uri, millis, timeout);
  }
}
