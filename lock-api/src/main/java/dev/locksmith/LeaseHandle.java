package dev.locksmith;

import dev.locksmith.spi.Durations;
import java.lang.ref.Cleaner;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One holding of a {@link HeldLease}: released once, whatever is called how often. A handle the
 * application drops without releasing it is released when the garbage collector finds it
 * unreachable (see {@link ClientCore#abandoned}), unless a thread keeps the holding (the {@link
 * java.util.concurrent.locks.Lock} view, whose holdings belong to the thread until {@code
 * unlock()}).
 */
final class LeaseHandle implements Lease {
  private static final Logger LOG = LoggerFactory.getLogger(LeaseHandle.class);

  /** One cleaner thread for every client of the JVM: it only hands work to the client's pool. */
  private static final Cleaner CLEANER =
      Cleaner.create(
          r -> {
            Thread t = new Thread(r, "locksmith-abandoned-leases");
            t.setDaemon(true);
            return t;
          });

  final HeldLease held;
  private final ClientCore core;
  private final Holding released;

  /**
   * What the cleaner keeps of a handle, and the handle's released flag: never the handle itself, or
   * it would never become unreachable.
   */
  private static final class Holding extends AtomicBoolean implements Runnable {
    private static final long serialVersionUID = 1L;
    private final transient ClientCore core;
    private final transient HeldLease held;
    private final Throwable site;
    private volatile boolean keptByThread;

    Holding(ClientCore core, HeldLease held, Throwable site) {
      this.core = core;
      this.held = held;
      this.site = site;
    }

    @Override
    public void run() {
      if (!get() && !keptByThread) {
        core.abandoned(held, site);
      }
    }
  }

  LeaseHandle(ClientCore core, HeldLease held) {
    this.core = core;
    this.held = held;
    LockConfig.DroppedLeases dropped = core.config.droppedLeases();
    this.released =
        new Holding(
            core,
            held,
            dropped == LockConfig.DroppedLeases.TRACE
                ? new Throwable(
                    "where "
                        + HeldLease.describe(held.name, held.claim)
                        + " (token "
                        + held.token
                        + ") was taken")
                : null);
    if (dropped != LockConfig.DroppedLeases.KEEP) {
      CLEANER.register(this, released);
    }
  }

  /**
   * The holding belongs to the calling thread, as a {@link java.util.concurrent.locks.Lock}'s does:
   * it stays held when this handle is dropped, until the thread unlocks it.
   */
  void keptByThread() {
    released.keptByThread = true;
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

  /**
   * Releases handles of one client together, in one backend call ({@link
   * dev.locksmith.spi.LockBackend#releaseAll}).
   *
   * @return whether every one was still held up to this release; null (nothing done) if they are
   *     not all handles of one client
   */
  static Boolean releaseTogether(List<Lease> leases) {
    ClientCore core = null;
    for (Lease lease : leases) {
      if (!(lease instanceof LeaseHandle h) || (core != null && h.core != core)) {
        return null;
      }
      core = h.core;
    }
    boolean all = true;
    List<HeldLease> helds = new ArrayList<>(leases.size());
    for (Lease lease : leases) {
      LeaseHandle h = (LeaseHandle) lease;
      if (h.released.compareAndSet(false, true)) {
        helds.add(h.held);
      } else {
        all = false;
      }
    }
    return core == null || helds.isEmpty() ? all : core.releaseHoldings(helds) && all;
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
