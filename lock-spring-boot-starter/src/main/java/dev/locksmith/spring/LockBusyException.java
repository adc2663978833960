package dev.locksmith.spring;

import dev.locksmith.LockException;
import java.time.Duration;

/** A {@link Locked} method or a {@link LockTemplate} call did not get its lock in time. */
public final class LockBusyException extends LockException {
  private static final long serialVersionUID = 1L;

  private final String lockName;

  /**
   * @param lockName the lock
   * @param waited how long was waited
   * @param where the method or call that wanted it
   */
  public LockBusyException(String lockName, Duration waited, String where) {
    super(
        "lock '"
            + lockName
            + "' was busy"
            + (waited.isZero() ? " (one attempt)" : " for " + waited.toMillis() + "ms")
            + ", so "
            + where
            + " did not run");
    this.lockName = lockName;
  }

  /**
   * @return the lock that was busy
   */
  public String lockName() {
    return lockName;
  }
}
