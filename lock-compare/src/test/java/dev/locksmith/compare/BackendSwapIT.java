package dev.locksmith.compare;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Guarantees;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.Locks;
import dev.locksmith.etcd.EtcdServerExtension;
import dev.locksmith.jdbc.DatabaseExtension;
import dev.locksmith.redis.RedisServerExtension;
import dev.locksmith.zookeeper.ZooKeeperServerExtension;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * "Change one string" with fenced writes: one application moves its lock from Redis to PostgreSQL,
 * ZooKeeper, etcd and {@code local:}, each move starting the new backend's client with {@code
 * fencing-floor} set to the highest token the fenced row stored. Every write of every current
 * holder must be accepted by the row, which refuses any token not above the one it stored. Without
 * the floor the move to PostgreSQL fails: its counter starts again at 1, below Redis's tokens
 * (checked here too, so the test shows the problem it guards against).
 */
class BackendSwapIT {
  @RegisterExtension static final RedisServerExtension REDIS = RedisServerExtension.single("swap");

  @RegisterExtension static final DatabaseExtension POSTGRES = DatabaseExtension.postgres();

  @RegisterExtension
  static final ZooKeeperServerExtension ZOOKEEPER = ZooKeeperServerExtension.inThisJvm("swap");

  @RegisterExtension static final EtcdServerExtension ETCD = EtcdServerExtension.oneMember("swap");

  private static final int WRITES_PER_BACKEND = 5;

  @Test
  void everyCurrentHolderKeepsWritingAcrossFourSwaps() throws Exception {
    String lock = "swap-account-" + System.nanoTime();
    long row = System.nanoTime();
    Map<String, String> backends = new LinkedHashMap<>();
    backends.put("redis", REDIS.uri());
    backends.put("postgresql", POSTGRES.uri());
    backends.put("zookeeper", ZOOKEEPER.uri());
    backends.put("etcd", ETCD.uri());
    backends.put("local", "local:swap-" + row);
    try (Connection db = DriverManager.getConnection(POSTGRES.jdbcUrl(), POSTGRES.user(), "")) {
      try (Statement s = db.createStatement()) {
        s.execute(
            "CREATE TABLE IF NOT EXISTS swap_account"
                + " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, token BIGINT NOT NULL)");
      }
      try (PreparedStatement insert =
          db.prepareStatement("INSERT INTO swap_account VALUES (?, 0, 0)")) {
        insert.setLong(1, row);
        insert.executeUpdate();
      }
      List<String> refused = new ArrayList<>();
      boolean first = true;
      for (Map.Entry<String, String> backend : backends.entrySet()) {
        long stored = storedToken(db, row);
        if (backend.getKey().equals("postgresql")) {
          // the problem: PostgreSQL's counter for this lock starts at 1, below Redis's tokens
          try (LockClient unfloored = Locks.connect(backend.getValue())) {
            Lease lease = unfloored.lock(lock).acquire(Duration.ofSeconds(30));
            try {
              assertThat(lease.fencingToken())
                  .as("PostgreSQL's first token without a floor, after Redis stored %d", stored)
                  .isLessThanOrEqualTo(stored);
            } finally {
              lease.release();
            }
          }
        }
        LockConfig config =
            LockConfig.builder().uri(backend.getValue()).fencingFloor(first ? 0 : stored).build();
        first = false;
        try (LockClient client = Locks.connect(config)) {
          for (int i = 0; i < WRITES_PER_BACKEND; i++) {
            Lease lease = client.lock(lock).acquire(Duration.ofSeconds(30));
            try {
              if (!fencedWrite(db, row, lease.fencingToken())) {
                refused.add(
                    backend.getKey()
                        + " token "
                        + lease.fencingToken()
                        + " (row had "
                        + storedToken(db, row)
                        + ")");
              }
              if (client.guarantees().has(Guarantees.Feature.STATE_READS)) {
                assertThat(client.lock(lock).state().fencingToken())
                    .as("the holder's token as %s's client reads it, floor included", backend)
                    .hasValue(lease.fencingToken());
              }
            } finally {
              assertThat(lease.release()).as("release on %s", backend.getKey()).isTrue();
            }
          }
        }
      }
      assertThat(refused).as("writes of current holders the row refused as stale").isEmpty();
      assertThat(balance(db, row)).isEqualTo((long) WRITES_PER_BACKEND * backends.size());
    }
  }

  /** The fence: the row takes a write only with a token above the one it stored. */
  private static boolean fencedWrite(Connection db, long row, long token) throws SQLException {
    try (PreparedStatement update =
        db.prepareStatement(
            "UPDATE swap_account SET balance = balance + 1, token = ? WHERE id = ? AND token <"
                + " ?")) {
      update.setLong(1, token);
      update.setLong(2, row);
      update.setLong(3, token);
      return update.executeUpdate() == 1;
    }
  }

  private static long storedToken(Connection db, long row) throws SQLException {
    return column(db, row, "token");
  }

  private static long balance(Connection db, long row) throws SQLException {
    return column(db, row, "balance");
  }

  private static long column(Connection db, long row, String column) throws SQLException {
    try (PreparedStatement q =
        db.prepareStatement("SELECT " + column + " FROM swap_account WHERE id = ?")) {
      q.setLong(1, row);
      try (ResultSet rs = q.executeQuery()) {
        assertThat(rs.next()).as("row %d", row).isTrue();
        return rs.getLong(1);
      }
    }
  }
}
