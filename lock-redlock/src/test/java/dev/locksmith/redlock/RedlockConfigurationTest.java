package dev.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.LockUri;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Settings are checked once, for all servers, before anything connects. */
class RedlockConfigurationTest {

  @Test
  void everyProblemOnceBeforeConnecting() {
    // nothing listens on these hosts: the settings must be refused before any connection is tried
    assertThatThrownBy(
            () ->
                Locks.connect(
                    "redlock://u:topsecret@h1:1,h2:2,h1:1,h4:4/abc?pool-size=0&drift-factor=2"
                        + "&server-timeout=5m&tls=maybe"))
        .isInstanceOf(LockConfigurationException.class)
        .satisfies(
            e -> {
              List<String> problems = ((LockConfigurationException) e).problems();
              assertThat(String.join("\n", problems))
                  .contains("h1:1 twice")
                  .contains("`database` was 'abc'")
                  .contains("`pool-size` was '0'")
                  .contains("`drift-factor` was '2'")
                  .contains("`server-timeout` was '5m'")
                  .contains("`tls` was 'maybe'")
                  .doesNotContain("topsecret");
              assertThat(problems)
                  .as("each problem once, not once per server: %s", problems)
                  .hasSize(6);
            });
  }

  @Test
  void needsThreeServers() {
    assertThatThrownBy(() -> Locks.connect("redlock://h1:1,h2:2"))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("names 2 hosts and must name at least 3");
  }

  @Test
  void driftAndServerTimeout() {
    BackendConfig config = new BackendConfig(LockUri.parse("redlock://a,b,c"), Map.of(), List.of());
    RedlockSettings s = RedlockSettings.read(config, Duration.ofSeconds(2));
    config.check();
    assertThat(s.driftNanos(Duration.ofSeconds(10))).isEqualTo(Duration.ofMillis(102).toNanos());
    assertThat(s.perServerTimeout(Duration.ofSeconds(1))).isEqualTo(Duration.ofMillis(100));
    assertThat(s.perServerTimeout(Duration.ofSeconds(60))).isEqualTo(Duration.ofSeconds(2));
    assertThat(s.perServerTimeout(Duration.ofMillis(50))).isEqualTo(Duration.ofMillis(10));
    BackendConfig given =
        new BackendConfig(
            LockUri.parse("redlock://a,b,c"),
            Map.of("drift-factor", "0.05", "server-timeout", "30ms"),
            List.of());
    RedlockSettings g = RedlockSettings.read(given, Duration.ofSeconds(2));
    given.check();
    assertThat(g.driftNanos(Duration.ofSeconds(1))).isEqualTo(Duration.ofMillis(52).toNanos());
    assertThat(g.perServerTimeout(Duration.ofSeconds(30))).isEqualTo(Duration.ofMillis(30));
  }

  @Test
  void quorumIsAMajority() {
    assertThat(RedlockBackend.quorum(3)).isEqualTo(2);
    assertThat(RedlockBackend.quorum(4)).isEqualTo(3);
    assertThat(RedlockBackend.quorum(5)).isEqualTo(3);
  }
}
