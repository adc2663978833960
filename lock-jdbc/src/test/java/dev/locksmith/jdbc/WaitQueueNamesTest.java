package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The names the wait queue derives from the lease table: within PostgreSQL's and MySQL's 63/64-character limits, distinct. */
class WaitQueueNamesTest {
  @Test
  void theQueueIsNamedAfterTheTableAndStaysAnIdentifier() {
    assertThat(LeaseTable.queueTable("locksmith_locks")).isEqualTo("locksmith_locks_queue");
    assertThat(LeaseTable.queueTable("app.locks")).isEqualTo("app.locks_queue");
    String a = "a".repeat(60) + "bc";
    String b = "a".repeat(60) + "cb";
    assertThat(LeaseTable.queueTable(a)).hasSize(63).endsWith("_queue").matches(LeaseTable.IDENTIFIER);
    assertThat(LeaseTable.queueTable(a)).isNotEqualTo(LeaseTable.queueTable(b));
    assertThat(LeaseTable.queueTable("s." + a)).startsWith("s.").matches(LeaseTable.IDENTIFIER);
  }

  @Test
  void channelsAndBellsFitTheirLimits() {
    String a = "s." + "a".repeat(63);
    assertThat(LeaseTable.channel("locksmith_locks")).isEqualTo("locksmith:locksmith_locks");
    assertThat(LeaseTable.channel(a)).hasSizeLessThanOrEqualTo(63).isNotEqualTo(LeaseTable.channel("s." + "a".repeat(62) + "b"));
    assertThat(NamedLockBells.bell("t", "x")).hasSizeLessThanOrEqualTo(64).isEqualTo(NamedLockBells.bell("t", "x"))
        .isNotEqualTo(NamedLockBells.bell("t", "y")).isNotEqualTo(NamedLockBells.bell("u", "x"));
  }
}
