package dev.locksmith;

import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Keeps leases that a test takes only to hold a lock (a busy holder, a taken permit) reachable for
 * the rest of the run: a lease dropped by its code is released by the client once the garbage
 * collector finds it (see {@link LockConfig#droppedLeases()}), which would make such a test depend
 * on when a collection runs. {@link AbandonedLeaseTest} tests that release itself.
 */
final class Kept {
  private static final Queue<Object> KEPT = new ConcurrentLinkedQueue<>();

  private Kept() {}

  static Lease keep(Lease lease) {
    KEPT.add(lease);
    return lease;
  }

  static Optional<Lease> keep(Optional<Lease> lease) {
    lease.ifPresent(KEPT::add);
    return lease;
  }
}
