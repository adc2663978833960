package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;

/**
 * A lock set on JDBC is one transaction each way: counted as commits through a user's DataSource on
 * in-process H2 (the kit's rules 20.x check the behaviour on every database). Released one by one,
 * a set of 5 would commit 5 times.
 */
class JdbcLockSetTest {
  private static final AtomicInteger COMMITS = new AtomicInteger();

  /** H2 behind a DataSource whose connections count their commits. */
  private static DataSource counting(String url) {
    JdbcDataSource h2 = new JdbcDataSource();
    h2.setURL(url);
    h2.setUser("sa");
    return (DataSource)
        Proxy.newProxyInstance(
            JdbcLockSetTest.class.getClassLoader(),
            new Class<?>[] {DataSource.class},
            (proxy, method, args) -> {
              Object out = invoke(h2, method, args);
              if (out instanceof Connection) {
                Connection c = (Connection) out;
                return Proxy.newProxyInstance(
                    JdbcLockSetTest.class.getClassLoader(),
                    new Class<?>[] {Connection.class},
                    (p, m, a) -> {
                      if (m.getName().equals("commit")) {
                        COMMITS.incrementAndGet();
                      }
                      return invoke(c, m, a);
                    });
              }
              return out;
            });
  }

  private static Object invoke(Object target, java.lang.reflect.Method m, Object[] args)
      throws Throwable {
    try {
      return m.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  @Test
  void aSetOfFiveIsOneCommitToTakeAndOneToRelease() throws Exception {
    String url = "jdbc:h2:mem:sets-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
    DataSource ds = counting(url);
    List<String> names = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      names.add("set-" + i);
    }
    try (LockClient client = JdbcLocks.connect(ds, Map.of("lease", "60s", "table", "set_locks"));
        LockClient other = JdbcLocks.connect(ds, Map.of("lease", "60s", "table", "set_locks"))) {
      // every row exists once before counting: the first take of a name inserts its row
      other.locks(names).tryAcquire().orElseThrow().release();
      int before = COMMITS.get();
      Lease set = client.locks(names).tryAcquire().orElseThrow();
      assertThat(COMMITS.get() - before).as("commits to take a free set of 5").isEqualTo(1);
      before = COMMITS.get();
      assertThat(set.release()).isTrue();
      assertThat(COMMITS.get() - before).as("commits to release a set of 5").isEqualTo(1);
      for (String name : names) {
        other.lock(name).tryAcquire().orElseThrow().release();
      }
    }
  }

  @Test
  void aSetWhoseRowWasTakenAwayReleasesTheRestAndSaysSo() throws Exception {
    String url = "jdbc:h2:mem:sets-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
    DataSource ds = counting(url);
    List<String> names = List.of("a", "b", "c");
    try (LockClient client = JdbcLocks.connect(ds, Map.of("lease", "60s", "table", "lost_locks"));
        LockClient other = JdbcLocks.connect(ds, Map.of("lease", "60s", "table", "lost_locks"))) {
      Lease set = client.locks(names).tryAcquire().orElseThrow();
      try (Connection c = ds.getConnection();
          PreparedStatement ps =
              c.prepareStatement("UPDATE lost_locks SET owner = 'someone-else' WHERE name = ?")) {
        ps.setString(1, "b");
        assertThat(ps.executeUpdate()).isEqualTo(1);
        if (!c.getAutoCommit()) {
          c.commit();
        }
      }
      assertThat(set.release()).as("a set that lost a name, released").isFalse();
      assertThat(other.lock("a").tryAcquire()).as("a after the release").isPresent();
      assertThat(other.lock("c").tryAcquire()).as("c after the release").isPresent();
      assertThat(other.lock("b").tryAcquire()).as("b, someone else's").isEmpty();
    }
  }
}
