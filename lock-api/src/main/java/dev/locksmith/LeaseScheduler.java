package dev.locksmith;

import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one renewal scheduler of a {@link ClientCore}: a single tick, on the client's renewer thread,
 * that hands the backend every lease due at about the same time in one call and ends the leases
 * whose time has run out.
 *
 * <p>The renewal call itself runs on a thread of its own, one batch at a time (in chunks of {@link
 * #MAX_BATCH}, the leases that run out first going first), so that a renewal stuck on a paused or
 * unreachable server never delays the tick: a lease whose time runs out while its renewal is still
 * in flight is reported lost when it runs out, not when the call gives up.
 */
final class LeaseScheduler {
  // the client's logger: these messages were logged under its name before they moved here
  private static final Logger LOG = LoggerFactory.getLogger(ClientCore.class);

  private final ClientCore core;
  private final ScheduledExecutorService scheduler;
  private final ExecutorService renewer;
  private final AtomicBoolean renewing = new AtomicBoolean();
  private final ReentrantLock tickLock = new ReentrantLock();
  private ScheduledFuture<?> nextTick;
  private long nextTickAt = Long.MAX_VALUE;

  LeaseScheduler(ClientCore core, ScheduledExecutorService scheduler, ExecutorService renewer) {
    this.core = core;
    this.scheduler = scheduler;
    this.renewer = renewer;
  }

  /**
   * Makes sure a tick runs no later than {@code due}. O(1): the tick itself finds the next due
   * time.
   */
  void scheduleBy(long due) {
    if (due == Long.MAX_VALUE || core.closed.get()) {
      return;
    }
    tickLock.lock();
    try {
      if (nextTick != null && nextTickAt - due <= 0) {
        return;
      }
      if (nextTick != null) {
        nextTick.cancel(false);
      }
      nextTickAt = due;
      long delay = Math.max(0, due - System.nanoTime());
      try {
        nextTick = scheduler.schedule(this::tick, delay, TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        nextTick = null; // closing
      }
    } finally {
      tickLock.unlock();
    }
  }

  private void tick() {
    tickLock.lock();
    try {
      nextTick = null;
      nextTickAt = Long.MAX_VALUE;
    } finally {
      tickLock.unlock();
    }
    try {
      long now = System.nanoTime();
      boolean inFlight = renewing.get();
      List<HeldLease> due = new ArrayList<>();
      for (HeldLease lease : core.held.values()) {
        if (lease.state.get() != HeldLease.State.HELD) {
          continue;
        }
        if (now - lease.validUntil >= 0) {
          expire(lease);
        } else if (!inFlight
            && lease.scheduledRenewal
            && lease.nextRenewAt - now <= lease.renewInterval() / 2) {
          // due now, or due soon enough to share this round trip with the others
          due.add(lease);
        }
      }
      if (!due.isEmpty() && renewing.compareAndSet(false, true)) {
        submit(due);
      }
    } catch (RuntimeException e) {
      LOG.error("lease scheduler failed; retrying", e);
    } finally {
      // while a batch is in flight, only the ends of the leases are due: the batch's end ticks
      // again
      boolean inFlight = renewing.get();
      long next = Long.MAX_VALUE;
      for (HeldLease lease : core.held.values()) {
        if (lease.state.get() == HeldLease.State.HELD) {
          long d = inFlight ? lease.validUntil : lease.nextDue();
          if (d - next < 0 || next == Long.MAX_VALUE) {
            next = d;
          }
        }
      }
      scheduleBy(next);
    }
  }

  private void submit(List<HeldLease> due) {
    try {
      renewer.execute(
          () -> {
            try {
              renew(due);
            } catch (RuntimeException e) {
              LOG.error("lease renewal failed; retrying", e);
            } finally {
              renewing.set(false);
              scheduleBy(System.nanoTime());
            }
          });
    } catch (RejectedExecutionException e) {
      renewing.set(false); // closing
    }
  }

  private void expire(HeldLease lease) {
    if (lease.scheduledRenewal) {
      core.markLost(
          lease,
          LeaseLostException.Reason.RENEWAL_FAILED,
          "not renewed within its lease of "
              + Durations.format(Duration.ofNanos(lease.leaseNanos)));
    } else if (lease.sessionHeld) {
      core.markLost(
          lease,
          LeaseLostException.Reason.SESSION_LOST,
          "connection in doubt past the session timeout");
    } else {
      core.markLost(
          lease,
          LeaseLostException.Reason.EXPIRED,
          "auto-renew is off and the lease of "
              + Durations.format(Duration.ofNanos(lease.leaseNanos))
              + " ran out");
    }
    if (!lease.sessionGrant) {
      return; // the server's own lease has run out too
    }
    // A lock granted for a session (ZooKeeper, etcd) is freed only by a release.
    releaseQuietly(lease);
  }

  private void releaseQuietly(HeldLease lease) {
    core.runInBackground(
        () -> {
          try {
            core.backend.release(lease.backendLease);
          } catch (RuntimeException e) {
            LOG.debug("cleaning up expired lease on '{}' failed: {}", lease.name, e.toString());
          }
        });
  }

  /**
   * The most leases handed to the backend in one call. A batch of a thousand leases due together
   * renewed them all only when the last of them was done: on a loaded machine (H2, a clean run
   * beside another build, kit rule 13.1) that took longer than the slack of the first one due. In
   * chunks, the leases that run out first go first, and each chunk's leases count as renewed as
   * soon as their chunk is done.
   */
  static final int MAX_BATCH = 256;

  private void renew(List<HeldLease> due) {
    if (due.size() <= MAX_BATCH) {
      renewChunk(due);
      return;
    }
    List<HeldLease> sorted = new ArrayList<>(due);
    sorted.sort((a, b) -> Long.compare(a.validUntil - b.validUntil, 0));
    for (int from = 0; from < sorted.size() && !core.closed.get(); from += MAX_BATCH) {
      renewChunk(sorted.subList(from, Math.min(sorted.size(), from + MAX_BATCH)));
    }
  }

  private void renewChunk(List<HeldLease> due) {
    List<BackendLease> batch = new ArrayList<>(due.size());
    for (HeldLease lease : due) {
      batch.add(lease.backendLease);
    }
    long start = System.nanoTime();
    List<Renewal> outcomes;
    try {
      outcomes = core.backend.renew(batch);
      if (outcomes.size() != batch.size()) {
        throw new IllegalStateException(
            "backend answered " + outcomes.size() + " renewals for " + batch.size() + " leases");
      }
    } catch (RuntimeException e) {
      List<Renewal> failed = new ArrayList<>(batch.size());
      for (int i = 0; i < batch.size(); i++) {
        failed.add(Renewal.failed(e));
      }
      outcomes = failed;
    }
    long end = System.nanoTime();
    for (int i = 0; i < due.size(); i++) {
      HeldLease lease = due.get(i);
      Renewal outcome = outcomes.get(i);
      HeldLease.State state = lease.state.get();
      if (state != HeldLease.State.HELD) {
        if (state == HeldLease.State.LOST
            && outcome.kind() == Renewal.Kind.RENEWED
            && !lease.sessionGrant
            && !core.closed.get()) {
          // reported lost while this renewal was in flight, which then reached the server: give
          // the lock back rather than leave it held for a lease nobody uses (owner-checked). Not
          // for a lease being released: its own release frees it, and a second one sent beside it
          // could free the row first and make that release report the lock no longer held (kit
          // rule 13.1: one release in a thousand answered false, no loss logged)
          releaseQuietly(lease);
        }
        continue;
      }
      switch (outcome.kind()) {
        case RENEWED:
          lease.validUntil = start + lease.leaseNanos;
          lease.nextRenewAt = start + lease.renewInterval();
          core.emit(
              () -> core.events.renewed(lease.name, lease.token, Duration.ofNanos(end - start)));
          break;
        case LOST:
          core.markLost(lease, LeaseLostException.Reason.TAKEN, outcome.detail());
          break;
        default:
          Throwable cause = outcome.cause();
          core.emit(() -> core.events.renewalFailed(lease.name, lease.token, cause));
          if (end - lease.validUntil >= 0) {
            core.markLost(
                lease,
                LeaseLostException.Reason.RENEWAL_FAILED,
                "could not reach the server: " + outcome.detail());
          } else {
            long retry =
                Math.max(
                    TimeUnit.MILLISECONDS.toNanos(5),
                    Math.min(lease.leaseNanos / 10, TimeUnit.SECONDS.toNanos(1)));
            lease.nextRenewAt = Math.min(end + retry, lease.validUntil);
          }
      }
    }
  }

  /** Stops the renewer threads, on close and abandon. */
  void shutdownNow() {
    scheduler.shutdownNow();
    renewer.shutdownNow();
  }
}
