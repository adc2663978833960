package dev.locksmith;

import dev.locksmith.spi.Claim;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/** A named lock: argument checks, then the core's acquire loop. */
final class LockHandle implements DistributedLock {
  private final ClientCore core;
  private final String name;
  private final Claim claim;
  private final LockOptions options;
  private final LockOptions reentrantOptions;
  private final Lock view = new View();

  LockHandle(ClientCore core, String name, Claim claim, LockOptions options) {
    this.core = core;
    this.name = name;
    this.claim = claim;
    this.options = options;
    this.reentrantOptions =
        options.reentrant() ? options : options.toBuilder().reentrant(true).build();
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public LockOptions options() {
    return options;
  }

  @Override
  public Lease acquire() throws InterruptedException {
    return core.acquire(name, claim, options, Long.MAX_VALUE, new Waiter(), Thread.currentThread());
  }

  @Override
  public Lease acquire(Duration timeout) throws InterruptedException {
    long nanos = Names.timeoutNanos(timeout);
    Lease lease = core.acquire(name, claim, options, nanos, new Waiter(), Thread.currentThread());
    if (lease == null) {
      throw new LockTimeoutException(name, timeout);
    }
    return lease;
  }

  @Override
  public Optional<Lease> tryAcquire() {
    try {
      return Optional.ofNullable(
          core.acquire(name, claim, options, 0, new Waiter(), Thread.currentThread()));
    } catch (InterruptedException e) {
      // One attempt does not wait, so an interrupt is not ours to consume: keep the flag set.
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  @Override
  public Optional<Lease> tryAcquire(Duration timeout) throws InterruptedException {
    long nanos = Names.timeoutNanos(timeout);
    return Optional.ofNullable(
        core.acquire(name, claim, options, nanos, new Waiter(), Thread.currentThread()));
  }

  @Override
  public CompletableFuture<Lease> acquireAsync(Duration timeout) {
    long nanos = Names.timeoutNanos(timeout);
    return core.acquireAsync(name, claim, options, nanos, timeout, null);
  }

  @Override
  public CompletableFuture<Lease> acquireAsync(
      Duration timeout, java.util.concurrent.Executor executor) {
    long nanos = Names.timeoutNanos(timeout);
    Names.checkExecutor(executor);
    return core.acquireAsync(name, claim, options, nanos, timeout, executor);
  }

  @Override
  public LockState state() {
    if (!claim.isExclusive()) {
      return LockState.unknown(); // state reads are for exclusive locks
    }
    return core.inspect(name);
  }

  @Override
  public Lock asLock() {
    return view;
  }

  @Override
  public String toString() {
    return "DistributedLock{'"
        + name
        + "'"
        + (claim.isExclusive() ? "" : ", " + claim)
        + ", "
        + options
        + "}";
  }

  /** {@link Lock} semantics over the core's per-thread reentrancy. */
  private final class View implements Lock {
    @Override
    public void lock() {
      boolean interrupted = false;
      try {
        while (true) {
          try {
            core.acquire(
                    name,
                    claim,
                    reentrantOptions,
                    Long.MAX_VALUE,
                    new Waiter(),
                    Thread.currentThread())
                .keptByThread();
            return;
          } catch (InterruptedException e) {
            interrupted =
                true; // Lock.lock() is uninterruptible: keep waiting, restore the flag after
          }
        }
      } finally {
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
      core.acquire(
              name, claim, reentrantOptions, Long.MAX_VALUE, new Waiter(), Thread.currentThread())
          .keptByThread();
    }

    @Override
    public boolean tryLock() {
      try {
        return keptByThread(
            core.acquire(name, claim, reentrantOptions, 0, new Waiter(), Thread.currentThread()));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
      if (unit == null) {
        throw new NullPointerException("`unit` was null but it must be a TimeUnit");
      }
      long nanos = Math.max(0, unit.toNanos(time));
      return keptByThread(
          core.acquire(name, claim, reentrantOptions, nanos, new Waiter(), Thread.currentThread()));
    }

    private boolean keptByThread(LeaseHandle lease) {
      if (lease == null) {
        return false;
      }
      lease.keptByThread();
      return true;
    }

    @Override
    public void unlock() {
      HeldLease lease = core.heldBy(name, claim, Thread.currentThread());
      if (lease == null) {
        throw new IllegalMonitorStateException(
            HeldLease.describe(name, claim)
                + " is not held by thread "
                + Thread.currentThread().getName());
      }
      boolean held = core.releaseHolding(lease);
      if (!held) {
        LeaseLostException loss = lease.lost.getNow(null);
        throw loss != null
            ? loss
            : new LeaseLostException(
                name,
                lease.token,
                LeaseLostException.Reason.EXPIRED,
                "the lease was no longer held when unlock() was called");
      }
    }

    @Override
    public Condition newCondition() {
      throw new UnsupportedOperationException("conditions are not supported by distributed locks");
    }

    @Override
    public String toString() {
      return "Lock view of " + LockHandle.this;
    }
  }
}
