package dev.locksmith.shedlock;

import dev.locksmith.Lease;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One ShedLock lock over one Locksmith lease. Usable once: {@code unlock()} or {@code extend()}
 * ends this object (an extension lives on in the lock it returns), and a second call throws {@link
 * IllegalStateException}, as ShedLock expects.
 */
final class ShedLockLease implements SimpleLock {
  private static final Logger LOG = LoggerFactory.getLogger(ShedLockLease.class);

  private final Lease lease;
  private final Instant lockAtLeastUntil;
  private final AtomicBoolean current = new AtomicBoolean(true);

  ShedLockLease(Lease lease, Instant lockAtLeastUntil) {
    this.lease = lease;
    this.lockAtLeastUntil = lockAtLeastUntil;
  }

  String lockName() {
    return lease.lockName();
  }

  long fencingToken() {
    return lease.fencingToken();
  }

  /**
   * @return true until this lock is unlocked or extended
   */
  boolean isCurrent() {
    return current.get() && lease.isValid();
  }

  @Override
  public void unlock() {
    end("unlock");
    LocksmithLockProvider.replaced(this, null);
    Duration keep = Duration.between(ClockProvider.now(), lockAtLeastUntil);
    // the server keeps the lock until lockAtLeastUntil by itself, through a shutdown or crash of
    // this process
    boolean held = keep.isNegative() || keep.isZero() ? lease.release() : lease.releaseAfter(keep);
    if (!held) {
      LOG.warn(
          "ShedLock lock '{}' (fencing token {}) had already expired when unlocked: the task ran"
              + " longer than its lockAtMostFor, so another run may have overlapped it",
          lease.lockName(),
          lease.fencingToken());
    }
  }

  @Override
  public Optional<SimpleLock> extend(Duration lockAtMostFor, Duration lockAtLeastFor) {
    Objects.requireNonNull(
        lockAtMostFor, "`lockAtMostFor` was null but it must be a duration above zero");
    Objects.requireNonNull(
        lockAtLeastFor,
        "`lockAtLeastFor` was null but it must be a duration from zero to lockAtMostFor");
    if (lockAtLeastFor.isNegative() || lockAtLeastFor.compareTo(lockAtMostFor) > 0) {
      throw new IllegalArgumentException(
          "`lockAtLeastFor` was "
              + lockAtLeastFor
              + " but it must be from zero to lockAtMostFor ("
              + lockAtMostFor
              + ")");
    }
    Instant now = ClockProvider.now();
    Duration newLease =
        LocksmithLockProvider.leaseFor("lockAtMostFor", lockAtMostFor, now.plus(lockAtMostFor));
    end("extend");
    if (!lease.extend(newLease)) {
      LocksmithLockProvider.replaced(this, null);
      return Optional.empty(); // expired or taken: nothing changed on the server
    }
    ShedLockLease successor = new ShedLockLease(lease, now.plus(lockAtLeastFor));
    LocksmithLockProvider.replaced(this, successor);
    return Optional.of(successor);
  }

  private void end(String method) {
    if (!current.compareAndSet(true, false)) {
      throw new IllegalStateException(
          "ShedLock lock '"
              + lease.lockName()
              + "' (fencing token "
              + lease.fencingToken()
              + ") was already unlocked or extended, so "
              + method
              + "() is not allowed on it; after extend() use the lock it returned");
    }
  }

  @Override
  public String toString() {
    return "ShedLockLease{'"
        + lease.lockName()
        + "', token "
        + lease.fencingToken()
        + ", lockAtLeastUntil "
        + lockAtLeastUntil
        + (current.get() ? "" : ", ended")
        + "}";
  }
}
