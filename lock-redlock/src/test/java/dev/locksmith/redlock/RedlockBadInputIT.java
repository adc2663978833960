package dev.locksmith.redlock;

import static dev.locksmith.BadInputCheck.bad;
import static dev.locksmith.BadInputCheck.connect;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.BadInputCheck;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.LockOptions;
import dev.locksmith.Locks;
import dev.locksmith.redis.RedisServer;
import dev.locksmith.tck.ServerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Servers that cannot be used fail {@code Locks.connect} with a {@link BackendUnavailableException}
 * naming each of them, password redacted, within the connect timeout. Then a table of bad Redlock
 * URIs, settings and misuse, each checked by {@link BadInputCheck}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedlockBadInputIT {
  private static final String SECRET = "s3cr3t-pw";
  private static RedlockServers servers;

  @BeforeAll
  static void startServers() {
    servers = RedlockServers.start("bad-input", 3);
  }

  @AfterAll
  static void stopServers() {
    servers.close();
  }

  static Stream<Arguments> cases() {
    String hosts = servers.uri().substring("redlock://".length());
    int p0 = servers.get(0).port();
    int p1 = servers.get(1).port();
    int p2 = servers.get(2).port();
    Class<LockConfigurationException> config = LockConfigurationException.class;
    LockOptions notReentrant = LockOptions.builder().reentrant(false).build();
    return Stream.of(
        bad(
            "one server as 127.0.0.1 and localhost",
            config,
            connect("redlock://127.0.0.1:" + p0 + ",localhost:" + p0 + ",127.0.0.1:" + p1),
            "one server twice",
            "127.0.0.1:" + p0,
            "localhost:" + p0,
            "counted twice toward a majority"),
        bad(
            "one server written twice",
            config,
            connect("redlock://127.0.0.1:" + p0 + ",127.0.0.1:" + p0 + ",127.0.0.1:" + p1),
            "127.0.0.1:" + p0 + " twice"),
        bad(
            "LOCALHOST and 127.0.0.1",
            config,
            connect("redlock://LOCALHOST:" + p1 + ",127.0.0.1:" + p1 + ",127.0.0.1:" + p2),
            "one server twice",
            "LOCALHOST:" + p1,
            "127.0.0.1:" + p1),
        bad(
            "two servers only",
            config,
            connect("redlock://127.0.0.1:" + p0 + ",127.0.0.1:" + p1),
            "names 2 hosts",
            "at least 3"),
        bad(
            "raw / in the password",
            config,
            connect("redlock://:Se/cret1@" + hosts),
            "redlock://:****@127.0.0.1:" + p0,
            "percent-encode"),
        bad(
            "raw # and ? in the password",
            config,
            connect("redlock://u:p@ss#word?x@" + hosts),
            "redlock://u:****@",
            "%23"),
        bad(
            "misspelt password key",
            config,
            connect("redlock://" + hosts + "?pasword=hunter2-Q"),
            "`pasword` was '****'",
            "drift-factor"),
        bad(
            "typo lese",
            config,
            connect("redlock://" + hosts + "?lese=10s"),
            "did you mean `lease`?"),
        bad(
            "password in user info and query",
            config,
            connect("redlock://:Se:cr@t9@" + hosts + "?password=tok3n-Z"),
            "`password` was given twice"),
        bad(
            "drift-factor 2",
            config,
            connect("redlock://" + hosts + "?drift-factor=2"),
            "`drift-factor` was '2'",
            "0 to 0.5"),
        bad(
            "server-timeout 999999999999d",
            config,
            connect("redlock://" + hosts + "?server-timeout=999999999999d"),
            "`server-timeout` was '999999999999d'",
            "10ms to 1m"),
        bad(
            "lease 999999999999d",
            config,
            connect("redlock://" + hosts + "?lease=999999999999d"),
            "1ms to 7d"),
        bad(
            "unknown hosts everywhere",
            BackendUnavailableException.class,
            connect(
                "redlock://default:Se:cr@t9@a.invalid:1,b.invalid:2,c.invalid:3?connect-timeout=1s"),
            "only 0 of the 3",
            "a.invalid:1",
            "c.invalid:3",
            "unknown host"),
        bad(
            "lease 2ms from the URI, within its own drift allowance",
            IllegalArgumentException.class,
            () -> {
              try (LockClient client = Locks.connect(servers.uri() + "?lease=2ms")) {
                client.lock("bad-input-short").acquire(Duration.ofSeconds(30));
              }
            },
            "`lease` was '2ms'",
            "drift-factor 0.01",
            "at least 3ms"),
        bad(
            "nested acquire() with reentrancy off",
            IllegalStateException.class,
            () -> {
              try (LockClient client = Locks.connect(servers.uri())) {
                try (Lease outer = client.lock("bad-input-job", notReentrant).acquire()) {
                  assertThat(client.lock("bad-input-job", notReentrant).tryAcquire())
                      .as("tryAcquire() by the holder")
                      .isEmpty();
                  client.lock("bad-input-job", notReentrant).acquire(Duration.ofHours(1));
                }
              } finally {
                try (LockClient after = Locks.connect(servers.uri())) {
                  assertThat(after.lock("bad-input-job").tryAcquire())
                      .as("free once the client closed")
                      .hasValueSatisfying(Lease::release);
                }
              }
            },
            "lock 'bad-input-job'",
            "held by the calling thread",
            "reentrancy is off"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void refusedClearlyInTimeWithoutLeaks(BadInputCheck.Case c) {
    BadInputCheck.check(c, Duration.ofSeconds(10));
  }

  @Test
  void nothingListeningAnywhere() {
    List<Integer> ports =
        List.of(ServerProcess.freePort(), ServerProcess.freePort(), ServerProcess.freePort());
    String uri =
        "redlock://:"
            + SECRET
            + "@"
            + ports.stream().map(p -> "127.0.0.1:" + p).collect(Collectors.joining(","))
            + "?connect-timeout=1s";
    long start = System.nanoTime();
    assertThatThrownBy(() -> Locks.connect(uri).close())
        .isInstanceOf(BackendUnavailableException.class)
        .hasMessageContaining("only 0 of the 3 Redis servers")
        .hasMessageContaining("127.0.0.1:" + ports.get(0))
        .hasMessageContaining("127.0.0.1:" + ports.get(1))
        .hasMessageContaining("127.0.0.1:" + ports.get(2))
        .hasMessageContaining("refused")
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain(SECRET).contains("****"));
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start))
        .as("ms to fail")
        .isLessThan(2500);
  }

  @Test
  void wrongPasswordOnEveryServerAndTheRightOne() {
    List<RedisServer> guarded = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        guarded.add(RedisServer.start("guarded-" + i, SECRET));
      }
      String hosts =
          guarded.stream().map(s -> "127.0.0.1:" + s.port()).collect(Collectors.joining(","));
      assertThatThrownBy(
              () ->
                  Locks.connect("redlock://default:wrong-pw@" + hosts + "?connect-timeout=1s")
                      .close())
          .isInstanceOf(BackendUnavailableException.class)
          .hasMessageContaining("credentials")
          .hasMessageContaining("127.0.0.1:" + guarded.get(0).port())
          .hasMessageContaining("127.0.0.1:" + guarded.get(2).port())
          .satisfies(
              e -> assertThat(e.getMessage()).doesNotContain("wrong-pw").doesNotContain(SECRET));
      try (LockClient client = Locks.connect("redlock://default:" + SECRET + "@" + hosts)) {
        assertThat(client.lock("guarded").tryAcquire()).isPresent();
      }
    } finally {
      guarded.forEach(RedisServer::close);
    }
  }
}
