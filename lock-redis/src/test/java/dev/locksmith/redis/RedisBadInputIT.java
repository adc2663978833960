package dev.locksmith.redis;

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
import dev.locksmith.tck.ServerProcess;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Servers that cannot be used: each fails at connect with a {@link BackendUnavailableException}
 * naming host:port, with the password redacted, within the connect timeout, leaving nothing open.
 * Then a table of bad Redis URIs, settings and misuse, each checked by {@link BadInputCheck}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisBadInputIT {
  private static final String SECRET = "s3cr3t-pw";

  @RegisterExtension
  static final RedisServerExtension GUARDED = RedisServerExtension.single("guarded", SECRET);

  @RegisterExtension static final RedisServerExtension PLAIN = RedisServerExtension.single("plain");

  private static long connectFailing(String uri, String... expected) {
    long start = System.nanoTime();
    assertThatThrownBy(() -> Locks.connect(uri).close())
        .isInstanceOf(BackendUnavailableException.class)
        .satisfies(
            e -> {
              for (String s : expected) {
                assertThat(e.getMessage()).contains(s);
              }
              assertThat(e.getMessage()).doesNotContain(SECRET).doesNotContain("wrong-pw");
            });
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
  }

  @Test
  void wrongPassword() {
    long ms =
        connectFailing(
            "redis://default:wrong-pw@127.0.0.1:" + GUARDED.server().port() + "?connect-timeout=1s",
            "127.0.0.1:" + GUARDED.server().port(),
            "credentials",
            "****");
    assertThat(ms).isLessThan(1500);
  }

  @Test
  void missingPassword() {
    connectFailing(
        "redis://127.0.0.1:" + GUARDED.server().port(), "127.0.0.1:" + GUARDED.server().port());
  }

  @Test
  void rightPasswordConnects() {
    Locks.connect(GUARDED.server().uri()).close();
  }

  @Test
  void tlsToAPlainPort() {
    long ms =
        connectFailing(
            "rediss://default:"
                + SECRET
                + "@127.0.0.1:"
                + GUARDED.server().port()
                + "?connect-timeout=1s",
            "127.0.0.1:" + GUARDED.server().port(),
            "TLS",
            "within 1s");
    // the TCP connect, the TLS handshake and the PING share the connect timeout. Unloaded this
    // takes 1.02-1.03 s. The bound's room is for a loaded machine (CI runs two modules at a time;
    // one such run took 640 ms past the default timeout) and still fails both defects it is for:
    // the option ignored (the default 2 s) and a handshake restarted on close (a second timeout)
    assertThat(ms).isBetween(900L, 1800L);
  }

  @Test
  void tlsToAPlainPortTakesTheDefaultConnectTimeout() {
    long ms =
        connectFailing(
            "rediss://default:" + SECRET + "@127.0.0.1:" + GUARDED.server().port(),
            "127.0.0.1:" + GUARDED.server().port(),
            "TLS",
            "within 2s");
    // 2.02 s unloaded; 2.64 s once in CI beside another module. A handshake restarted on close
    // would take 4 s
    assertThat(ms).isBetween(1800L, 3600L);
  }

  @Test
  void nothingListening() {
    int port = ServerProcess.freePort();
    long ms =
        connectFailing(
            "redis://127.0.0.1:" + port + "?connect-timeout=1s", "127.0.0.1:" + port, "refused");
    assertThat(ms).isLessThan(1500);
  }

  @Test
  void unknownHost() {
    connectFailing(
        "redis://no-such-host.invalid:6379?connect-timeout=1s", "no-such-host.invalid:6379");
  }

  @Test
  void aServerThatWritesGarbage() throws Exception {
    try (ServerSocket fake = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      CompletableFuture<Boolean> closedByClient = serve(fake, "HTTP/1.1 400 Bad Request\r\n\r\n");
      long ms =
          connectFailing(
              "redis://:" + SECRET + "@127.0.0.1:" + fake.getLocalPort() + "?connect-timeout=1s",
              "127.0.0.1:" + fake.getLocalPort(),
              "Redis");
      assertThat(ms).isLessThan(1500);
      assertThat(closedByClient.get(5, TimeUnit.SECONDS))
          .as("the client closed its connection")
          .isTrue();
    }
  }

  @Test
  void aServerThatNeverAnswers() throws Exception {
    try (ServerSocket fake = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      CompletableFuture<Boolean> closedByClient = serve(fake, "");
      long ms =
          connectFailing(
              "redis://127.0.0.1:"
                  + fake.getLocalPort()
                  + "?connect-timeout=500ms&command-timeout=30s",
              "127.0.0.1:" + fake.getLocalPort(),
              "did not answer within 500ms");
      assertThat(ms)
          .as("failed within the connect timeout, not the command timeout")
          .isLessThan(1500);
      assertThat(closedByClient.get(5, TimeUnit.SECONDS))
          .as("the client closed its connection")
          .isTrue();
    }
  }

  /**
   * Runs {@code action} on lock 'job' of a fresh client of the plain server; then checks the lock
   * is free.
   */
  private static ThrowingCallable onPlain(LockOptions options, BadInputCheck.LockAction action) {
    return () -> {
      try (LockClient client = Locks.connect(PLAIN.server().uri())) {
        action.run(client.lock("bad-input-job", options));
      } finally {
        try (LockClient after = Locks.connect(PLAIN.server().uri())) {
          assertThat(after.lock("bad-input-job").tryAcquire())
              .as("the lock is free once the client closed")
              .hasValueSatisfying(Lease::release);
        }
      }
    };
  }

  static Stream<Arguments> cases() {
    String at = "127.0.0.1:" + PLAIN.server().port();
    String g = "127.0.0.1:" + GUARDED.server().port();
    int nobody = ServerProcess.freePort();
    LockOptions notReentrant = LockOptions.builder().reentrant(false).build();
    Class<LockConfigurationException> config = LockConfigurationException.class;
    return Stream.of(
        bad(
            "raw / in the password",
            config,
            connect("redis://:Se/cret1@" + at),
            "redis://:****@" + at,
            "percent-encode"),
        bad(
            "raw # and ? in the password",
            config,
            connect("redis://:p@ss#word?x@" + at),
            "redis://:****@" + at,
            "%23"),
        bad(
            "raw ? in a rediss password",
            config,
            connect("rediss://u:Se?cret5@" + at + "/0"),
            "rediss://u:****@" + at,
            "%3F"),
        bad(
            "misspelt password key",
            config,
            connect("redis://" + at + "?pasword=hunter2-Q"),
            "`pasword` was '****'",
            "valid settings are",
            "namespace"),
        bad(
            "pass key",
            config,
            connect("redis://" + at + "?pass=Se/cret1"),
            "`pass` was '****'",
            "password"),
        bad(
            "auth key",
            config,
            connect("redis://" + at + "?auth=tok3n-Z"),
            "`auth` was '****'",
            "password"),
        bad(
            "typo lese",
            config,
            connect("redis://" + at + "?lese=10s"),
            "`lese`",
            "did you mean `lease`?"),
        bad(
            "typo Lease",
            config,
            connect("redis://" + at + "?Lease=10s"),
            "`Lease`",
            "did you mean `lease`?"),
        bad(
            "lease given twice",
            config,
            connect("redis://" + at + "?lease=10s&lease=20s"),
            "`lease` twice",
            "once"),
        bad(
            "password in user info and query",
            config,
            connect("redis://:Se:cr@t9@" + at + "?password=tok3n-Z"),
            "`password` was given twice",
            "once"),
        bad(
            "empty password",
            config,
            connect("redis://u:@" + at),
            "`password` was ''",
            "must not be empty"),
        bad(
            "user without password",
            config,
            connect("redis://u@" + at),
            "`user` was 'u'",
            "needs a password"),
        bad(
            "database 99999",
            config,
            connect("redis://" + at + "?database=99999"),
            "`database` was '99999'",
            "0 to 9999"),
        bad(
            "database path abc",
            config,
            connect("redis://" + at + "/abc"),
            "`database` was 'abc'",
            "0 to 9999"),
        bad(
            "database twice",
            config,
            connect("redis://" + at + "/1?database=2"),
            "`database` was '2'",
            "once"),
        bad(
            "connect-timeout 999999999999d",
            config,
            connect("redis://" + at + "?connect-timeout=999999999999d"),
            "`connect-timeout` was '999999999999d'",
            "10ms to 5m"),
        bad(
            "command-timeout 0ms",
            config,
            connect("redis://" + at + "?command-timeout=0ms"),
            "`command-timeout` was '0ms'",
            "10ms to 5m"),
        bad(
            "pool-size 0",
            config,
            connect("redis://" + at + "?pool-size=0"),
            "`pool-size` was '0'",
            "1 to 1024"),
        bad(
            "namespace with braces",
            config,
            connect("redis://" + at + "?namespace={x}"),
            "`namespace` was '{x}'",
            "'{'"),
        bad(
            "tls maybe",
            config,
            connect("redis://" + at + "?tls=maybe"),
            "`tls` was 'maybe'",
            "true or false"),
        bad(
            "rediss without tls",
            config,
            connect("rediss://" + at + "?tls=false"),
            "`tls` was 'false'",
            "always uses TLS"),
        bad(
            "two hosts",
            config,
            connect("redis://" + at + "," + g),
            "exactly one host",
            "redlock://"),
        bad(
            "no authority",
            config,
            connect("redis:" + at),
            "`uri` was 'redis:" + at + "'",
            "redis://"),
        bad(
            "lease 999999999999d",
            config,
            connect("redis://" + at + "?lease=999999999999d"),
            "`lease` was '999999999999d'",
            "1ms to 7d"),
        bad(
            "recheck 999999999999d",
            config,
            connect("redis://" + at + "?recheck=999999999999d"),
            "`recheck` was '999999999999d'",
            "1ms to 1h"),
        bad(
            "wrong password",
            BackendUnavailableException.class,
            connect("redis://default:Se:cr@t9@" + g + "?connect-timeout=1s"),
            g,
            "credentials",
            "****",
            "check the user and password"),
        bad(
            "missing password",
            BackendUnavailableException.class,
            connect("redis://" + g + "?connect-timeout=1s"),
            g),
        bad(
            "nothing listening",
            BackendUnavailableException.class,
            connect("redis://:hunter2-Q@127.0.0.1:" + nobody + "?connect-timeout=1s"),
            "127.0.0.1:" + nobody,
            "refused",
            "is redis-server running"),
        bad(
            "TLS to a plain port",
            BackendUnavailableException.class,
            connect("rediss://:tok3n-Z@" + at + "?connect-timeout=500ms"),
            at,
            "TLS",
            "within 500ms"),
        bad(
            "unknown host",
            BackendUnavailableException.class,
            connect("redis://:hunter2-Q@no-such-host.invalid:6379?connect-timeout=1s"),
            "no-such-host.invalid:6379",
            "unknown host"),
        bad(
            "nested acquire() with reentrancy off",
            IllegalStateException.class,
            onPlain(
                notReentrant,
                l -> {
                  try (Lease outer = l.acquire()) {
                    l.acquire();
                  }
                }),
            "lock 'bad-input-job'",
            "held by the calling thread",
            "reentrancy is off"),
        bad(
            "nested acquire(1h) with reentrancy off",
            IllegalStateException.class,
            onPlain(
                notReentrant,
                l -> {
                  try (Lease outer = l.acquire()) {
                    l.acquire(Duration.ofHours(1));
                  }
                }),
            "lock 'bad-input-job'",
            "held by the calling thread"),
        bad(
            "nested tryAcquire(1h) with reentrancy off",
            IllegalStateException.class,
            onPlain(
                notReentrant,
                l -> {
                  try (Lease outer = l.acquire()) {
                    assertThat(l.tryAcquire()).as("tryAcquire() by the holder").isEmpty();
                    l.tryAcquire(Duration.ofHours(1));
                  }
                }),
            "lock 'bad-input-job'",
            "held by the calling thread"),
        bad(
            "acquire(Long.MIN_VALUE s)",
            IllegalArgumentException.class,
            onPlain(LockOptions.defaults(), l -> l.acquire(Duration.ofSeconds(Long.MIN_VALUE))),
            "`timeout`",
            "positive duration"),
        bad(
            "unlock() without lock()",
            IllegalMonitorStateException.class,
            onPlain(LockOptions.defaults(), l -> l.asLock().unlock()),
            "not held by thread"),
        bad(
            "lock() on a closed client",
            IllegalStateException.class,
            () -> {
              LockClient c = Locks.connect(PLAIN.server().uri());
              c.close();
              c.lock("bad-input-job");
            },
            "closed",
            at));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void refusedClearlyInTimeWithoutLeaks(BadInputCheck.Case c) {
    BadInputCheck.check(c, Duration.ofSeconds(10));
  }

  /** Accepts one connection, writes {@code reply}, and completes true when the client closes it. */
  private static CompletableFuture<Boolean> serve(ServerSocket fake, String reply) {
    return CompletableFuture.supplyAsync(
        () -> {
          try (Socket s = fake.accept()) {
            OutputStream out = s.getOutputStream();
            out.write(reply.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[4096];
            while (in.read(buf) >= 0) {
              // drain what the client sends until it closes
            }
            return true;
          } catch (IOException e) {
            return true; // reset by the client: closed as well
          }
        });
  }
}
