package dev.locksmith.bench;

import dev.locksmith.Guarantees;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.Optional;

/**
 * One permit of a Locksmith semaphore ({@link LockClient#semaphore(String, int)}) through the
 * public API, default options (leased, auto-renewed, fenced): one client, shared by threads, each
 * acquire its own permit.
 */
final class LocksmithSemaphoreImpl implements LockImpl {
  private final LockClient client;
  private final int permits;

  LocksmithSemaphoreImpl(String uri, int permits) {
    this.client = Locks.connect(uri);
    if (!client.guarantees().has(Guarantees.Feature.SEMAPHORES)) {
      client.close();
      throw new IllegalStateException(declaredNot(uri));
    }
    this.permits = permits;
  }

  /**
   * @return the reason a Locksmith semaphore row is skipped on a backend that does not declare
   *     semaphores
   */
  static String declaredNot(String uri) {
    return "Locksmith on "
        + uri.replaceFirst("[?].*", "")
        + " does not declare SEMAPHORES in this build (issue 20: its backend has "
        + "not landed them yet)";
  }

  /**
   * @param uri a Locksmith URI
   * @return null if its backend declares {@link Guarantees.Feature#SEMAPHORES}, else the reason it
   *     is skipped
   */
  static String skipReason(String uri) {
    try (LockClient probe = Locks.connect(uri)) {
      return probe.guarantees().has(Guarantees.Feature.SEMAPHORES) ? null : declaredNot(uri);
    }
  }

  @Override
  public Held acquire(String name, Duration timeout) throws Exception {
    if (timeout == null) {
      Lease lease = client.semaphore(name, permits).acquire();
      return lease::close;
    }
    Optional<Lease> lease = client.semaphore(name, permits).tryAcquire(timeout);
    if (lease.isEmpty()) {
      return null;
    }
    Lease held = lease.get();
    return held::close;
  }

  @Override
  public void close() {
    client.close();
  }
}
