package dev.locksmith;

import dev.locksmith.spi.Durations;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lease control of a {@link ClientCore}: moving a lease's expiry on the server ({@link
 * Lease#extend}), giving a lease up while the server keeps the lock ({@link Lease#releaseAfter}),
 * and having the server end a session grant held without auto-renew with its lease.
 */
final class LeaseControl {
  // the client's logger: these messages were logged under its name before they moved here
  private static final Logger LOG = LoggerFactory.getLogger(ClientCore.class);

  private final ClientCore core;

  LeaseControl(ClientCore core) {
    this.core = core;
  }

  private static void requireExclusive(HeldLease lease, String method) {
    if (!lease.claim.isExclusive()) {
      throw new UnsupportedOperationException(
          method
              + "() is for leases of exclusive locks; this lease is on "
              + HeldLease.describe(lease.name, lease.claim));
    }
  }

  /** Moves the server's expiry of a lease held without auto-renew. */
  boolean extend(HeldLease lease, Duration newLease) {
    if (newLease == null) {
      throw new NullPointerException(
          "`lease` was null but it must be a duration from "
              + Durations.format(LockOptions.MIN_LEASE)
              + " to 7d");
    }
    LockOptions.checkLease(newLease);
    if (lease.scheduledRenewal || lease.sessionHeld) {
      throw new IllegalStateException(
          "lease on lock '"
              + lease.name
              + "' (token "
              + lease.token
              + ") is renewed automatically, so extend() is not for it: take the lock with"
              + " LockOptions.autoRenew(false) to set its expiry yourself");
    }
    core.requireFeature(Guarantees.Feature.EXTEND, "extend");
    requireExclusive(lease, "extend");
    if (!lease.isValid()) {
      return false;
    }
    long start = System.nanoTime();
    boolean ours = core.backend.extend(lease.backendLease, newLease);
    if (!ours) {
      core.markLost(
          lease,
          LeaseLostException.Reason.TAKEN,
          "extend found the server no longer had it as ours");
      return false;
    }
    if (lease.state.get() != HeldLease.State.HELD) {
      // released or ended by the scheduler while the server moved the expiry: give it back
      try {
        core.backend.release(lease.backendLease);
      } catch (RuntimeException e) {
        LOG.warn(
            "lock '{}' (token {}) ended while being extended, and giving it back failed; it expires"
                + " at the new expiry: {}",
            lease.name,
            lease.token,
            e.toString());
      }
      return false;
    }
    lease.validUntil = start + newLease.toNanos();
    core.scheduler.scheduleBy(lease.nextDue());
    return true;
  }

  /**
   * Gives a lease up and has the server keep the lock for {@code keepNanos}. The caller checked the
   * arguments.
   */
  boolean releaseHoldingAfter(HeldLease lease, Duration keep) {
    int left = lease.exitOnce();
    if (left != 0) {
      return left > 0 && lease.isValid();
    }
    if (!lease.state.compareAndSet(HeldLease.State.HELD, HeldLease.State.RELEASED)) {
      return false;
    }
    core.forget(lease);
    boolean inTime = System.nanoTime() - lease.validUntil < 0;
    boolean ours = false;
    try {
      // past its lease, the server has let it go: a hold now could only be on a lock that is not
      // ours
      ours =
          inTime
              ? core.backend.releaseAfter(lease.backendLease, keep)
              : core.backend.release(lease.backendLease);
      return ours && inTime;
    } finally {
      core.wakeWaiters(lease.resourceKey);
      boolean stillHeld = ours && inTime;
      long heldFor = System.nanoTime() - lease.grantedAt;
      core.emit(
          () ->
              core.events.released(lease.name, lease.token, Duration.ofNanos(heldFor), stillHeld));
    }
  }

  void checkHoldAfterRelease(HeldLease lease) {
    core.requireFeature(Guarantees.Feature.HOLD_AFTER_RELEASE, "releaseAfter");
    requireExclusive(lease, "releaseAfter");
    if (lease.holds.get() > 1) {
      throw new IllegalStateException(
          "lock '"
              + lease.name
              + "' is held "
              + lease.holds.get()
              + " times by "
              + (lease.owner == null ? "this lease" : "thread " + lease.owner.getName())
              + " (reentrantly): releaseAfter() must end the last holding, so release the others"
              + " first");
    }
  }

  /**
   * A session grant held without auto-renew would stay held by the server until the session ends;
   * have the server end it with its lease instead, so a holder that vanishes frees it on time.
   */
  void serverExpiry(HeldLease lease) {
    long left = lease.validUntil - System.nanoTime();
    if (left <= 0) {
      return; // the scheduler ends it now
    }
    try {
      if (!core.backend.extend(lease.backendLease, ceilMillis(left))) {
        core.markLost(
            lease,
            LeaseLostException.Reason.TAKEN,
            "the server no longer had it as ours when its expiry was set");
      }
    } catch (UnsupportedOperationException e) {
      LOG.debug(
          "{} (token {}): the backend cannot have the server end it with its lease; this client"
              + " ends it on time, and the server when the session ends: {}",
          HeldLease.describe(lease.name, lease.claim),
          lease.token,
          e.toString());
    } catch (RuntimeException e) {
      LOG.warn(
          "lock '{}' (token {}): could not have the server end it with its lease, so a crash of"
              + " this process leaves it held until the session ends; this client still ends it on"
              + " time: {}",
          lease.name,
          lease.token,
          e.toString());
    }
  }

  private static Duration ceilMillis(long nanos) {
    return Duration.ofMillis(Math.max(1, (nanos + 999_999) / 1_000_000));
  }
}
