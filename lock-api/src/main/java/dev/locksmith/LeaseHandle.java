package dev.locksmith;

import dev.locksmith.spi.Durations;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** One holding of a {@link HeldLease}: released once, whatever is called how often. */
final class LeaseHandle implements Lease {
  private static final Logger LOG = LoggerFactory.getLogger(LeaseHandle.class);

  private final ClientCore core;
  final HeldLease held;
  private final AtomicBoolean released = new AtomicBoolean();

  LeaseHandle(ClientCore core, HeldLease held) {
    this.core = core;
    this.held = held;
  }

  @Override
  public String lockName() {
    return held.name;
  }

  @Override
  public long fencingToken() {
    return held.token;
  }

  @Override
  public boolean isValid() {
    return !released.get() && held.isValid();
  }

  @Override
  public CompletionStage<LeaseLostException> lost() {
    return held.lost.minimalCompletionStage();
  }

  @Override
  public boolean release() {
    if (!released.compareAndSet(false, true)) {
      return false;
    }
    return core.releaseHolding(held);
  }

  @Override
  public boolean extend(Duration lease) {
    if (released.get()) {
      checkExtend(lease);
      return false;
    }
    return core.leaseControl.extend(held, lease);
  }

  @Override
  public boolean releaseAfter(Duration keep) {
    checkKeep(keep);
    if (keep.isZero() || keep.isNegative()) {
      return release();
    }
    core.leaseControl.checkHoldAfterRelease(held);
    if (!released.compareAndSet(false, true)) {
      return false;
    }
    return core.leaseControl.releaseHoldingAfter(held, keep);
  }

  /** The argument check of {@link Lease#extend(Duration)}. */
  static void checkExtend(Duration lease) {
    if (lease == null) {
      throw new NullPointerException("`lease` was null but it must be a duration from 1ms to 7d");
    }
    LockOptions.checkLease(lease);
  }

  /** The argument check of {@link Lease#releaseAfter(Duration)}. */
  static void checkKeep(Duration keep) {
    if (keep == null) {
      throw new NullPointerException(
          "`keep` was null but it must be a duration up to 7d (zero or less releases at once)");
    }
    if (keep.compareTo(LockOptions.MAX_LEASE) > 0) {
      throw new IllegalArgumentException(
          "`keep` was '"
              + Durations.format(keep)
              + "' but it must be a duration up to 7d (zero or less releases at once)");
    }
  }

  @Override
  public void close() {
    try {
      release();
    } catch (LockException e) {
      LOG.warn(
          "closing lease on lock '{}' (token {}) could not release it; it expires with its lease:"
              + " {}",
          held.name,
          held.token,
          e.getMessage());
    }
  }

  @Override
  public String toString() {
    return "Lease{lock='"
        + held.name
        + "', token="
        + held.token
        + ", "
        + (released.get() ? "RELEASED" : held.state.get())
        + "}";
  }
}
