package dev.locksmith.bench;

import dev.locksmith.Locks;
import dev.locksmith.reactor.ReactiveLocks;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.redisson.Redisson;
import org.redisson.api.RLockReactive;
import org.redisson.api.RedissonClient;
import org.redisson.api.RedissonReactiveClient;
import org.redisson.config.Config;
import reactor.core.publisher.Mono;

/**
 * Reactive acquire + release, as a WebFlux service takes a lock: one pipeline per operation,
 * subscribed to and awaited by the benchmark thread (the wait is the benchmark's, not the
 * library's). Locksmith: {@code ReactiveLocks.withLockMono(name, wait, lease -> Mono.just(..))},
 * which acquires, runs the body and completes after the release. Redisson: {@code
 * RLockReactive.lock(threadId).then(unlock(threadId))}, with its watchdog renewing the lock as
 * Locksmith's default options do (no thread identity in reactive code, so each operation brings an
 * id of its own, as Redisson's documentation shows).
 */
final class ReactiveImpl implements LockImpl {
  private static final Duration WAIT = Duration.ofSeconds(30);

  private final AutoCloseable owner;
  private final ReactiveLocks locks;
  private final RedissonReactiveClient redisson;
  private final AtomicLong ids = new AtomicLong();

  private ReactiveImpl(AutoCloseable owner, ReactiveLocks locks, RedissonReactiveClient redisson) {
    this.owner = owner;
    this.locks = locks;
    this.redisson = redisson;
  }

  /**
   * @param uri a Locksmith URI
   * @return Locksmith's reactive form over one client
   */
  static ReactiveImpl locksmith(String uri) {
    dev.locksmith.LockClient client = Locks.connect(uri);
    return new ReactiveImpl(client, ReactiveLocks.of(client), null);
  }

  /**
   * @param endpoint host:port of the Redis server
   * @return Redisson's {@code RLockReactive} with its default settings
   */
  static ReactiveImpl redisson(String endpoint) {
    Config config = new Config();
    config.useSingleServer().setAddress("redis://" + endpoint);
    RedissonClient client = Redisson.create(config);
    return new ReactiveImpl(client::shutdown, null, client.reactive());
  }

  @Override
  public Held acquire(String name, Duration timeout) throws Exception {
    if (timeout != null) {
      throw new UnsupportedOperationException("reactive rows are uncontended: no timed acquire");
    }
    if (locks != null) {
      Integer done = locks.withLockMono(name, WAIT, lease -> Mono.just(1)).block();
      if (done == null) {
        throw new IllegalStateException("withLockMono completed empty for " + name);
      }
    } else {
      long id = ids.incrementAndGet();
      RLockReactive lock = redisson.getLock("redisson:" + name);
      lock.lock(id).then(lock.unlock(id)).block();
    }
    return () -> {}; // already released: the pipeline ends with the release
  }

  @Override
  public void close() {
    try {
      owner.close();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
