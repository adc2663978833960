package dev.locksmith;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * An election's lock whose every acquire campaigns under one identity: each acquire runs with the
 * identity as the asker of the owner id ({@link ClientCore#ASKER}), on the calling thread, or
 * captured by {@code acquireAsync} for the client's thread that waits.
 */
final class Candidate implements DistributedLock {
  private final DistributedLock lock;
  private final String identity;
  private final Lock view;

  Candidate(DistributedLock lock, String identity) {
    this.lock = lock;
    this.identity = identity;
    this.view = new CandidateView(lock.asLock());
  }

  /** An acquire that may be interrupted, run as the identity. */
  private interface Acquire<T> {
    T run() throws InterruptedException;
  }

  private <T> T as(Acquire<T> acquire) throws InterruptedException {
    String before = ClientCore.ASKER.get();
    ClientCore.ASKER.set(identity);
    try {
      return acquire.run();
    } finally {
      if (before == null) {
        ClientCore.ASKER.remove();
      } else {
        ClientCore.ASKER.set(before);
      }
    }
  }

  private <T> T asNow(Acquire<T> acquire) {
    try {
      return as(acquire);
    } catch (InterruptedException e) {
      throw new IllegalStateException(e); // never: the acquires given here do not wait
    }
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
    return as(lock::acquire);
  }

  @Override
  public Lease acquire(Duration timeout) throws InterruptedException {
    return as(() -> lock.acquire(timeout));
  }

  @Override
  public Optional<Lease> tryAcquire() {
    return asNow(lock::tryAcquire);
  }

  @Override
  public Optional<Lease> tryAcquire(Duration timeout) throws InterruptedException {
    return as(() -> lock.tryAcquire(timeout));
  }

  @Override
  public CompletableFuture<Lease> acquireAsync(Duration timeout) {
    return asNow(() -> lock.acquireAsync(timeout));
  }

  @Override
  public CompletableFuture<Lease> acquireAsync(
      Duration timeout, java.util.concurrent.Executor executor) {
    return asNow(() -> lock.acquireAsync(timeout, executor));
  }

  @Override
  public LockState state() {
    return lock.state();
  }

  @Override
  public Lock asLock() {
    return view;
  }

  @Override
  public String toString() {
    return "Candidate{election='" + lock.name() + "', identity=" + identity + "}";
  }

  /** The lock's {@link Lock} view, its acquires run as the identity. */
  private final class CandidateView implements Lock {
    private final Lock delegate;

    CandidateView(Lock delegate) {
      this.delegate = delegate;
    }

    @Override
    public void lock() {
      asNow(
          () -> {
            delegate.lock();
            return null;
          });
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
      as(
          () -> {
            delegate.lockInterruptibly();
            return null;
          });
    }

    @Override
    public boolean tryLock() {
      return asNow(delegate::tryLock);
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
      return as(() -> delegate.tryLock(time, unit));
    }

    @Override
    public void unlock() {
      delegate.unlock();
    }

    @Override
    public Condition newCondition() {
      return delegate.newCondition();
    }
  }
}
