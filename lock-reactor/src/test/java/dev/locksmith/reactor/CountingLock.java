package dev.locksmith.reactor;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockOptions;
import dev.locksmith.LockState;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.Lock;

/**
 * A lock of another client passed through, counting the calls of acquireAsync and keeping the
 * futures it handed out: what a test double of any LockClient would be.
 */
final class CountingLock implements DistributedLock {
  private final DistributedLock lock;
  final List<CompletableFuture<Lease>> futures = new CopyOnWriteArrayList<>();

  CountingLock(DistributedLock lock) {
    this.lock = lock;
  }

  int asyncCalls() {
    return futures.size();
  }

  @Override
  public String name() {
    return lock.name();
  }

  @Override
  public LockOptions options() {
    return lock.options();
  }

  @Override
  public Lease acquire() throws InterruptedException {
    return lock.acquire();
  }

  @Override
  public Lease acquire(Duration timeout) throws InterruptedException {
    return lock.acquire(timeout);
  }

  @Override
  public Optional<Lease> tryAcquire() {
    return lock.tryAcquire();
  }

  @Override
  public Optional<Lease> tryAcquire(Duration timeout) throws InterruptedException {
    return lock.tryAcquire(timeout);
  }

  @Override
  public CompletableFuture<Lease> acquireAsync(Duration timeout) {
    CompletableFuture<Lease> future = lock.acquireAsync(timeout);
    futures.add(future);
    return future;
  }

  @Override
  public LockState state() {
    return lock.state();
  }

  @Override
  public Lock asLock() {
    return lock.asLock();
  }
}
