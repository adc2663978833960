package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The names the wait queue derives from the lease table: within PostgreSQL's and MySQL's
 * 63/64-character limits, distinct.
 */
class WaitQueueNamesTest {
  @Test
  void theQueueIsNamedAfterTheTableAndStaysAnIdentifier() {
    assertThat(LeaseTable.queueTable("locksmith_locks")).isEqualTo("locksmith_locks_queue");
    assertThat(LeaseTable.queueTable("app.locks")).isEqualTo("app.locks_queue");
    String a = "a".repeat(60) + "bc";
    String b = "a".repeat(60) + "cb";
    assertThat(LeaseTable.queueTable(a))
        .hasSize(63)
        .endsWith("_queue")
        .matches(LeaseTable.IDENTIFIER);
    assertThat(LeaseTable.queueTable(a)).isNotEqualTo(LeaseTable.queueTable(b));
    assertThat(LeaseTable.queueTable("s." + a)).startsWith("s.").matches(LeaseTable.IDENTIFIER);
  }

  @Test
  void channelsAndBellsFitTheirLimits() {
    String a = "s." + "a".repeat(63);
    assertThat(LeaseTable.channel("locksmith_locks")).isEqualTo("locksmith:locksmith_locks");
    assertThat(LeaseTable.channel(a))
        .hasSizeLessThanOrEqualTo(63)
        .isNotEqualTo(LeaseTable.channel("s." + "a".repeat(62) + "b"));
    assertThat(NamedLockBells.bell("t", "c", "x"))
        .hasSizeLessThanOrEqualTo(64)
        .isEqualTo(NamedLockBells.bell("t", "c", "x"))
        .isNotEqualTo(NamedLockBells.bell("t", "c", "y"))
        .isNotEqualTo(NamedLockBells.bell("u", "c", "x"))
        .isNotEqualTo(NamedLockBells.bell("t", "d", "x"));
    assertThat(NamedLockBells.bell("t", "c", "x:y"))
        .as("no two (client, name) pairs share a bell by where the separator falls")
        .isNotEqualTo(NamedLockBells.bell("t", "c:x", "y"));
  }

  @Test
  void aBellBelongsToTheHoldersClientWhateverItsLeaseOrHold() {
    // lock-api's owner ids are <client id>:<n>; a waiter reads the holder's from the row
    assertThat(NamedLockBells.client("1234-5f3a:17")).isEqualTo("1234-5f3a");
    assertThat(NamedLockBells.client("1234-5f3a:18"))
        .isEqualTo(NamedLockBells.client("1234-5f3a:17"));
    assertThat(NamedLockBells.client("a:b:9")).isEqualTo("a:b");
    assertThat(NamedLockBells.client("no-colon"))
        .as("an owner id without a colon is a client of its own")
        .isEqualTo("no-colon");
    assertThat(NamedLockBells.client(LeaseTable.holdMarker("1234-5f3a:17")))
        .as("a hold rings the bell of the client that holds it")
        .isEqualTo("1234-5f3a");
  }

  @Test
  void leasesOfOneClientShareItsBellWhateverThreadAskedAndWhen() {
    // owner ids name who asked: application@host:thread:asked:client:lease. Only the client part
    // may name the bell, or every lease would take a bell of its own (a GET_LOCK per grant: clean
    // run Q counted 291 SELECTs for 100 rounds, against at most 210)
    String first = "orders@web-1:main:mi1x2k7q:4242-9f3a-1:17";
    String second = "orders@web-1:http-nio-8080-exec-3:mi1x2kz0:4242-9f3a-1:18";
    String other = "orders@web-1:main:mi1x2k7q:4242-77aa-2:17";
    assertThat(NamedLockBells.client(first)).isEqualTo("4242-9f3a-1");
    assertThat(NamedLockBells.client(second)).isEqualTo(NamedLockBells.client(first));
    assertThat(NamedLockBells.client(other)).isNotEqualTo(NamedLockBells.client(first));
    assertThat(NamedLockBells.client(LeaseTable.holdMarker(second))).isEqualTo("4242-9f3a-1");
  }
}
