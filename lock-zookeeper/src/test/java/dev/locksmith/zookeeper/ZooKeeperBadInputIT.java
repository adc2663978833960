package dev.locksmith.zookeeper;

import static dev.locksmith.BadInputCheck.bad;
import static dev.locksmith.BadInputCheck.connect;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.BadInputCheck;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import dev.locksmith.spi.Durations;
import dev.locksmith.tck.WrongPorts;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Bad {@code zookeeper://} URIs, options at and beyond their bounds, credentials that do not match
 * the nodes' ACL, and wrong or dead ports; each case checked by {@link BadInputCheck}. Then the
 * connection timeout itself: a failure takes what its message says, within 20%.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ZooKeeperBadInputIT {
  private static final Duration BOUND = Duration.ofSeconds(10);

  @RegisterExtension
  static final ZooKeeperServerExtension ZK = ZooKeeperServerExtension.ownJvm("zk-bad-input");

  /**
   * Holds the namespace "guarded", created with creator-only ACLs as alice with her right password.
   */
  private static LockClient owner;

  @BeforeAll
  static void start() {
    // the fixture waits only for the port: a server JVM just started may take longer than 5 s to
    // answer
    owner =
        Locks.connect(
            "zookeeper://alice:right-pw@"
                + ZK.connectString()
                + "?namespace=guarded&acl=creator&connection-timeout=30s");
  }

  @AfterAll
  static void stop() {
    owner.close();
  }

  static Stream<Arguments> cases() {
    int closed = WrongPorts.closed();
    int silent = WrongPorts.silent();
    int redis = WrongPorts.redis();
    String zk = "zookeeper://" + ZK.connectString();
    Class<LockConfigurationException> config = LockConfigurationException.class;
    Class<BackendUnavailableException> down = BackendUnavailableException.class;
    return Stream.of(
        bad(
            "session-timeout below 500ms",
            config,
            connect(zk + "?session-timeout=499ms"),
            "`session-timeout` was '499ms'",
            "from 500ms to 10m"),
        bad(
            "session-timeout above 10m",
            config,
            connect(zk + "?session-timeout=601s"),
            "`session-timeout` was '601s'",
            "to 10m"),
        bad(
            "connection-timeout below 100ms",
            config,
            connect(zk + "?connection-timeout=99ms"),
            "`connection-timeout` was '99ms'",
            "from 100ms to 10m"),
        bad(
            "connection-timeout above 10m",
            config,
            connect(zk + "?connection-timeout=11m"),
            "`connection-timeout` was '11m'"),
        bad(
            "empty namespace",
            config,
            connect(zk + "?namespace="),
            "`namespace` was ''",
            "must not be empty"),
        bad(
            "namespace beginning with '/'",
            config,
            connect(zk + "?namespace=/x"),
            "`namespace` was '/x'",
            "apps/billing"),
        bad(
            "namespace with an empty node",
            config,
            connect(zk + "?namespace=a//b"),
            "`namespace` was 'a//b'",
            "not a valid ZooKeeper path"),
        bad(
            "unknown acl",
            config,
            connect(zk + "?acl=everyone"),
            "`acl` was 'everyone'",
            "open, creator or creator-read"),
        bad(
            "acl=creator without credentials",
            config,
            connect(zk + "?acl=creator"),
            "`acl` was 'creator'",
            "needs credentials"),
        bad(
            "user without a password",
            config,
            connect("zookeeper://alice@" + ZK.connectString()),
            "user 'alice'",
            "has no password"),
        bad(
            "password without a user",
            config,
            connect("zookeeper://:tok3n-Z@" + ZK.connectString()),
            "zookeeper://:****@",
            "password without a user"),
        bad(
            "invalid chroot",
            config,
            connect("zookeeper://alice:hunter2-Q@127.0.0.1:" + closed + "/x//y"),
            "alice:****@",
            "chroot '/x//y'",
            "not a valid ZooKeeper path"),
        bad(
            "user holding ':'",
            config,
            connect("zookeeper://al%3Aice:Se:cr@t9@" + ZK.connectString()),
            "the user 'al:ice' contains ':'"),
        bad(
            "no servers",
            config,
            connect("zookeeper:/just/a/path"),
            "at least one ZooKeeper server"),
        bad(
            "wrong password for creator-only nodes",
            down,
            connect("zookeeper://alice:Se:cr@t9@" + ZK.connectString() + "?namespace=guarded"),
            "refused to create nodes under /guarded (NoAuth)",
            "zookeeper://alice:****@"),
        bad(
            "closed port",
            down,
            connect("zookeeper://alice:hunter2-Q@127.0.0.1:" + closed + "?connection-timeout=1s"),
            "127.0.0.1:" + closed,
            "within the `connection-timeout` of 1s",
            "refused"),
        bad(
            "silent port",
            down,
            connect("zookeeper://127.0.0.1:" + silent + "?connection-timeout=1s"),
            "127.0.0.1:" + silent,
            "accepts connections but did not answer as a ZooKeeper server"),
        bad(
            "Redis port",
            down,
            connect("zookeeper://alice:tok3n-Z@127.0.0.1:" + redis + "?connection-timeout=1s"),
            "127.0.0.1:" + redis,
            "did not answer as a ZooKeeper server",
            "client port"),
        bad(
            "closed, silent and Redis ports",
            down,
            connect(
                "zookeeper://127.0.0.1:"
                    + closed
                    + ",127.0.0.1:"
                    + silent
                    + ",127.0.0.1:"
                    + redis
                    + "?connection-timeout=1s"),
            "127.0.0.1:" + closed + " refused",
            "127.0.0.1:" + silent + " accepts connections"),
        bad(
            "IPv6 loopback, closed port",
            down,
            connect("zookeeper://[::1]:" + closed + "?connection-timeout=1s"),
            "[::1]:" + closed));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void badInputFailsClearlyWithoutLeaks(BadInputCheck.Case c) {
    BadInputCheck.check(c, BOUND);
  }

  static Stream<Arguments> timeouts() {
    return Stream.of(
        Arguments.of("zookeeper://127.0.0.1:" + WrongPorts.redis(), "2s"),
        Arguments.of("zookeeper://127.0.0.1:" + WrongPorts.silent(), "2s"),
        Arguments.of("zookeeper://127.0.0.1:" + WrongPorts.closed(), "2s"),
        Arguments.of("zookeeper://127.0.0.1:" + WrongPorts.redis(), "5s"));
  }

  /**
   * What the message states is what it takes, within 20%. It once took twice that: the client that
   * never connected was closed with a closeSession that waited a whole request timeout.
   */
  @ParameterizedTest(name = "{0} with connection-timeout={1}")
  @MethodSource("timeouts")
  void aFailedConnectTakesWhatTheMessageSays(String uri, String timeout) {
    long millis =
        WrongPorts.assertFailedConnectWithin(uri, "connection-timeout", Durations.parse(timeout));
    System.out.printf("connect timeout: %s took %d ms for '%s'%n", uri, millis, timeout);
  }
}
