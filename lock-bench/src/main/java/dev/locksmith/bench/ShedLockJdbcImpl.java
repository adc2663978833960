package dev.locksmith.bench;

import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider;

/**
 * ShedLock's {@code JdbcTemplateLockProvider} (default configuration, its {@code shedlock} table)
 * on a pool of its own, lockAtMostFor 30 s, lockAtLeastFor 0. ShedLock does not wait: a lock held
 * elsewhere is skipped, so this implementation is measured uncontended only; a busy lock returns
 * null.
 */
final class ShedLockJdbcImpl implements LockImpl {
  private static final Duration AT_MOST = Duration.ofSeconds(30);

  private final HikariDataSource ds;
  private final JdbcTemplateLockProvider provider;

  ShedLockJdbcImpl(String url) throws Exception {
    ds = PeerDataSources.pool(url);
    try {
      PeerDataSources.createShedlock(ds, PeerDataSources.postgres(url));
      provider = new JdbcTemplateLockProvider(ds);
    } catch (Exception | Error e) {
      ds.close();
      throw e;
    }
  }

  @Override
  public Held acquire(String name, Duration timeout) {
    Optional<SimpleLock> lock =
        provider.lock(new LockConfiguration(Instant.now(), name, AT_MOST, Duration.ZERO));
    if (lock.isEmpty()) {
      return null;
    }
    SimpleLock held = lock.get();
    return held::unlock;
  }

  @Override
  public void close() {
    ds.close();
  }
}
