package dev.locksmith.etcd;

import static dev.locksmith.BadInputCheck.bad;
import static dev.locksmith.BadInputCheck.connect;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.BadInputCheck;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.spi.Durations;
import dev.locksmith.tck.WrongPorts;
import java.nio.file.Files;
import java.nio.file.Path;
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
 * Bad {@code etcd://} URIs, options at and beyond their bounds, wrong credentials against an etcd
 * with authentication on, and wrong or dead ports; each case checked by {@link BadInputCheck}. Then
 * the connect timeout itself: a failure takes what its message says, within 20%.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EtcdBadInputIT {
  private static final Duration BOUND = Duration.ofSeconds(10);

  @RegisterExtension
  static final EtcdServerExtension SECURED =
      EtcdServerExtension.oneMember("bad-input").withRootAuth("right-pw");

  private static Path notPem;

  @BeforeAll
  static void start() throws Exception {
    notPem = Files.createTempFile("locksmith-not-pem-", ".pem");
  }

  @AfterAll
  static void stop() throws Exception {
    Files.deleteIfExists(notPem);
  }

  static Stream<Arguments> cases() {
    int closed = WrongPorts.closed();
    int silent = WrongPorts.silent();
    int redis = WrongPorts.redis();
    String dead = "etcd://127.0.0.1:" + closed;
    Class<LockConfigurationException> config = LockConfigurationException.class;
    Class<BackendUnavailableException> down = BackendUnavailableException.class;
    return Stream.of(
        bad("ttl 0s", config, connect(dead + "?ttl=0s"), "`ttl` was '0s'", "from 1s to 1h"),
        bad("ttl above 1h", config, connect(dead + "?ttl=61m"), "`ttl` was '61m'", "to 1h"),
        bad(
            "ttl not whole seconds",
            config,
            connect(dead + "?ttl=1500ms"),
            "`ttl` was '1500ms'",
            "whole seconds"),
        bad(
            "connect-timeout below 100ms",
            config,
            connect(dead + "?connect-timeout=99ms"),
            "`connect-timeout` was '99ms'",
            "from 100ms to 5m"),
        bad(
            "connect-timeout above 5m",
            config,
            connect(dead + "?connect-timeout=6m"),
            "`connect-timeout` was '6m'"),
        bad(
            "request-timeout below 100ms",
            config,
            connect(dead + "?request-timeout=99ms"),
            "`request-timeout` was '99ms'"),
        bad(
            "request-timeout above 5m",
            config,
            connect(dead + "?request-timeout=301s"),
            "`request-timeout` was '301s'"),
        bad(
            "tls maybe",
            config,
            connect(dead + "?tls=maybe"),
            "`tls` was 'maybe'",
            "true or false"),
        bad(
            "tls-ca missing",
            config,
            connect(dead + "?tls-ca=/no/such/ca.pem"),
            "`tls-ca` was '/no/such/ca.pem'",
            "readable PEM file"),
        bad(
            "tls-cert without tls-key",
            config,
            connect(dead + "?tls-cert=" + notPem),
            "`tls-key` is missing"),
        bad(
            "tls=false with tls-ca",
            config,
            connect(dead + "?tls=false&tls-ca=" + notPem),
            "`tls` was 'false'",
            "must be true (or left out)"),
        bad(
            "tls-ca that is not PEM",
            config,
            connect(dead + "?tls-ca=" + notPem),
            "could not be read as PEM"),
        bad(
            "user without a password",
            config,
            connect("etcd://someone@127.0.0.1:" + closed),
            "user 'someone' has no password"),
        bad(
            "password without a user",
            config,
            connect("etcd://:tok3n-Z@127.0.0.1:" + closed),
            "etcd://:****@",
            "password without a user"),
        bad(
            "key prefix beyond 200 characters",
            config,
            connect(dead + "/" + "p".repeat(201)),
            "at most 200 printable characters"),
        bad(
            "no endpoints",
            config,
            connect("etcd:"),
            "at least one etcd endpoint",
            "etcd://localhost:2379"),
        bad(
            "wrong password",
            down,
            connect("etcd://root:Se:cr@t9@" + SECURED.hosts() + "?connect-timeout=2s"),
            SECURED.hosts(),
            "user 'root'"),
        bad(
            "closed port",
            down,
            connect("etcd://root:hunter2-Q@127.0.0.1:" + closed + "?connect-timeout=1s"),
            "127.0.0.1:" + closed,
            "within 1s (`connect-timeout`)"),
        bad(
            "silent port",
            down,
            connect("etcd://127.0.0.1:" + silent + "?connect-timeout=1s"),
            "127.0.0.1:" + silent,
            "within 1s"),
        bad(
            "Redis port",
            down,
            connect("etcd://root:tok3n-Z@127.0.0.1:" + redis + "?connect-timeout=1s"),
            "127.0.0.1:" + redis,
            "check that etcd runs there"),
        bad(
            "closed, silent and Redis ports",
            down,
            connect(
                "etcd://127.0.0.1:"
                    + closed
                    + ",127.0.0.1:"
                    + silent
                    + ",127.0.0.1:"
                    + redis
                    + "?connect-timeout=1s"),
            "127.0.0.1:" + closed + ",127.0.0.1:" + silent),
        bad(
            "IPv6 address",
            config,
            connect("etcd://root:hunter2-Q@[::1]:" + closed + "?connect-timeout=1s"),
            "its host [::1] is an IPv6 address",
            "such as localhost"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void badInputFailsClearlyWithoutLeaks(BadInputCheck.Case c) {
    BadInputCheck.check(c, BOUND);
  }

  static Stream<Arguments> timeouts() {
    return Stream.of(
        Arguments.of("etcd://127.0.0.1:" + WrongPorts.closed(), "2s"),
        Arguments.of("etcd://127.0.0.1:" + WrongPorts.silent(), "2s"),
        Arguments.of("etcd://127.0.0.1:" + WrongPorts.redis(), "2s"),
        Arguments.of("etcd://127.0.0.1:" + WrongPorts.redis(), "5s"));
  }

  /** What the message states is what it takes, within 20%. */
  @ParameterizedTest(name = "{0} with connect-timeout={1}")
  @MethodSource("timeouts")
  void aFailedConnectTakesWhatTheMessageSays(String uri, String timeout) {
    long millis =
        WrongPorts.assertFailedConnectWithin(uri, "connect-timeout", Durations.parse(timeout));
    System.out.printf("connect timeout: %s took %d ms for '%s'%n", uri, millis, timeout);
  }
}
