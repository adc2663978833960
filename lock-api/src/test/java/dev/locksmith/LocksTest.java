package dev.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.local.LocalLockProvider;
import org.junit.jupiter.api.Test;

class LocksTest {
  @Test
  void unknownSchemeNamesTheSchemeWhatIsAvailableAndTheArtifact() {
    assertThatThrownBy(() -> Locks.connect("redis://u:pw@localhost:6379"))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("scheme 'redis'")
        .hasMessageContaining("local")
        .hasMessageContaining("dev.locksmith:lock-redis")
        .hasMessageNotContaining(":pw@");
    assertThatThrownBy(() -> Locks.connect("jdbc:mysql://db/app?password=pw"))
        .hasMessageContaining("dev.locksmith:lock-jdbc")
        .hasMessageNotContaining("=pw");
    // the Sentinel and Cluster forms come from lock-redis too
    assertThatThrownBy(() -> Locks.connect("redis-sentinel://u:pw@s1:26379,s2:26379/mymaster"))
        .hasMessageContaining("scheme 'redis-sentinel'")
        .hasMessageContaining("dev.locksmith:lock-redis")
        .hasMessageNotContaining(":pw@");
    assertThatThrownBy(() -> Locks.connect("rediss-cluster://n1:7000"))
        .hasMessageContaining("dev.locksmith:lock-redis");
    assertThatThrownBy(() -> Locks.connect("mystore://h"))
        .hasMessageContaining("'mystore'")
        .hasMessageContaining("a provider for");
  }

  @Test
  void schemesAreCaseInsensitive() {
    try (LockClient c = Locks.connect("LOCAL:case")) {
      assertThat(c.guarantees().has(Guarantees.Feature.FENCING)).isTrue();
    }
  }

  @Test
  void unknownOptionListsTheValidOnesAndLeavesNothingBehind() {
    assertThatThrownBy(() -> Locks.connect("local:?colour=red&lease=oops"))
        .isInstanceOfSatisfying(
            LockConfigurationException.class, e -> assertThat(e.problems()).hasSize(1))
        .hasMessageContaining("`lease` was 'oops'");
    assertThatThrownBy(() -> Locks.connect("local:?colour=red"))
        .hasMessageContaining("`colour` was '****' but it is not a setting of scheme 'local'")
        .hasMessageContaining(
            "[application, dropped-leases, fencing-floor, lease, provider, recheck, reentrant,"
                + " renew]");
    assertThatThrownBy(() -> Locks.connect("local://host")).hasMessageContaining("local:SPACE");
  }

  @Test
  void twoProvidersForOneSchemeAskForAChoice() {
    assertThatThrownBy(() -> Locks.connect("twin:"))
        .hasMessageContaining("2 providers serve scheme 'twin'")
        .hasMessageContaining(TwinProviders.A.class.getName())
        .hasMessageContaining("provider=");
    try (LockClient c =
        Locks.connect("twin:?provider=" + TwinProviders.B.class.getName() + "&color=blue")) {
      assertThat(c.lock("x").tryAcquire()).isPresent();
    }
    assertThatThrownBy(() -> Locks.connect("twin:?provider=no.Such"))
        .hasMessageContaining("`provider` was 'no.Such'");
  }

  @Test
  void connectsThroughAGivenProvider() {
    try (LockClient c = Locks.connect(LockConfig.fromUri("local:given"), new LocalLockProvider())) {
      assertThat(c.lock("x").tryAcquire()).isPresent();
    }
    assertThatThrownBy(() -> Locks.connect(LockConfig.fromUri("twin:"), new LocalLockProvider()))
        .hasMessageContaining("serves only the schemes [local]");
    assertThatThrownBy(() -> Locks.connect((LockConfig) null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`config`");
    assertThat(Locks.schemes()).contains("local", "twin");
  }

  @Test
  void unrelatedEnvironmentVariablesNeverReachAProviderThatAcceptsEveryKey() {
    java.util.Map<String, String> seen = new java.util.concurrent.ConcurrentHashMap<>();
    dev.locksmith.spi.LockProvider acceptsAll =
        new dev.locksmith.spi.LockProvider() {
          @Override
          public java.util.Set<String> schemes() {
            return java.util.Set.of("local");
          }

          @Override
          public java.util.Set<String> optionNames() {
            return java.util.Set.of("color");
          }

          @Override
          public boolean acceptsOption(String key) {
            return true;
          }

          @Override
          public dev.locksmith.spi.LockBackend open(
              dev.locksmith.spi.BackendConfig config, dev.locksmith.spi.BackendContext context) {
            seen.putAll(config.options());
            return new LocalLockProvider()
                .open(
                    new dev.locksmith.spi.BackendConfig(
                        config.uri(), java.util.Map.of(), java.util.List.of()),
                    context);
          }
        };
    LockConfig config =
        LockConfig.fromEnvironment(
            java.util.Map.of(
                "LOCKSMITH_URI",
                "local:env-leak?sslmode=require",
                "LOCKSMITH_TCK_TIME_SCALE",
                "2",
                "LOCKSMITH_COLOR",
                "blue"),
            new java.util.Properties());
    try (LockClient c = Locks.connect(config, acceptsAll)) {
      assertThat(seen)
          .containsEntry("color", "blue")
          .containsEntry("sslmode", "require")
          .doesNotContainKey("tck-time-scale");
    }
  }

  @Test
  void findsTheProviderConnectWouldUse() {
    assertThat(Locks.provider(LockConfig.fromUri("local:"))).isInstanceOf(LocalLockProvider.class);
    assertThatThrownBy(() -> Locks.provider(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`config`");
    assertThatThrownBy(() -> Locks.provider(LockConfig.fromUri("nosuch://h:1")))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("scheme 'nosuch'");
  }
}
