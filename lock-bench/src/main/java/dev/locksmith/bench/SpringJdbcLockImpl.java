package dev.locksmith.bench;

import com.zaxxer.hikari.HikariDataSource;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;
import org.springframework.integration.jdbc.lock.JdbcLockRegistry;
import org.springframework.jdbc.support.JdbcTransactionManager;

/**
 * Spring Integration's {@code JdbcLockRegistry} with its default settings (10 s TTL, a poll every
 * 100 ms while the lock is held elsewhere) on a {@code DefaultLockRepository} and a pool of its
 * own: one registry per client, shared by the client's threads, as an application would use it.
 */
final class SpringJdbcLockImpl implements LockImpl {
  private final HikariDataSource ds;
  private final DefaultLockRepository repository;
  private final JdbcLockRegistry registry;

  SpringJdbcLockImpl(String url) throws Exception {
    ds = PeerDataSources.pool(url);
    try {
      PeerDataSources.createIntLock(ds, PeerDataSources.postgres(url));
      repository = new DefaultLockRepository(ds);
      repository.setTransactionManager(new JdbcTransactionManager(ds));
      repository.afterPropertiesSet();
      repository.afterSingletonsInstantiated();
      repository.start();
      registry = new JdbcLockRegistry(repository);
    } catch (Exception | Error e) {
      ds.close();
      throw e;
    }
  }

  @Override
  public Held acquire(String name, Duration timeout) throws Exception {
    Lock lock = registry.obtain(name);
    if (timeout == null) {
      lock.lockInterruptibly();
    } else if (!lock.tryLock(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      return null;
    }
    return lock::unlock;
  }

  @Override
  public void close() {
    repository.stop();
    repository.close();
    ds.close();
  }
}
