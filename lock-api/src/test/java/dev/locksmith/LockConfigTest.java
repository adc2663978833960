package dev.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

class LockConfigTest {
  @Test
  void readsSettingsFromTheQuery() {
    LockConfig c =
        LockConfig.fromUri(
            "local:q?lease=10s&renew=false&reentrant=false&recheck=200ms&pool-size=4");
    assertThat(c.defaults().lease()).isEqualTo(Duration.ofSeconds(10));
    assertThat(c.defaults().autoRenew()).isFalse();
    assertThat(c.defaults().reentrant()).isFalse();
    assertThat(c.recheck()).isEqualTo(Duration.ofMillis(200));
    assertThat(c.backendOptions()).containsExactly(Map.entry("pool-size", "4"));
  }

  @Test
  void defaultsAreSafe() {
    LockConfig c = LockConfig.fromUri("local:");
    assertThat(c.defaults()).isEqualTo(LockOptions.defaults());
    assertThat(c.defaults().lease()).isEqualTo(Duration.ofSeconds(30));
    assertThat(c.defaults().autoRenew()).isTrue();
    assertThat(c.recheck()).isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void reportsEveryProblemAtOnce() {
    assertThatThrownBy(() -> LockConfig.fromUri("local:?lease=-5s&renew=maybe&recheck=2h"))
        .isInstanceOfSatisfying(
            LockConfigurationException.class,
            e ->
                assertThat(e.problems())
                    .containsExactly(
                        "`lease` was '-5s' but it must be a duration from 1ms to 7d, such as 30s",
                        "`renew` was 'maybe' but it must be true or false",
                        "`recheck` was '2h' but it must be a duration from 1ms to 1h, such as 1s"));
  }

  @Test
  void typedSettersWinOverStringsAndCheckAtOnce() {
    LockConfig c = LockConfig.builder().uri("local:?lease=10s&renew=false").autoRenew(true).build();
    assertThat(c.defaults().autoRenew()).isTrue();
    assertThat(c.defaults().lease()).isEqualTo(Duration.ofSeconds(10));
    assertThatThrownBy(() -> LockConfig.builder().lease(Duration.ZERO))
        .hasMessageContaining("`lease` was '0ms'");
    assertThatThrownBy(() -> LockConfig.builder().recheck(Duration.ofHours(2)))
        .hasMessageContaining("`recheck`");
    assertThatThrownBy(() -> LockConfig.builder().uri(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`uri`");
    assertThatThrownBy(() -> LockConfig.builder().option("", "x")).hasMessageContaining("`key`");
    assertThatThrownBy(() -> LockConfig.builder().build())
        .hasMessageContaining("`uri` was missing");
  }

  @Test
  void readsProperties() {
    Properties p = new Properties();
    p.setProperty("locksmith.uri", "local:props");
    p.setProperty("locksmith.lease", "2s");
    p.setProperty("unrelated", "x");
    LockConfig c = LockConfig.fromProperties(p);
    assertThat(c.uri().path()).isEqualTo("props");
    assertThat(c.defaults().lease()).isEqualTo(Duration.ofSeconds(2));
    assertThatThrownBy(() -> LockConfig.fromProperties(new Properties()))
        .hasMessageContaining("`locksmith.uri` was missing");
  }

  @Test
  void readsTheEnvironmentWithSystemPropertiesFirst() {
    Properties sys = new Properties();
    sys.setProperty("locksmith.lease", "3s");
    LockConfig c =
        LockConfig.fromEnvironment(
            Map.of(
                "LOCKSMITH_URI",
                "local:env",
                "LOCKSMITH_LEASE",
                "9s",
                "LOCKSMITH_POOL_SIZE",
                "4",
                "PATH",
                "/bin"),
            sys);
    assertThat(c.uri().path()).isEqualTo("env");
    assertThat(c.defaults().lease()).isEqualTo(Duration.ofSeconds(3));
    assertThat(c.backendOptions()).containsEntry("pool-size", "4");
    assertThat(c.isLenient("pool-size"))
        .as("an unknown environment variable is ignored, not refused")
        .isTrue();
    assertThatThrownBy(() -> LockConfig.fromEnvironment(Map.of(), new Properties()))
        .hasMessageContaining("LOCKSMITH_URI");
  }

  @Test
  void hidesSecretsInToString() {
    LockConfig c = LockConfig.builder().uri("local:?x=1").option("password", "hunter2").build();
    assertThat(c.toString()).doesNotContain("hunter2").contains("password=****");
  }
}
