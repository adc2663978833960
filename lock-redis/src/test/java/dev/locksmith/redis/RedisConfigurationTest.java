package dev.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisSettings;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.LockUri;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Settings are read and checked before anything connects; every problem is reported at once. */
class RedisConfigurationTest {

  private static RedisSettings read(String uri, Map<String, String> options) {
    BackendConfig config = new BackendConfig(LockUri.parse(uri), options, List.of());
    RedisSettings s = RedisSettings.read(config);
    config.check();
    return s;
  }

  @Test
  void defaults() {
    RedisSettings s = read("redis://localhost", Map.of());
    assertThat(s.port()).isEqualTo(6379);
    assertThat(s.database()).isZero();
    assertThat(s.tls()).isFalse();
    assertThat(s.namespace()).isEqualTo("locksmith:");
    assertThat(s.connectTimeout()).isEqualTo(Duration.ofSeconds(2));
    assertThat(s.commandTimeout()).isEqualTo(Duration.ofSeconds(2));
    assertThat(s.poolSize()).isEqualTo(8);
    assertThat(s.user()).isNull();
    assertThat(s.password()).isNull();
  }

  @Test
  void everythingGiven() {
    RedisSettings s =
        read(
            "rediss://app:p%40ss@cache.example:6380/3",
            Map.of(
                "namespace",
                "orders:",
                "pool-size",
                "32",
                "connect-timeout",
                "500ms",
                "command-timeout",
                "1s"));
    assertThat(s.host()).isEqualTo("cache.example");
    assertThat(s.port()).isEqualTo(6380);
    assertThat(s.user()).isEqualTo("app");
    assertThat(s.password()).isEqualTo("p@ss");
    assertThat(s.database()).isEqualTo(3);
    assertThat(s.tls()).isTrue();
    assertThat(s.namespace()).isEqualTo("orders:");
    assertThat(s.poolSize()).isEqualTo(32);
    assertThat(s.connectTimeout()).isEqualTo(Duration.ofMillis(500));
    assertThat(s.toString()).doesNotContain("p%40ss").contains("****");
  }

  @Test
  void sentinelUri() {
    RedisSettings s =
        read(
            "rediss-sentinel://app:pw-1@s1,s2:26380/orders-master/2",
            Map.of(
                "sentinel-user",
                "ops",
                "sentinel-password",
                "sentinel-pw-2",
                "wait-replicas",
                "1",
                "wait-timeout",
                "50ms"));
    assertThat(s.topology()).isEqualTo(RedisSettings.Topology.SENTINEL);
    assertThat(s.seedList()).isEqualTo("s1:26379,s2:26380");
    assertThat(s.masterName()).isEqualTo("orders-master");
    assertThat(s.database()).isEqualTo(2);
    assertThat(s.tls()).isTrue();
    assertThat(s.user()).isEqualTo("app");
    assertThat(s.password()).isEqualTo("pw-1");
    assertThat(s.waitReplicas()).isEqualTo(1);
    assertThat(s.waitTimeout()).isEqualTo(Duration.ofMillis(50));
    assertThat(s.toString()).doesNotContain("pw-1").doesNotContain("sentinel-pw-2");
  }

  @Test
  void clusterUri() {
    RedisSettings s = read("redis-cluster://n1:7000,n2", Map.of());
    assertThat(s.topology()).isEqualTo(RedisSettings.Topology.CLUSTER);
    assertThat(s.seedList()).isEqualTo("n1:7000,n2:6379");
    assertThat(s.database()).isZero();
    assertThat(s.tls()).isFalse();
    assertThat(s.waitReplicas()).as("wait-replicas by default").isZero();
    assertThat(read("redis://localhost", Map.of()).topology())
        .isEqualTo(RedisSettings.Topology.SINGLE);
  }

  @Test
  void topologyProblemsAtOnceWithSecretsRedacted() {
    assertThatThrownBy(
            () ->
                read(
                    "redis-sentinel://s1:26379,s1:26379/",
                    Map.of("sentinel-password", "", "wait-replicas", "65", "wait-timeout", "2m")))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("s1:26379 twice")
        .hasMessageContaining("names no master")
        .hasMessageContaining("`sentinel-password` was ''")
        .hasMessageContaining("`wait-replicas` was '65'")
        .hasMessageContaining("`wait-timeout` was '2m'");
    assertThatThrownBy(
            () ->
                read(
                    "redis-cluster://:Se%2Fcret@n1:7000/1",
                    Map.of("sentinel-password", "hunter2-Q")))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("only database 0")
        .hasMessageContaining("`sentinel-password` was '****'")
        .hasMessageNotContaining("hunter2-Q")
        .hasMessageNotContaining("Se/cret")
        .hasMessageNotContaining("Se%2Fcret");
  }

  @Test
  void everyProblemAtOnceBeforeConnecting() {
    // nothing listens on these hosts: the settings must be refused before any connection is tried
    assertThatThrownBy(
            () ->
                Locks.connect(
                    "redis://u:topsecret@h1:1,h2:2/abc?pool-size=0&namespace={x}"
                        + "&connect-timeout=-1s&command-timeout=forever&tls=maybe&colour=blue"))
        .isInstanceOf(LockConfigurationException.class)
        .satisfies(
            e -> {
              List<String> problems = ((LockConfigurationException) e).problems();
              assertThat(String.join("\n", problems))
                  .contains("exactly one host", "redlock://")
                  .contains("`database` was 'abc'")
                  .contains("`pool-size` was '0'")
                  .contains("`namespace` was '{x}'")
                  .contains("`connect-timeout` was '-1s'")
                  .contains("`command-timeout` was 'forever'")
                  .contains("`tls` was 'maybe'")
                  .contains("`colour` was '****'")
                  .doesNotContain("topsecret");
              assertThat(problems).hasSize(8);
            });
  }

  @Test
  void databaseGivenTwiceDifferently() {
    assertThatThrownBy(() -> read("redis://localhost/2", Map.of("database", "5")))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("`database` was '5'");
  }

  @Test
  void userWithoutPassword() {
    assertThatThrownBy(() -> read("redis://alice@localhost", Map.of()))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("`user` was 'alice'");
  }

  @Test
  void passwordFromAnOptionIsRedactedInMessages() {
    assertThatThrownBy(() -> read("redis://localhost", Map.of("password", "", "pool-size", "x")))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("`password`")
        .hasMessageContaining("`pool-size`");
  }

  @Test
  void severalServersShareOneReadingOfTheOptions() {
    BackendConfig config =
        new BackendConfig(
            LockUri.parse("redlock://u:pw@a:1,b,[::1]:3/2"),
            Map.of("namespace", "ns:", "pool-size", "4"),
            List.of());
    List<RedisSettings> each = RedisSettings.readEach(config, 3, "redlock://h1,h2,h3");
    config.check();
    assertThat(each)
        .extracting(RedisSettings::endpoint)
        .containsExactly("a:1", "b:6379", "[::1]:3");
    assertThat(each)
        .allSatisfy(
            s -> {
              assertThat(s.database()).isEqualTo(2);
              assertThat(s.namespace()).isEqualTo("ns:");
              assertThat(s.poolSize()).isEqualTo(4);
              assertThat(s.user()).isEqualTo("u");
              assertThat(s.toString()).doesNotContain("pw");
            });
  }

  @Test
  void severalServersReportEachBadOptionOnce() {
    BackendConfig config =
        new BackendConfig(
            LockUri.parse("redlock://a:1,b:2,a:1/x"),
            Map.of("pool-size", "0", "tls", "maybe"),
            List.of());
    RedisSettings.readEach(config, 3, "redlock://h1,h2,h3");
    assertThatThrownBy(config::check)
        .isInstanceOf(LockConfigurationException.class)
        .satisfies(
            e -> {
              List<String> problems = ((LockConfigurationException) e).problems();
              assertThat(String.join("\n", problems))
                  .contains(
                      "a:1 twice",
                      "`database` was 'x'",
                      "`pool-size` was '0'",
                      "`tls` was 'maybe'");
              assertThat(problems).hasSize(4);
            });
  }

  @Test
  void severalServersNeedEnoughHosts() {
    BackendConfig config =
        new BackendConfig(LockUri.parse("redlock://a:1,b:2"), Map.of(), List.of());
    RedisSettings.readEach(config, 3, "redlock://h1,h2,h3");
    assertThatThrownBy(config::check)
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("names 2 hosts and must name at least 3");
  }

  @Test
  void keysOfOneLockShareAHashTagWhateverTheName() {
    RedisKeys keys = new RedisKeys("ns:");
    for (String name :
        List.of("plain", "}starts-with-brace", "has{both}braces", "{x}", "ключ 🔒")) {
      assertThat(hashTag(keys.owner(name)))
          .isEqualTo(hashTag(keys.token(name)))
          .isEqualTo(hashTag(keys.legacyFence(name)))
          .isEqualTo(hashTag(keys.queue(name)))
          .isEqualTo(hashTag(keys.releasedChannel(name)))
          .isNotEmpty()
          .startsWith("ns:");
    }
  }

  /**
   * Redis Cluster's rule: the text between the first '{' and the next '}', if non-empty, else the
   * whole key.
   */
  private static String hashTag(String key) {
    int open = key.indexOf('{');
    if (open < 0) {
      return key;
    }
    int close = key.indexOf('}', open + 1);
    if (close < 0 || close == open + 1) {
      return key;
    }
    return key.substring(open + 1, close);
  }
}
