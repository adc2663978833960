package dev.locksmith;

import static dev.locksmith.BadInputCheck.bad;
import static dev.locksmith.BadInputCheck.connect;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.locksmith.BadInputCheck.Case;
import dev.locksmith.BadInputCheck.LockAction;
import dev.locksmith.local.LocalLockProvider;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import dev.locksmith.spi.LockUri;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Bad input through the public API, one row per case, no server: each must end within a bound with
 * an exception the API documents, whose message names the parameter, the value (secrets redacted)
 * and what is valid; no test secret may appear in any message, cause, toString() or log line; no
 * thread of the client may outlive it, and no lock may stay taken.
 */
class BadInputTest {
  private static final LockOptions NOT_REENTRANT = LockOptions.builder().reentrant(false).build();

  private static ThrowingCallable onLocal(String space, LockOptions options, LockAction action) {
    return () -> {
      try (LockClient client = Locks.connect("local:" + space)) {
        action.run(client.lock("job", options));
      } finally {
        try (LockClient after = Locks.connect("local:" + space)) {
          assertThat(after.lock("job").tryAcquire())
              .as("lock 'job' is free once the client closed")
              .hasValueSatisfying(Lease::release);
        }
      }
    };
  }

  private static Properties props(String... kv) {
    Properties p = new Properties();
    for (int i = 0; i < kv.length; i += 2) {
      p.setProperty(kv[i], kv[i + 1]);
    }
    return p;
  }

  static Stream<Arguments> cases() {
    String lenient = "mem://127.0.0.1:1";
    return Stream.of(
        // ---- URIs
        bad(
            "null uri",
            NullPointerException.class,
            () -> Locks.connect((String) null),
            "`uri`",
            "null",
            "such as"),
        bad("empty uri", LockConfigurationException.class, connect(""), "`uri` was ''", "such as"),
        bad("blank uri", LockConfigurationException.class, connect("   "), "`uri`", "such as"),
        bad(
            "uri with a space in the password",
            LockConfigurationException.class,
            connect("redis://:Se?cret5 x@h:1"),
            "`uri`",
            "spaces"),
        bad(
            "raw / in a redis password",
            LockConfigurationException.class,
            connect("redis://:Se/cret1@127.0.0.1:6379"),
            "`uri` was 'redis://:****@127.0.0.1:6379'",
            "raw '/'",
            "percent-encode",
            "%2F"),
        bad(
            "raw # and ? in a redis password",
            LockConfigurationException.class,
            connect("redis://:p@ss#word?x@127.0.0.1:6379"),
            "redis://:****@127.0.0.1:6379",
            "raw '?'",
            "%23"),
        bad(
            "raw / and ? in a password, before its last @",
            LockConfigurationException.class,
            connect("redis://:hunter2-Q/w?rd@127.0.0.1:6379"),
            "redis://:****@127.0.0.1:6379",
            "percent-encode"),
        bad(
            "raw ? in a password with a query",
            LockConfigurationException.class,
            connect("redis://app:Se?cret5@127.0.0.1:6379?lease=10s"),
            "redis://app:****@127.0.0.1:6379?lease=10s",
            "%3F"),
        bad(
            "raw / in a JDBC password",
            LockConfigurationException.class,
            connect("jdbc:mysql://root:Se/cret1@127.0.0.1:3306/test"),
            "jdbc:mysql://root:****@127.0.0.1:3306/test",
            "percent-encode"),
        bad(
            "MySQL (host=…,password=…) host form with a ':' in the password",
            LockConfigurationException.class,
            connect("jdbc:mysql://(host=127.0.0.1,port=3306,user=root,password=tok3n-Z:1)/test"),
            "password=****",
            "scheme 'jdbc:mysql'"),
        bad(
            "MySQL address=(…)(password=…) host form",
            LockConfigurationException.class,
            connect("jdbc:mysql://address=(host=127.0.0.1)(port=3306)(password=tok3n-Z:2)/test"),
            "password=****",
            "scheme 'jdbc:mysql'"),
        bad(
            "@ and : in a password of an unknown scheme",
            LockConfigurationException.class,
            connect("nosuch://u:Se:cr@t9@h:1"),
            "`uri` was 'nosuch://u:****@h:1'",
            "scheme 'nosuch'",
            "schemes available",
            "local"),
        bad(
            "empty password shows empty",
            LockConfigurationException.class,
            connect("nosuch://u:@h:1"),
            "'nosuch://u:@h:1'",
            "schemes available"),
        bad(
            "percent-encoded secret in an unknown scheme",
            LockConfigurationException.class,
            connect("nosuch://u:p%40ss%23word%3Fx@h:1"),
            "nosuch://u:****@h:1"),
        bad(
            "secret in ?password= of an unknown scheme",
            LockConfigurationException.class,
            connect("nosuch://h:1?password=hunter2-Q"),
            "password=****",
            "scheme 'nosuch'"),
        bad(
            "port out of range",
            LockConfigurationException.class,
            connect("redis://u:hunter2-Q@h:99999"),
            "'99999'",
            "1 to 65535",
            "redis://u:****@h:99999"),
        bad(
            "port not a number",
            LockConfigurationException.class,
            connect("redis://h:abc"),
            "'abc'",
            "1 to 65535"),
        bad(
            "port zero",
            LockConfigurationException.class,
            connect("redis://h:0"),
            "'0'",
            "1 to 65535"),
        bad(
            "ipv6 without ]",
            LockConfigurationException.class,
            connect("redis://[::1:6379"),
            "[::1:6379",
            "']'"),
        bad(
            "empty host between commas",
            LockConfigurationException.class,
            connect("redlock://a:1,,b:2"),
            "empty",
            "host:port"),
        bad(
            "scheme starting with a digit",
            LockConfigurationException.class,
            connect("9redis://h"),
            "`uri`",
            "scheme"),
        bad(
            "jdbc without a database",
            LockConfigurationException.class,
            connect("jdbc:"),
            "`uri`",
            "jdbc:postgresql://"),
        bad(
            "local with an authority",
            LockConfigurationException.class,
            connect("local://host"),
            "local:SPACE"),
        bad(
            "key given twice",
            LockConfigurationException.class,
            connect("local:dup?lease=10s&lease=20s"),
            "`lease` twice",
            "once"),
        // ---- settings in the query
        bad(
            "misspelt password key",
            LockConfigurationException.class,
            connect("local:?pasword=hunter2-Q"),
            "`pasword` was '****'",
            "not a setting",
            "valid settings are"),
        bad(
            "short password key",
            LockConfigurationException.class,
            connect("local:?pass=Se/cret1"),
            "`pass` was '****'"),
        bad(
            "auth key",
            LockConfigurationException.class,
            connect("local:?auth=tok3n-Z"),
            "`auth` was '****'",
            "[application, dropped-leases, fencing-floor, lease"),
        bad(
            "password on local:",
            LockConfigurationException.class,
            connect("local:?password=hunter2-Q"),
            "`password` was '****'",
            "valid settings are"),
        bad(
            "typo lese",
            LockConfigurationException.class,
            connect("local:?lese=10s"),
            "`lese`",
            "did you mean `lease`"),
        bad(
            "typo Lease",
            LockConfigurationException.class,
            connect("local:?Lease=10s"),
            "`Lease`",
            "did you mean `lease`",
            "case-sensitive"),
        bad(
            "typo leas",
            LockConfigurationException.class,
            connect("local:?leas=10s"),
            "did you mean `lease`"),
        bad(
            "typo renw",
            LockConfigurationException.class,
            connect("local:?renw=true"),
            "did you mean `renew`"),
        bad(
            "typo REENTRANT",
            LockConfigurationException.class,
            connect("local:?REENTRANT=false"),
            "did you mean `reentrant`"),
        bad(
            "typo recheck on a provider that passes every key on",
            LockConfigurationException.class,
            () ->
                Locks.connect(LockConfig.fromUri(lenient + "?rechek=1s"), new PassEverything())
                    .close(),
            "`rechek`",
            "did you mean `recheck`"),
        bad(
            "password in user info and query",
            LockConfigurationException.class,
            () ->
                Locks.connect(
                        LockConfig.fromUri("mem://u:hunter2-Q@127.0.0.1:1?password=tok3n-Z"),
                        new PassEverything())
                    .close(),
            "`password` was given twice",
            "once"),
        bad(
            "lease 999999999999d",
            LockConfigurationException.class,
            connect("local:?lease=999999999999d"),
            "`lease` was '999999999999d'",
            "1ms to 7d"),
        bad(
            "recheck 999999999999d",
            LockConfigurationException.class,
            connect("local:?recheck=999999999999d"),
            "`recheck` was '999999999999d'",
            "1ms to 1h"),
        bad(
            "lease of 13 digits",
            LockConfigurationException.class,
            connect("local:?lease=1000000000000d"),
            "`lease`",
            "1ms to 7d"),
        bad(
            "lease ISO overflow",
            LockConfigurationException.class,
            connect("local:?lease=PT9999999999999999999H"),
            "`lease`",
            "1ms to 7d"),
        bad(
            "lease zero",
            LockConfigurationException.class,
            connect("local:?lease=0s"),
            "`lease` was '0s'",
            "1ms to 7d"),
        bad(
            "lease just below",
            LockConfigurationException.class,
            connect("local:?lease=PT0.0009S"),
            "'PT0.0009S'",
            "1ms to 7d"),
        bad(
            "lease just above",
            LockConfigurationException.class,
            connect("local:?lease=PT168H0.001S"),
            "1ms to 7d"),
        bad(
            "lease 8d",
            LockConfigurationException.class,
            connect("local:?lease=8d"),
            "'8d'",
            "1ms to 7d"),
        bad(
            "lease negative",
            LockConfigurationException.class,
            connect("local:?lease=-5s"),
            "'-5s'",
            "1ms to 7d"),
        bad(
            "recheck zero",
            LockConfigurationException.class,
            connect("local:?recheck=0ms"),
            "`recheck`",
            "1ms to 1h"),
        bad(
            "recheck 61m",
            LockConfigurationException.class,
            connect("local:?recheck=61m"),
            "'61m'",
            "1ms to 1h"),
        bad(
            "renew maybe",
            LockConfigurationException.class,
            connect("local:?renew=maybe"),
            "`renew` was 'maybe'",
            "true or false"),
        bad(
            "reentrant yes",
            LockConfigurationException.class,
            connect("local:?reentrant=yes"),
            "`reentrant` was 'yes'",
            "true or false"),
        bad(
            "provider empty",
            LockConfigurationException.class,
            connect("local:?provider="),
            "`provider` was ''",
            "class name"),
        bad(
            "provider unknown",
            LockConfigurationException.class,
            connect("local:?provider=com.example.Nope"),
            "`provider` was 'com.example.Nope'",
            "providers for it"),
        // ---- properties and environment
        bad(
            "null properties",
            NullPointerException.class,
            () -> LockConfig.fromProperties(null),
            "`properties` was null",
            "locksmith.uri"),
        bad(
            "properties without uri",
            LockConfigurationException.class,
            () -> LockConfig.fromProperties(props("locksmith.lease", "5s")),
            "`locksmith.uri` was missing",
            "such as"),
        bad(
            "properties with a bad lease",
            LockConfigurationException.class,
            () ->
                LockConfig.fromProperties(
                    props("locksmith.uri", "local:", "locksmith.lease", "forever")),
            "`lease` was 'forever'",
            "1ms to 7d"),
        bad(
            "properties with a misspelt secret",
            LockConfigurationException.class,
            () ->
                Locks.connect(
                        LockConfig.fromProperties(
                            props("locksmith.uri", "local:", "locksmith.pasword", "hunter2-Q")))
                    .close(),
            "`pasword` was '****'",
            "valid settings are"),
        bad(
            "properties with a secret uri",
            LockConfigurationException.class,
            () -> LockConfig.fromProperties(props("locksmith.uri", "redis://:Se/cret1@h:1")),
            "redis://:****@h:1",
            "percent-encode"),
        bad(
            "environment without uri",
            LockConfigurationException.class,
            () -> LockConfig.fromEnvironment(Map.of("LOCKSMITH_LEASE", "5s"), new Properties()),
            "`LOCKSMITH_URI` was missing",
            "such as"),
        bad(
            "environment lease too long",
            LockConfigurationException.class,
            () ->
                LockConfig.fromEnvironment(
                    Map.of("LOCKSMITH_URI", "local:", "LOCKSMITH_LEASE", "999999999999d"),
                    new Properties()),
            "`lease` was '999999999999d'",
            "1ms to 7d"),
        bad(
            "environment secret uri",
            LockConfigurationException.class,
            () ->
                LockConfig.fromEnvironment(
                    Map.of("LOCKSMITH_URI", "redis://u:p@ss#word?x@h:1"), new Properties()),
            "redis://u:****@h:1",
            "percent-encode"),
        bad(
            "null config",
            NullPointerException.class,
            () -> Locks.connect((LockConfig) null),
            "`config` was null",
            "LockConfig"),
        bad(
            "null provider",
            NullPointerException.class,
            () -> Locks.connect(LockConfig.fromUri("local:"), null),
            "`provider` was null",
            "LockProvider"),
        bad(
            "null option key",
            NullPointerException.class,
            () -> LockConfig.builder().option(null, "x"),
            "`key` was null",
            "such as lease"),
        // ---- names
        bad(
            "null name",
            NullPointerException.class,
            () -> {
              try (LockClient c = Locks.connect("local:names")) {
                c.lock(null);
              }
            },
            "`name` was null",
            "1 to 255"),
        bad(
            "empty name",
            IllegalArgumentException.class,
            () -> {
              try (LockClient c = Locks.connect("local:names")) {
                c.lock("");
              }
            },
            "`name` was ''",
            "1 to 255"),
        bad(
            "name of 256",
            IllegalArgumentException.class,
            () -> {
              try (LockClient c = Locks.connect("local:names")) {
                c.lock("n".repeat(256));
              }
            },
            "`name`",
            "256 characters",
            "at most 255"),
        bad(
            "name with NUL",
            IllegalArgumentException.class,
            () -> {
              try (LockClient c = Locks.connect("local:names")) {
                c.lock("a\u0000b");
              }
            },
            "`name` was 'a\\u0000b'",
            "U+0000",
            "without control characters"),
        bad(
            "name with an unpaired surrogate",
            IllegalArgumentException.class,
            () -> {
              try (LockClient c = Locks.connect("local:names")) {
                c.lock("a\uD800");
              }
            },
            "`name`",
            "U+D800",
            "valid Unicode"),
        // ---- durations in code
        bad(
            "lease null",
            NullPointerException.class,
            () -> LockOptions.builder().lease(null),
            "`lease` was null",
            "1ms to 7d"),
        bad(
            "lease Long.MAX_VALUE s",
            IllegalArgumentException.class,
            () -> LockOptions.builder().lease(Duration.ofSeconds(Long.MAX_VALUE)),
            "`lease` was '9223372036854775807s'",
            "1ms to 7d"),
        bad(
            "lease Long.MIN_VALUE s",
            IllegalArgumentException.class,
            () -> LockOptions.builder().lease(Duration.ofSeconds(Long.MIN_VALUE)),
            "`lease` was '-9223372036854775808s'",
            "1ms to 7d"),
        bad(
            "lease 7d + 1ns",
            IllegalArgumentException.class,
            () -> LockOptions.builder().lease(Duration.ofDays(7).plusNanos(1)),
            "`lease`",
            "1ms to 7d"),
        bad(
            "config lease under 1ms",
            IllegalArgumentException.class,
            () -> LockConfig.builder().lease(Duration.ofNanos(999_999)),
            "`lease` was '0.999999ms'",
            "1ms to 7d"),
        bad(
            "recheck Long.MAX_VALUE s",
            IllegalArgumentException.class,
            () -> LockConfig.builder().recheck(Duration.ofSeconds(Long.MAX_VALUE)),
            "`recheck` was",
            "1ms to 1h"),
        bad(
            "acquire(null)",
            NullPointerException.class,
            onLocal("t1", LockOptions.defaults(), l -> l.acquire(null)),
            "`timeout` was null",
            "positive duration"),
        bad(
            "acquire(Long.MIN_VALUE s)",
            IllegalArgumentException.class,
            onLocal(
                "t2", LockOptions.defaults(), l -> l.acquire(Duration.ofSeconds(Long.MIN_VALUE))),
            "`timeout` was '-9223372036854775808s'",
            "zero (one attempt) or a positive duration"),
        bad(
            "acquire(-1ns)",
            IllegalArgumentException.class,
            onLocal("t3", LockOptions.defaults(), l -> l.acquire(Duration.ofNanos(-1))),
            "`timeout` was '-0.000001ms'",
            "positive duration"),
        bad(
            "tryAcquire(Long.MIN_VALUE s)",
            IllegalArgumentException.class,
            onLocal(
                "t4",
                LockOptions.defaults(),
                l -> l.tryAcquire(Duration.ofSeconds(Long.MIN_VALUE))),
            "`timeout`",
            "positive duration"),
        bad(
            "acquireAsync(Long.MIN_VALUE s)",
            IllegalArgumentException.class,
            onLocal(
                "t5",
                LockOptions.defaults(),
                l -> l.acquireAsync(Duration.ofSeconds(Long.MIN_VALUE))),
            "`timeout`",
            "positive duration"),
        bad(
            "acquireAsync(null)",
            NullPointerException.class,
            onLocal("t6", LockOptions.defaults(), l -> l.acquireAsync(null)),
            "`timeout` was null"),
        bad(
            "tryLock with a null unit",
            NullPointerException.class,
            onLocal("t7", LockOptions.defaults(), l -> l.asLock().tryLock(1, null)),
            "`unit` was null",
            "TimeUnit"),
        // ---- misuse
        bad(
            "nested acquire() with reentrancy off",
            IllegalStateException.class,
            onLocal(
                "nest1",
                NOT_REENTRANT,
                l -> {
                  try (Lease outer = l.acquire()) {
                    l.acquire();
                  }
                }),
            "lock 'job'",
            "held by the calling thread",
            "reentrancy is off"),
        bad(
            "nested acquire(1h) with reentrancy off",
            IllegalStateException.class,
            onLocal(
                "nest2",
                NOT_REENTRANT,
                l -> {
                  try (Lease outer = l.acquire()) {
                    l.acquire(Duration.ofHours(1));
                  }
                }),
            "lock 'job'",
            "held by the calling thread",
            "reentrancy is off"),
        bad(
            "nested tryAcquire(1h) with reentrancy off",
            IllegalStateException.class,
            onLocal(
                "nest3",
                NOT_REENTRANT,
                l -> {
                  try (Lease outer = l.acquire()) {
                    l.tryAcquire(Duration.ofHours(1));
                  }
                }),
            "lock 'job'",
            "held by the calling thread"),
        bad(
            "nested acquire(Long.MAX_VALUE s) with reentrancy off",
            IllegalStateException.class,
            onLocal(
                "nest4",
                NOT_REENTRANT,
                l -> {
                  try (Lease outer = l.acquire()) {
                    l.acquire(Duration.ofSeconds(Long.MAX_VALUE));
                  }
                }),
            "lock 'job'",
            "held by the calling thread"),
        bad(
            "lock() on a closed client",
            IllegalStateException.class,
            () -> {
              LockClient c = Locks.connect("local:closed");
              c.close();
              c.lock("job");
            },
            "closed",
            "local:closed"),
        bad(
            "acquire on a closed client",
            IllegalStateException.class,
            () -> {
              LockClient c = Locks.connect("local:closed2");
              DistributedLock lock = c.lock("job");
              c.close();
              lock.acquire(Duration.ofSeconds(1));
            },
            "closed",
            "local:closed2"),
        bad(
            "unlock() without lock()",
            IllegalMonitorStateException.class,
            onLocal("view", LockOptions.defaults(), l -> l.asLock().unlock()),
            "lock 'job'",
            "not held by thread"),
        bad(
            "release twice then unlock",
            IllegalMonitorStateException.class,
            onLocal(
                "twice",
                LockOptions.defaults(),
                l -> {
                  Lease lease = l.acquire();
                  assertThat(lease.release()).isTrue();
                  assertThat(lease.release()).as("the second release").isFalse();
                  l.asLock().unlock();
                }),
            "lock 'job'",
            "not held"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void refusedClearlyInTimeWithoutLeaks(Case c) {
    BadInputCheck.check(c, Duration.ofSeconds(10));
  }

  @Test
  void theHoldingThreadsTryAcquireAnswersEmptyAndOthersAreUnaffected() throws Exception {
    try (LockClient c = Locks.connect("local:nested-try")) {
      DistributedLock lock = c.lock("job", NOT_REENTRANT);
      Lease outer = lock.acquire();
      assertThat(lock.tryAcquire()).as("tryAcquire() by the holder").isEmpty();
      assertThat(lock.tryAcquire(Duration.ZERO)).as("tryAcquire(0) by the holder").isEmpty();
      java.util.concurrent.CompletableFuture<Lease> other =
          lock.acquireAsync(Duration.ofSeconds(5));
      assertThat(catchThrowable(lock::acquire)).isInstanceOf(IllegalStateException.class);
      assertThat(other).as("another waiter is still waiting").isNotDone();
      outer.release();
      try (Lease next = other.get(5, TimeUnit.SECONDS)) {
        assertThat(next.fencingToken()).isGreaterThan(outer.fencingToken());
      }
      assertThat(lock.tryAcquire()).as("free again").hasValueSatisfying(Lease::release);
    }
  }

  @Test
  void hugeTimeoutsAreValidAndThrowNothingForeign() throws Exception {
    assertTimeoutPreemptively(
        Duration.ofSeconds(10),
        () -> {
          try (LockClient c = Locks.connect("local:huge")) {
            DistributedLock lock = c.lock("job");
            try (Lease lease = lock.acquire(Duration.ofSeconds(Long.MAX_VALUE))) {
              assertThat(lease.isValid()).isTrue();
            }
            Optional<Lease> tried = lock.tryAcquire(Duration.ofSeconds(Long.MAX_VALUE));
            assertThat(tried).hasValueSatisfying(Lease::release);
            try (Lease async =
                lock.acquireAsync(Duration.ofSeconds(Long.MAX_VALUE)).get(5, TimeUnit.SECONDS)) {
              assertThat(async.isValid()).isTrue();
            }
            assertThat(lock.asLock().tryLock(Long.MAX_VALUE, TimeUnit.DAYS)).isTrue();
            lock.asLock().unlock();
          }
        });
  }

  @Test
  void redactionFollowsTheUrisStructure() {
    assertThat(LockUri.redact("failed: 'redis://:Se/cret1@127.0.0.1:6379' x"))
        .isEqualTo("failed: 'redis://:****@127.0.0.1:6379' x");
    assertThat(LockUri.redact("redis://u:p@ss#word?x@h:1?lease=1s"))
        .isEqualTo("redis://u:****@h:1?lease=1s");
    assertThat(LockUri.redact("redis://u:@h:1"))
        .as("an empty password stays empty")
        .isEqualTo("redis://u:@h:1");
    assertThat(LockUri.redact("jdbc:postgresql://h/db?user=a@b&password=hunter2-Q"))
        .isEqualTo("jdbc:postgresql://h/db?user=a@b&password=****");
    assertThat(LockUri.redact("jdbc:mysql://address=(host=h)(port=1)(password=hunter2-Q)/db"))
        .isEqualTo("jdbc:mysql://address=(host=h)(port=1)(password=****)/db");
    assertThat(LockUri.redact("jdbc:mysql://(host=h,password=hunter2-Q,port=1)/db"))
        .isEqualTo("jdbc:mysql://(host=h,password=****,port=1)/db");
    assertThat(LockUri.parse("redis://u:Se:cr%40t9@h:1").password()).isEqualTo("Se:cr@t9");
    assertThat(LockUri.parse("redis://u:Se:cr@t9@h:1").password())
        .as("the last @ ends the user info")
        .isEqualTo("Se:cr@t9");
    assertThat(LockUri.parse("jdbc:postgresql://h/db?user=a@b").query())
        .containsEntry("user", "a@b");
    assertThat(LockUri.parse("jdbc:postgresql://h/db?user=a@b").hosts())
        .extracting(LockUri.HostPort::host)
        .containsExactly("h");
  }

  /** A provider that, like JDBC's, accepts every key and passes the unknown ones on. */
  static final class PassEverything implements LockProvider {
    @Override
    public Set<String> schemes() {
      return Set.of("mem");
    }

    @Override
    public Set<String> optionNames() {
      return Set.of("password", "table");
    }

    @Override
    public boolean acceptsOption(String key) {
      return true;
    }

    @Override
    public LockBackend open(BackendConfig config, BackendContext context) {
      config.check();
      return new LocalLockProvider()
          .open(new BackendConfig(LockUri.parse("local:mem"), Map.of(), List.of()), context);
    }
  }
}
