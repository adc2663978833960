package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.Locks;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What the kit cannot say about a database: wrong credentials, driver properties, sessions killed
 * from another connection, and a server crash (kill -9, restart) that must keep the lease rows and
 * fence counters.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcServerFaultsIT {
  private static final String TABLE = "fault_locks";

  private static TestDatabases.Db db(String which) throws Exception {
    return which.equals("mariadb") ? TestDatabases.mariadb() : TestDatabases.postgres();
  }

  private static String uri(TestDatabases.Db db, String options) {
    return db.uri
        + (db.uri.contains("?") ? "&" : "?")
        + "table="
        + TABLE
        + (options.isEmpty() ? "" : "&" + options);
  }

  private static String name(String what) {
    return "faults/" + what + "/" + UUID.randomUUID().toString().substring(0, 8);
  }

  @Test
  void wrongCredentialsOnMariaDbFailClearlyWithThePasswordRedacted() throws Exception {
    TestDatabases.Db db = TestDatabases.mariadb();
    String hostPort =
        db.adminUrl.substring(
            "jdbc:mysql://".length(), db.adminUrl.indexOf("/", "jdbc:mysql://".length()));
    assertThatThrownBy(() -> Locks.connect("jdbc:mariadb://root:s3cr3t-pw@" + hostPort + "/locks"))
        .isInstanceOf(BackendUnavailableException.class)
        .hasMessageContaining(hostPort)
        .hasMessageContaining("as user 'root'")
        .hasMessageContaining("Access denied")
        .hasMessageNotContaining("s3cr3t-pw");
  }

  @Test
  void unknownRoleOnPostgresFailsClearlyWithThePasswordRedacted() throws Exception {
    TestDatabases.Db db = TestDatabases.postgres();
    String url = db.adminUrl.replace("jdbc:postgresql:", "jdbc:postgresql:");
    assertThatThrownBy(() -> Locks.connect(url + "?user=nobody&password=s3cr3t-pw"))
        .isInstanceOf(BackendUnavailableException.class)
        .hasMessageContaining(url.substring("jdbc:postgresql://".length(), url.lastIndexOf('/')))
        .hasMessageContaining("nobody")
        .hasMessageNotContaining("s3cr3t-pw");
  }

  @Test
  void driverPropertiesInTheUriReachTheDriver() throws Exception {
    TestDatabases.Db db = TestDatabases.postgres();
    String app = "locksmith-it-" + UUID.randomUUID().toString().substring(0, 8);
    try (LockClient client = Locks.connect(uri(db, "ApplicationName=" + app));
        Lease lease = client.lock(name("app-name")).acquire(Duration.ofSeconds(5));
        Connection admin = db.admin();
        PreparedStatement ps =
            admin.prepareStatement(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = ?")) {
      ps.setString(1, app);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        assertThat(rs.getInt(1)).as("pooled connections with ApplicationName=%s", app).isPositive();
      }
      assertThat(lease.isValid()).isTrue();
    }
  }

  /**
   * An uncontended acquire + release is the floor's five statements (SELECT ... FOR UPDATE, UPDATE,
   * COMMIT; UPDATE, COMMIT) and the bell thread's check for a queued waiter: the pool keeps its
   * connections in transaction mode, so no {@code SET autocommit} goes before and after each
   * acquire. Counted by the server.
   */
  @Test
  void anUncontendedAcquireAndReleaseSendsNoSetAutocommit() throws Exception {
    TestDatabases.Db db = TestDatabases.mariadb();
    String name = name("statements");
    int n = 100;
    // Counted per user (MariaDB's user statistics), for a user only this test connects as: the
    // server's global counters also count every other client this JVM left on the server, and
    // once 52 SELECTs of another landed in the window
    String user = "locksmith_statements";
    try (Connection admin = db.admin();
        Statement s = admin.createStatement()) {
      s.execute("SET GLOBAL userstat = 1");
      s.execute("CREATE USER IF NOT EXISTS '" + user + "'@'%' IDENTIFIED BY 'counted'");
      s.execute("GRANT ALL ON *.* TO '" + user + "'@'%'");
    }
    String counted = uri(db, "").replace("user=root", "user=" + user + "&password=counted");
    try (LockClient client = Locks.connect(counted);
        Connection admin = db.admin()) {
      for (int i = 0; i < 10; i++) { // the row exists and the pool is warm before counting
        client.lock(name).acquire(Duration.ofSeconds(5)).release();
      }
      java.util.Map<String, Long> before = userCounters(admin, user);
      for (int i = 0; i < n; i++) {
        client.lock(name).acquire(Duration.ofSeconds(5)).release();
      }
      java.util.Map<String, Long> after = userCounters(admin, user);
      java.util.Map<String, Long> delta = new java.util.TreeMap<>();
      after.forEach((k, v) -> delta.put(k, v - before.getOrDefault(k, 0L)));
      // OTHER_COMMANDS counts SET, COMMIT and ROLLBACK statements: the two commits of a round
      // (JDBC's commit() sends COMMIT), and a SET autocommit before and after each acquire would
      // make it 4 a round. Slack for a connection the pool may open meanwhile (its setup sends a
      // few SETs).
      assertThat(delta.get("OTHER_COMMANDS"))
          .as("SET, COMMIT and ROLLBACK statements over %d acquire+release: %s", n, delta)
          .isLessThanOrEqualTo(2L * n + n / 10);
      // Two transactions per round (the SELECT ... FOR UPDATE and UPDATE of the grant, the UPDATE
      // of the release), plus the bell thread's check after each release (is a waiter queued? a
      // SELECT on its own connection, the only bell statement): the bell (notified wake-up) was
      // taken by the first grant and is kept, not rung (no SELECT RELEASE_LOCK, no GET_LOCK
      // again), by a release that finds no waiter queued. Those of the 10 warm-up rounds may land
      // in the window.
      assertThat(delta.get("SELECT_COMMANDS"))
          .as(
              "SELECTs over %d acquire+release (a SELECT ... FOR UPDATE and the bell's check each):"
                  + " %s",
              n, delta)
          .isLessThanOrEqualTo(2L * n + 10);
      assertThat(delta.get("UPDATE_COMMANDS"))
          .as("UPDATE/INSERT over %d acquire+release: %s", n, delta)
          .isLessThanOrEqualTo(2L * n + 5);
      assertThat(delta.get("ROLLBACK_TRANSACTIONS"))
          .as("rollbacks over %d acquire+release: %s", n, delta)
          .isLessThanOrEqualTo(5);
      assertThat(delta.get("COMMIT_TRANSACTIONS"))
          .as("commits over %d acquire+release: %s", n, delta)
          .isGreaterThanOrEqualTo(2L * n);
    }
  }

  /** The statement counters of one user, from MariaDB's user statistics. */
  private static java.util.Map<String, Long> userCounters(Connection admin, String user)
      throws Exception {
    java.util.Map<String, Long> m = new java.util.TreeMap<>();
    try (java.sql.PreparedStatement ps =
        admin.prepareStatement(
            "SELECT SELECT_COMMANDS, UPDATE_COMMANDS, OTHER_COMMANDS, COMMIT_TRANSACTIONS,"
                + " ROLLBACK_TRANSACTIONS FROM information_schema.USER_STATISTICS WHERE USER ="
                + " ?")) {
      ps.setString(1, user);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("user statistics of %s", user).isTrue();
        for (String c :
            List.of(
                "SELECT_COMMANDS",
                "UPDATE_COMMANDS",
                "OTHER_COMMANDS",
                "COMMIT_TRANSACTIONS",
                "ROLLBACK_TRANSACTIONS")) {
          m.put(c, rs.getLong(c));
        }
      }
    }
    return m;
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql"})
  void killingEverySessionOfTheHolderLosesNoLock(String which) throws Exception {
    TestDatabases.Db db = db(which);
    String name = name("killed-sessions");
    try (LockClient holder =
            Locks.connect(
                LockConfig.builder()
                    .uri(uri(db, ""))
                    .lease(Duration.ofSeconds(1))
                    .autoRenew(true)
                    .build());
        LockClient other = Locks.connect(uri(db, ""))) {
      Lease lease = holder.lock(name).acquire(Duration.ofSeconds(5));
      int killed = killOtherSessions(db);
      assertThat(killed).as("sessions killed").isPositive();
      Thread.sleep(1500); // let renewals run on the pool's fresh connections, past the 1s lease
      assertThat(lease.isValid()).as("lease after its sessions were killed").isTrue();
      assertThat(other.lock(name).tryAcquire())
          .as("another client while the lock is held")
          .isEmpty();
      killOtherSessions(db);
      assertThat(lease.release()).as("release after the sessions were killed again").isTrue();
      assertThat(other.lock(name).tryAcquire()).as("after release").isPresent();
    }
  }

  private static int killOtherSessions(TestDatabases.Db db) throws Exception {
    int n = 0;
    try (Connection admin = db.admin();
        Statement s = admin.createStatement()) {
      if (db.name.equals("mariadb")) {
        try (ResultSet rs =
            s.executeQuery(
                "SELECT id FROM information_schema.processlist WHERE id <> CONNECTION_ID() AND user"
                    + " = 'root'")) {
          java.util.List<Long> ids = new java.util.ArrayList<>();
          while (rs.next()) {
            ids.add(rs.getLong(1));
          }
          for (long id : ids) {
            try {
              s.execute("KILL CONNECTION " + id);
              n++;
            } catch (java.sql.SQLException e) {
              // it ended meanwhile
            }
          }
        }
      } else {
        try (ResultSet rs =
            s.executeQuery(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid <>"
                    + " pg_backend_pid() AND datname = current_database() AND backend_type ="
                    + " 'client backend'")) {
          rs.next();
          n = rs.getInt(1);
        }
      }
    }
    return n;
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql"})
  void aCrashedAndRestartedServerKeepsLocksAndFences(String which) throws Exception {
    TestDatabases.Db db = db(which);
    String name = name("crash");
    try (LockClient a =
            Locks.connect(
                LockConfig.builder()
                    .uri(uri(db, ""))
                    .lease(Duration.ofSeconds(60))
                    .autoRenew(false)
                    .build());
        LockClient b = Locks.connect(uri(db, "connect-timeout=1s"))) {
      Lease held = a.lock(name).acquire(Duration.ofSeconds(5));
      db.kill();
      assertThatThrownBy(() -> b.lock(name).tryAcquire())
          .as("acquire while the server is down")
          .isInstanceOf(BackendUnavailableException.class)
          .hasMessageContaining("127.0.0.1:");
      db.restart();
      // The pool reconnects on its own schedule: HikariCP backs off between failed connection
      // attempts (doubling, up to 5 s) while the server is down, so right after the restart an
      // acquire bounded by connect-timeout=1s may still find no connection. Wait for it, bounded.
      long restarted = System.nanoTime();
      java.util.Optional<Lease> afterRestart = null;
      while (afterRestart == null) {
        try {
          afterRestart = b.lock(name).tryAcquire();
        } catch (BackendUnavailableException e) {
          assertThat(System.nanoTime() - restarted)
              .as("the pool reconnects within 15 s of the restart: " + e.getMessage())
              .isLessThan(TimeUnit.SECONDS.toNanos(15));
          Thread.sleep(100);
        }
      }
      org.slf4j.LoggerFactory.getLogger(JdbcServerFaultsIT.class)
          .info(
              "{}: first answer {} ms after the restart",
              which,
              TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restarted));
      assertThat(afterRestart).as("acquire after restart: the row survived the crash").isEmpty();
      assertThat(held.release()).as("release by the holder after the restart").isTrue();
      try (Lease next = b.lock(name).acquire(Duration.ofSeconds(10))) {
        assertThat(next.fencingToken())
            .as("fence after the crash")
            .isGreaterThan(held.fencingToken());
      }
    }
  }
}
