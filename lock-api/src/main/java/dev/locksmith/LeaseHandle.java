package dev.locksmith;

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
  public void close() {
    try {
      release();
    } catch (LockException e) {
      LOG.warn("closing lease on lock '{}' (token {}) could not release it; it expires with its lease: {}",
          held.name, held.token, e.getMessage());
    }
  }

  @Override
  public String toString() {
    return "Lease{lock='" + held.name + "', token=" + held.token + ", " + (released.get() ? "RELEASED" : held.state.get()) + "}";
  }
}
