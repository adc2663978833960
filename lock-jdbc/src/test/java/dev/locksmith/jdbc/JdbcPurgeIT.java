package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Bounded storage: the row of a lock name unused for {@code purge-after} is deleted, and a later
 * grant of that name still has a higher token than every earlier one (the floor row keeps the
 * highest fence a purge deleted). Held rows, and every row with {@code purge-after=off}, are kept.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcPurgeIT {

  private static TestDatabases.Db db(String which) throws Exception {
    switch (which) {
      case "mariadb":
        return TestDatabases.mariadb();
      case "postgresql":
        return TestDatabases.postgres();
      default:
        return TestDatabases.h2();
    }
  }

  /** A table of its own per test: another test's purges must not touch its rows. */
  private static String table() {
    return "purge_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  private static LockClient client(TestDatabases.Db db, String table, String purgeAfter) {
    return Locks.connect(
        LockConfig.builder()
            .uri(
                db.uri
                    + (db.uri.contains("?") ? "&" : "?")
                    + "table="
                    + table
                    + "&purge-after="
                    + purgeAfter)
            .lease(Duration.ofSeconds(1))
            .build());
  }

  /** Waits up to {@code seconds} for the name's row to be gone; answers whether it went. */
  private static boolean awaitPurged(TestDatabases.Db db, String table, String name, int seconds)
      throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (System.nanoTime() < deadline) {
      if (db.countRows(table, name) == 0) {
        return true;
      }
      Thread.sleep(50);
    }
    return db.countRows(table, name) == 0;
  }

  private static long floor(TestDatabases.Db db, String table) throws SQLException {
    try (Connection c = db.admin();
        PreparedStatement ps =
            c.prepareStatement("SELECT fence FROM " + table + " WHERE name = ?")) {
      ps.setString(1, LeaseStatements.FLOOR_NAME);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("the floor row of " + table).isTrue();
        return rs.getLong(1);
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void anUnusedNamesRowIsDeletedAndItsNextTokenIsStillHigher(String which) throws Exception {
    TestDatabases.Db db = db(which);
    String table = table();
    try (LockClient client = client(db, table, "1s")) {
      long last = 0;
      for (int i = 0; i < 3; i++) {
        try (Lease lease = client.lock("idle").acquire(Duration.ofSeconds(5))) {
          last = lease.fencingToken();
        }
      }
      // held and renewed past the age: its row stays
      Lease held = client.lock("held").acquire(Duration.ofSeconds(5));
      assertThat(awaitPurged(db, table, "idle", 20))
          .as("the row of a name released 1 s ago, after up to 20 s")
          .isTrue();
      assertThat(floor(db, table)).as("the floor after the purge").isGreaterThanOrEqualTo(last);
      assertThat(db.countRows(table, "held")).as("the row of a held name").isEqualTo(1);
      assertThat(held.isValid()).isTrue();
      try (Lease again = client.lock("idle").acquire(Duration.ofSeconds(5))) {
        assertThat(again.fencingToken())
            .as("the token of a purged name's next grant (was %d)", last)
            .isGreaterThan(last);
      }
      assertThat(held.release()).isTrue();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void unusedSemaphoresAndReadWriteLocksAreDeletedAndTheirTokensGoOn(String which)
      throws Exception {
    TestDatabases.Db db = db(which);
    String table = table();
    String heads = table + "_shared";
    try (LockClient client = client(db, table, "1s")) {
      long permit = 0;
      long write = 0;
      for (int i = 0; i < 3; i++) {
        try (Lease lease = client.semaphore("idle-sem", 2).acquire(Duration.ofSeconds(5))) {
          permit = lease.fencingToken();
        }
        try (Lease lease =
            client.readWriteLock("idle-rw").writeLock().acquire(Duration.ofSeconds(5))) {
          write = lease.fencingToken();
        }
      }
      // a permit held (renewed) past the age: its resource stays
      Lease held = client.semaphore("held-sem", 2).acquire(Duration.ofSeconds(5));
      assertThat(awaitPurged(db, heads, "idle-sem", 20)).as("the idle semaphore's row").isTrue();
      assertThat(awaitPurged(db, heads, "idle-rw", 20)).as("the idle read-write lock's").isTrue();
      assertThat(db.countRows(heads, "held-sem")).as("a semaphore with a permit held").isOne();
      try (Lease again = client.semaphore("idle-sem", 2).acquire(Duration.ofSeconds(5))) {
        assertThat(again.fencingToken()).as("after %d", permit).isGreaterThan(permit);
      }
      try (Lease again =
          client.readWriteLock("idle-rw").readLock().acquire(Duration.ofSeconds(5))) {
        assertThat(again.fencingToken()).as("after %d", write).isGreaterThan(write);
      }
      assertThat(held.release()).isTrue();
    }
  }

  @Test
  void purgeAfterOffKeepsEveryRow() throws Exception {
    TestDatabases.Db db = db("h2");
    String table = table();
    try (LockClient client = client(db, table, "off")) {
      client.lock("kept").acquire(Duration.ofSeconds(5)).release();
      Thread.sleep(3_000); // three turns of a 1 s purge, had it been on
      assertThat(db.countRows(table, "kept")).as("the row with purge-after=off").isOne();
    }
    // the same wait with the purge on deletes it: the check above can fail
    try (LockClient client = client(db, table, "1s")) {
      assertThat(awaitPurged(db, table, "kept", 20)).as("the row once purges run").isTrue();
    }
  }

  /**
   * Rounds of grants on names that then idle past the age, from three clients whose purges race the
   * next round's grants: every token of a name is above every token of its earlier rounds.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void purgesRacingGrantsNeverLowerAToken(String which) throws Exception {
    TestDatabases.Db db = db(which);
    String table = table();
    List<LockClient> clients = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        clients.add(client(db, table, "1s"));
      }
      Map<String, Long> highest = new ConcurrentHashMap<>();
      List<String> regressions = new CopyOnWriteArrayList<>();
      int purged = 0;
      for (int round = 0; round < 4; round++) {
        List<Thread> threads = new ArrayList<>();
        List<Map<String, Long>> lowest = new CopyOnWriteArrayList<>();
        for (LockClient c : clients) {
          Thread t =
              new Thread(
                  () -> {
                    Map<String, Long> mine = new java.util.HashMap<>();
                    try {
                      for (int n = 0; n < 8; n++) {
                        String name = "race-" + n;
                        try (Lease lease = c.lock(name).acquire(Duration.ofSeconds(10))) {
                          mine.merge(name, lease.fencingToken(), Math::min);
                        }
                      }
                    } catch (Exception e) {
                      regressions.add("acquire failed: " + e);
                    }
                    lowest.add(mine);
                  });
          threads.add(t);
          t.start();
        }
        for (Thread t : threads) {
          t.join(TimeUnit.SECONDS.toMillis(60));
        }
        for (Map<String, Long> mine : lowest) {
          mine.forEach(
              (name, token) -> {
                Long before = highest.get(name);
                if (before != null && token <= before) {
                  regressions.add(name + ": token " + token + " after " + before);
                }
              });
        }
        // this round's highest per name, read from the rows before they can go
        for (int n = 0; n < 8; n++) {
          String name = "race-" + n;
          try (Lease probe = clients.get(0).lock(name).acquire(Duration.ofSeconds(10))) {
            highest.put(name, probe.fencingToken());
          }
        }
        Thread.sleep(1_500); // idle past the age: purges may now delete, and race the next round
        for (int n = 0; n < 8; n++) {
          if (db.countRows(table, "race-" + n) == 0) {
            purged++;
          }
        }
      }
      assertThat(regressions).as("tokens that went back, and failures").isEmpty();
      assertThat(purged)
          .as("rows seen purged between rounds (else nothing was tested)")
          .isPositive();
    } finally {
      clients.forEach(LockClient::close);
    }
  }

  @Test
  void aBadPurgeAfterNamesTheOptionTheValueAndTheRange() throws Exception {
    TestDatabases.Db db = db("h2");
    for (String bad : List.of("0s", "999ms", "366d", "soon", "")) {
      assertThatThrownBy(() -> client(db, table(), bad).close())
          .as("purge-after=%s", bad)
          .isInstanceOf(LockConfigurationException.class)
          .hasMessageContaining("`purge-after` was '" + bad + "'")
          .hasMessageContaining("from 1s to 365d")
          .hasMessageContaining("or off");
    }
  }
}
