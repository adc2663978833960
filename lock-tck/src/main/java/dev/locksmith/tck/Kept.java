package dev.locksmith.tck;

import dev.locksmith.Lease;
import dev.locksmith.LockConfig;
import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * For tests that take a lease only to hold a lock (a busy holder, a taken permit) and never touch
 * it again: keeps it reachable until the JVM exits. A client releases a lease its code drops once
 * the garbage collector finds it (see {@link LockConfig#droppedLeases()}), so without this such a
 * test would depend on when a collection runs. The kit's own clients keep dropped leases instead.
 */
public final class Kept {
  private static final Queue<Object> KEPT = new ConcurrentLinkedQueue<>();

  private Kept() {}

  /**
   * @param lease a lease to keep reachable
   * @return the lease
   */
  public static Lease keep(Lease lease) {
    KEPT.add(lease);
    return lease;
  }

  /**
   * @param lease a lease, if one was granted, to keep reachable
   * @return the same optional
   */
  public static Optional<Lease> keep(Optional<Lease> lease) {
    lease.ifPresent(KEPT::add);
    return lease;
  }
}
