package dev.locksmith;

import dev.locksmith.spi.Durations;
import java.time.Duration;
import java.util.Objects;

/**
 * How a lock is held: lease time, auto-renewal and reentrancy. Immutable; the builder checks each
 * value as it is set. The defaults are the safe ones for a newcomer: a 30 s lease, renewed
 * automatically while held, reentrant for the thread that holds it.
 *
 * <pre>{@code
 * LockOptions opts = LockOptions.builder().lease(Duration.ofSeconds(10)).autoRenew(false).build();
 * DistributedLock lock = client.lock("invoice-42", opts);
 * }</pre>
 */
public final class LockOptions {
  /** The shortest lease accepted. */
  public static final Duration MIN_LEASE = Duration.ofMillis(1);

  /** The longest lease accepted; hold longer with auto-renew instead. */
  public static final Duration MAX_LEASE = Duration.ofDays(7);

  private static final LockOptions DEFAULTS = new Builder().build();

  private final Duration lease;
  private final boolean autoRenew;
  private final boolean reentrant;

  private LockOptions(Builder b) {
    this.lease = b.lease;
    this.autoRenew = b.autoRenew;
    this.reentrant = b.reentrant;
  }

  /**
   * @return the defaults: lease 30s, auto-renew on, reentrant on
   */
  public static LockOptions defaults() {
    return DEFAULTS;
  }

  /**
   * @return a builder starting from the defaults
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * @return a builder starting from these options
   */
  public Builder toBuilder() {
    return new Builder().lease(lease).autoRenew(autoRenew).reentrant(reentrant);
  }

  /**
   * @return how long the server keeps the lock for a holder that stops renewing (crashed, paused,
   *     cut off). With auto-renew on, the lease is renewed every third of this.
   */
  public Duration lease() {
    return lease;
  }

  /**
   * @return whether held leases are renewed in the background until released
   */
  public boolean autoRenew() {
    return autoRenew;
  }

  /**
   * @return whether a thread acquiring a lock it already holds (through the same client) gets the
   *     same lease back, counted, instead of waiting for itself
   */
  public boolean reentrant() {
    return reentrant;
  }

  static Duration checkLease(Duration lease) {
    Objects.requireNonNull(lease, "`lease` was null but it must be a duration from 1ms to 7d");
    if (lease.compareTo(MIN_LEASE) < 0 || lease.compareTo(MAX_LEASE) > 0) {
      throw new IllegalArgumentException(
          "`lease` was '"
              + Durations.format(lease)
              + "' but it must be a duration from "
              + Durations.format(MIN_LEASE)
              + " to 7d");
    }
    return lease;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof LockOptions)) {
      return false;
    }
    LockOptions other = (LockOptions) o;
    return lease.equals(other.lease)
        && autoRenew == other.autoRenew
        && reentrant == other.reentrant;
  }

  @Override
  public int hashCode() {
    return Objects.hash(lease, autoRenew, reentrant);
  }

  @Override
  public String toString() {
    return "LockOptions{lease="
        + Durations.format(lease)
        + ", autoRenew="
        + autoRenew
        + ", reentrant="
        + reentrant
        + "}";
  }

  /** Builds {@link LockOptions}; each setter rejects a bad value at once. */
  public static final class Builder {
    private Duration lease = Duration.ofSeconds(30);
    private boolean autoRenew = true;
    private boolean reentrant = true;

    private Builder() {}

    /**
     * @param lease from 1ms to 7d
     * @return this builder
     * @throws NullPointerException if {@code lease} is null
     * @throws IllegalArgumentException if {@code lease} is out of range
     */
    public Builder lease(Duration lease) {
      this.lease = checkLease(lease);
      return this;
    }

    /**
     * @param autoRenew whether to renew held leases in the background
     * @return this builder
     */
    public Builder autoRenew(boolean autoRenew) {
      this.autoRenew = autoRenew;
      return this;
    }

    /**
     * @param reentrant whether the holding thread gets its own lease back when it acquires again
     * @return this builder
     */
    public Builder reentrant(boolean reentrant) {
      this.reentrant = reentrant;
      return this;
    }

    /**
     * @return the options
     */
    public LockOptions build() {
      return new LockOptions(this);
    }
  }
}
