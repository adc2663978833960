package dev.locksmith.spring.integration;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;

/**
 * One registry lock: per-thread reentry counted here, each thread's first holding one Locksmith
 * lease. A holding whose lease was lost is dropped when its thread next locks, so a leader that
 * lost its lock must take it afresh (and fails while someone else has it).
 */
final class RegistryLock implements LocksmithLock {
  private final LockClient client;
  private final String name;
  private final LockOptions options;
  private final DistributedLock lock;
  private final Map<Thread, Holding> holdings = new ConcurrentHashMap<>();
  private volatile long lastObtained = System.nanoTime();

  /** A thread's holding; its count is touched only by that thread. */
  private static final class Holding {
    final Lease lease;
    final boolean autoRenew;
    Duration leaseTime;
    int count = 1;

    Holding(Lease lease, LockOptions options) {
      this.lease = lease;
      this.autoRenew = options.autoRenew();
      this.leaseTime = options.lease();
    }
  }

  RegistryLock(LockClient client, String name, LockOptions options) {
    this.client = client;
    this.name = name;
    this.options = options;
    this.lock = client.lock(name, options); // checks the name
  }

  static Duration checkTtl(Duration ttl) {
    if (ttl == null
        || ttl.compareTo(LockOptions.MIN_LEASE) < 0
        || ttl.compareTo(LockOptions.MAX_LEASE) > 0) {
      throw new IllegalArgumentException(
          "`ttl` was "
              + ttl
              + " but it must be a duration from 1 ms to 7 days: how long the "
              + "server keeps the lock unless renewLock() moves its expiry");
    }
    return ttl;
  }

  @Override
  public String name() {
    return name;
  }

  void touch() {
    lastObtained = System.nanoTime();
  }

  long unusedFor(long now) {
    return now - lastObtained;
  }

  boolean isHeldByAnyThread() {
    return !holdings.isEmpty();
  }

  /** Reenters a valid holding of this thread; drops a lost one. */
  private boolean reenter() {
    Thread me = Thread.currentThread();
    Holding mine = holdings.get(me);
    if (mine == null) {
      return false;
    }
    if (mine.lease.isValid()) {
      mine.count++;
      return true;
    }
    holdings.remove(me); // lost while held: this thread must win the lock again
    return false;
  }

  private boolean granted(Optional<Lease> lease, LockOptions how) {
    lease.ifPresent(l -> holdings.put(Thread.currentThread(), new Holding(l, how)));
    return lease.isPresent();
  }

  private LockOptions withTtl(Duration ttl) {
    return options.toBuilder().lease(checkTtl(ttl)).autoRenew(false).build();
  }

  @Override
  public void lock() {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          lockInterruptibly();
          return;
        } catch (InterruptedException e) {
          interrupted =
              true; // Lock.lock() does not give up on an interrupt: keep waiting, restore the flag
          // after
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
    if (!reenter()) {
      granted(Optional.of(lock.acquire()), options);
    }
  }

  @Override
  public boolean tryLock() {
    return reenter() || granted(lock.tryAcquire(), options);
  }

  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    Objects.requireNonNull(unit, "`unit` was null but it must be a TimeUnit");
    return reenter()
        || granted(lock.tryAcquire(Duration.ofNanos(Math.max(0, unit.toNanos(time)))), options);
  }

  @Override
  public void lock(Duration ttl) {
    LockOptions how = withTtl(ttl);
    if (reenter()) {
      return;
    }
    boolean interrupted = false;
    try {
      while (true) {
        try {
          granted(Optional.of(client.lock(name, how).acquire()), how);
          return;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public boolean tryLock(Duration waitTime, Duration ttl) throws InterruptedException {
    Objects.requireNonNull(
        waitTime, "`waitTime` was null but it must be a duration of zero or more");
    LockOptions how = withTtl(ttl);
    return reenter()
        || granted(
            client.lock(name, how).tryAcquire(waitTime.isNegative() ? Duration.ZERO : waitTime),
            how);
  }

  @Override
  public void unlock() {
    Thread me = Thread.currentThread();
    Holding mine = holdings.get(me);
    if (mine == null) {
      throw new IllegalMonitorStateException(
          "lock '" + name + "' is not held by thread " + me.getName());
    }
    if (--mine.count > 0) {
      return;
    }
    holdings.remove(me);
    if (!mine.lease.release()) {
      throw new ConcurrentModificationException(
          "lock '"
              + name
              + "' (fencing token "
              + mine.lease.fencingToken()
              + ") was lost before unlock(): its lease expired or was taken, so another holder may"
              + " have run meanwhile");
    }
  }

  /**
   * @param ttl the new lease, or null for the one it was taken with
   */
  void renew(Duration ttl) {
    Holding mine = holdings.get(Thread.currentThread());
    if (mine == null) {
      throw new IllegalStateException(
          "lock '"
              + name
              + "' is not held by thread "
              + Thread.currentThread().getName()
              + ", so it cannot be renewed");
    }
    if (mine.autoRenew) {
      if (ttl != null) {
        throw new IllegalStateException(
            "lock '"
                + name
                + "' is held with a lease renewed in the background, whose length is fixed; "
                + "renewLock(key, ttl) is for locks taken with lock(ttl) or tryLock(wait, ttl)");
      }
      if (!mine.lease.isValid()) {
        throw lost(mine);
      }
      return; // it renews itself
    }
    if (!mine.lease.isValid() || !mine.lease.extend(ttl == null ? mine.leaseTime : ttl)) {
      throw lost(mine);
    }
    if (ttl != null) {
      mine.leaseTime = ttl;
    }
  }

  private IllegalStateException lost(Holding mine) {
    return new IllegalStateException(
        "lock '"
            + name
            + "' (fencing token "
            + mine.lease.fencingToken()
            + ") was lost, so it cannot be renewed: its lease expired or was taken");
  }

  @Override
  public OptionalLong fencingToken() {
    Holding mine = holdings.get(Thread.currentThread());
    return mine != null && mine.lease.isValid()
        ? OptionalLong.of(mine.lease.fencingToken())
        : OptionalLong.empty();
  }

  @Override
  public Condition newCondition() {
    throw new UnsupportedOperationException("conditions are not supported by distributed locks");
  }

  @Override
  public String toString() {
    return "LocksmithLock{'" + name + "', " + options + "}";
  }
}
