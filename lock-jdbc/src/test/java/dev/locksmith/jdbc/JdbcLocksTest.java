package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;

/** A user's own DataSource, and the fenced-write helper, on in-process H2. */
class JdbcLocksTest {
  private static JdbcDataSource h2(String url) {
    JdbcDataSource ds = new JdbcDataSource();
    ds.setURL(url);
    ds.setUser("sa");
    return ds;
  }

  @Test
  void aUsersDataSourceAndAUriShareTheSameLocks() throws Exception {
    String url = "jdbc:h2:mem:ds-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
    JdbcDataSource ds = h2(url);
    try (LockClient fromDs = JdbcLocks.connect(ds, Map.of("lease", "5s", "table", "app_locks"));
        LockClient fromUri = Locks.connect(url + "?user=sa&table=app_locks&lease=5s")) {
      assertThat(fromDs.guarantees().has(Feature.FENCING)).isTrue();
      assertThat(fromDs.guarantees().has(Feature.SHARED_ACROSS_PROCESSES))
          .as("H2 behind a DataSource")
          .isFalse();
      Lease held = fromDs.lock("report").acquire(Duration.ofSeconds(5));
      assertThat(fromUri.lock("report").tryAcquire()).isEmpty();
      assertThat(held.release()).isTrue();
      try (Lease next = fromUri.lock("report").acquire(Duration.ofSeconds(5))) {
        assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
      }
    }
  }

  @Test
  void aDataSourceClientRefusesDriverSettings() {
    JdbcDataSource ds = h2("jdbc:h2:mem:ds-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
    assertThatThrownBy(() -> JdbcLocks.connect(ds, Map.of("sslmode", "require")))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("`sslmode`")
        .hasMessageContaining("DataSource");
  }

  @Test
  void fencedWritesRejectAStaleToken() throws Exception {
    JdbcDataSource ds = h2("jdbc:h2:mem:fence-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute("CREATE TABLE account (id INT PRIMARY KEY, balance INT, lock_fence BIGINT)");
      s.execute("INSERT INTO account (id, balance) VALUES (42, 1000)");
      assertThat(
              FencedWrites.update(
                  c, "account", "balance = balance - ?", "id = ?", "lock_fence", 5, 100, 42))
          .isEqualTo(1);
      assertThat(
              FencedWrites.update(
                  c, "account", "balance = balance - ?", "id = ?", "lock_fence", 5, 100, 42))
          .as("the same holder writes again")
          .isEqualTo(1);
      assertThat(
              FencedWrites.update(
                  c, "account", "balance = balance - ?", "id = ?", "lock_fence", 4, 100, 42))
          .as("an older holder's write")
          .isZero();
      assertThat(
              FencedWrites.update(
                  c, "account", "balance = ?", "id = ? AND balance > ?", "lock_fence", 6, 1, 42, 0))
          .isEqualTo(1);
      try (var rs = s.executeQuery("SELECT balance, lock_fence FROM account WHERE id = 42")) {
        rs.next();
        assertThat(rs.getInt(1)).isEqualTo(1);
        assertThat(rs.getLong(2)).isEqualTo(6);
      }
      assertThatThrownBy(
              () ->
                  FencedWrites.update(
                      c, "account; DROP TABLE x", "balance = 1", "id = 1", "lock_fence", 1))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`table`");
      assertThatThrownBy(
              () -> FencedWrites.update(c, "account", "balance = ?", "id = ?", "lock_fence", 1, 1))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`parameters`");
      assertThatThrownBy(
              () -> FencedWrites.update(c, "account", "balance = 1", "id = 1", "lock_fence", 0))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`fencingToken`");
    }
  }

  @Test
  void inMemoryH2IsNotDeclaredDurableOrShared() {
    try (LockClient c =
        Locks.connect("jdbc:h2:mem:g-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1")) {
      assertThat(c.guarantees().has(Feature.SHARED_ACROSS_PROCESSES)).isFalse();
      assertThat(c.guarantees().promise(dev.locksmith.Guarantees.Fault.SERVER_RESTART))
          .isEqualTo(dev.locksmith.Guarantees.Promise.UNSAFE);
    }
  }
}
