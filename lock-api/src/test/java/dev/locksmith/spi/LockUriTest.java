package dev.locksmith.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class LockUriTest {
  @Test
  void readsRedisWithCredentialsAndDatabase() {
    LockUri u = LockUri.parse("REDIS://app:s3cr%40t@cache.local:6380/2?lease=10s");
    assertThat(u.scheme()).isEqualTo("redis");
    assertThat(u.user()).isEqualTo("app");
    assertThat(u.password()).isEqualTo("s3cr@t");
    assertThat(u.hosts()).hasSize(1);
    assertThat(u.hosts().get(0).host()).isEqualTo("cache.local");
    assertThat(u.hosts().get(0).port()).isEqualTo(6380);
    assertThat(u.path()).isEqualTo("/2");
    assertThat(u.query()).containsEntry("lease", "10s");
    assertThat(u.toString()).doesNotContain("s3cr").contains("app:****@");
  }

  @Test
  void readsSeveralHostsIpv6AndDefaultPorts() {
    LockUri u = LockUri.parse("redlock://a:1,b,[::1]:7000");
    assertThat(u.hosts())
        .extracting(LockUri.HostPort::toString)
        .containsExactly("a:1", "b", "[::1]:7000");
    assertThat(u.hosts().get(1).portOr(6379)).isEqualTo(6379);
    assertThat(u.hosts().get(2).host()).isEqualTo("::1");
  }

  @Test
  void readsJdbcAndOpaqueUris() {
    LockUri pg = LockUri.parse("jdbc:postgresql://db:5432/app?user=x&password=y&lease=5s");
    assertThat(pg.scheme()).isEqualTo("jdbc:postgresql");
    assertThat(pg.withoutQuery()).isEqualTo("jdbc:postgresql://db:5432/app");
    assertThat(pg.toString()).contains("password=****").doesNotContain("password=y");
    LockUri h2 = LockUri.parse("jdbc:h2:mem:locks;DB_CLOSE_DELAY=-1;PASSWORD=pw");
    assertThat(h2.scheme()).isEqualTo("jdbc:h2");
    assertThat(h2.toString()).doesNotContain("=pw");
    LockUri local = LockUri.parse("local:orders");
    assertThat(local.scheme()).isEqualTo("local");
    assertThat(local.path()).isEqualTo("orders");
    assertThat(local.hosts()).isEmpty();
  }

  @Test
  void rejectsMalformedUrisNamingTheProblem() {
    assertThatThrownBy(() -> LockUri.parse("://nohost"))
        .hasMessageContaining("`uri`")
        .hasMessageContaining("scheme");
    assertThatThrownBy(() -> LockUri.parse("redis://h:99999"))
        .hasMessageContaining("99999")
        .hasMessageContaining("1 to 65535");
    assertThatThrownBy(() -> LockUri.parse("redis://h:abc")).hasMessageContaining("'abc'");
    assertThatThrownBy(() -> LockUri.parse("redis://u:pw@h:0"))
        .hasMessageContaining("u:****@")
        .hasMessageNotContaining(":pw@");
    assertThatThrownBy(() -> LockUri.parse("redis://a:1,,b:2")).hasMessageContaining("empty");
    assertThatThrownBy(() -> LockUri.parse(" redis://h")).hasMessageContaining("spaces");
    assertThatThrownBy(() -> LockUri.parse("")).hasMessageContaining("`uri` was ''");
    assertThatThrownBy(() -> LockUri.parse("jdbc:")).hasMessageContaining("JDBC");
    assertThatThrownBy(() -> LockUri.parse("9redis://h")).hasMessageContaining("scheme");
  }

  @Test
  void redactsSecretsAnywhere() {
    assertThat(LockUri.redact("redis://:p@ss@h:1")).isEqualTo("redis://:****@h:1");
    assertThat(LockUri.redact("etcd://h:1?token=abc&x=1")).isEqualTo("etcd://h:1?token=****&x=1");
    assertThat(LockUri.redact("no secret here")).isEqualTo("no secret here");
    assertThat(LockUri.redact(null)).isNull();
  }
}
