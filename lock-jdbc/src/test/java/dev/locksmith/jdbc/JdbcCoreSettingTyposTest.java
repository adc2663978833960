package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.LockClient;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The JDBC provider passes keys it does not know to the driver, which ignores most of them; the
 * core still refuses a typo of a setting every client understands, so {@code lese=10s} is never
 * silently a 30 s lease.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class JdbcCoreSettingTyposTest {

  @ParameterizedTest(name = "{0} is refused as a typo of {1}")
  @CsvSource({
    "lese, lease",
    "Lease, lease",
    "LEASE, lease",
    "leas, lease",
    "leasee, lease",
    "renw, renew",
    "Renew, renew",
    "reentrnt, reentrant",
    "Reentrant, reentrant",
    "rechek, recheck",
    "RECHECK, recheck",
    "provder, provider"
  })
  void typoOfACoreSettingIsRefused(String typo, String meant) {
    assertThatThrownBy(
            () -> Locks.connect("jdbc:h2:mem:typos-" + typo + "?user=sa&" + typo + "=10s").close())
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("`" + typo + "`")
        .hasMessageContaining("did you mean `" + meant + "`?")
        .hasMessageNotContaining("10s");
  }

  @Test
  void everyTypoIsReportedAtOnce() {
    assertThatThrownBy(() -> Locks.connect("jdbc:h2:mem:typos-all?lese=10s&renw=false").close())
        .isInstanceOfSatisfying(
            LockConfigurationException.class, e -> assertThat(e.problems()).hasSize(2))
        .hasMessageContaining("did you mean `lease`?")
        .hasMessageContaining("did you mean `renew`?");
  }

  @Test
  void theCoreSettingsThemselvesStillApply() {
    try (LockClient client = Locks.connect("jdbc:h2:mem:typos-ok?user=sa&lease=10s&renew=false")) {
      assertThat(client.config().defaults().lease()).isEqualTo(Duration.ofSeconds(10));
      assertThat(client.config().defaults().autoRenew()).isFalse();
    }
  }

  @ParameterizedTest(name = "{0} is refused as a typo of {1}")
  @CsvSource({
    "tabel, table",
    "tabl, table",
    "tablee, table",
    "creat-table, create-table",
    "pool-sise, pool-size",
    "io-timout, io-timeout",
    "backof-min, backoff-min"
  })
  void aSlipOfAnOptionOfThisBackendIsRefusedNotPassedToTheDriver(String typo, String meant) {
    assertThatThrownBy(
            () -> Locks.connect("jdbc:h2:mem:slips-" + typo + "?user=sa&" + typo + "=x").close())
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("`" + typo + "`")
        .hasMessageContaining("did you mean `" + meant + "`?");
  }
}
