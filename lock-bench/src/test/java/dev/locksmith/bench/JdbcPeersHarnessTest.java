package dev.locksmith.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * The jdbc-peers section's bookkeeping, without servers: which server each implementation needs,
 * and the ids it knows.
 */
class JdbcPeersHarnessTest {

  @Test
  void jdbcPeersRunOnTheirDatabase() {
    for (String id :
        new String[] {"locksmith-jdbc", "raw-jdbc", "jdbclockregistry-jdbc", "shedlock-jdbc"}) {
      assertThat(Impls.serverOf(id)).as(id).isEqualTo("jdbc");
    }
    for (String id :
        new String[] {"locksmith-pg", "raw-pg", "jdbclockregistry-pg", "shedlock-pg"}) {
      assertThat(Impls.serverOf(id)).as(id).isEqualTo("pg");
    }
    assertThat(Impls.all())
        .contains(
            "jdbclockregistry-jdbc",
            "shedlock-jdbc",
            "locksmith-pg",
            "raw-pg",
            "jdbclockregistry-pg",
            "shedlock-pg");
  }

  @Test
  void unknownImplementationIsNamedWithTheKnownOnes() {
    assertThatThrownBy(() -> Impls.open("shedlock-h2"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'shedlock-h2'")
        .hasMessageContaining("jdbclockregistry-pg");
  }

  @Test
  void postgresUrlsAreRecognised() {
    assertThat(PeerDataSources.postgres("jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres"))
        .isTrue();
    assertThat(PeerDataSources.postgres("jdbc:mysql://127.0.0.1:3306/locks?user=root")).isFalse();
  }
}
