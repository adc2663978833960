package dev.locksmith;

import dev.locksmith.spi.Durations;
import java.time.Duration;

/**
 * {@link DistributedLock#acquire(Duration)} waited as long as it was allowed and did not get the
 * lock.
 */
public final class LockTimeoutException extends LockException {
  private static final long serialVersionUID = 1L;

  private final String lockName;
  private final Duration waited;

  /**
   * @param lockName the lock that was not acquired
   * @param waited how long the caller waited
   */
  public LockTimeoutException(String lockName, Duration waited) {
    super("lock '" + lockName + "' was not acquired within " + Durations.format(waited));
    this.lockName = lockName;
    this.waited = waited;
  }

  /**
   * @return the lock that was not acquired
   */
  public String lockName() {
    return lockName;
  }

  /**
   * @return how long the caller waited
   */
  public Duration waited() {
    return waited;
  }
}
