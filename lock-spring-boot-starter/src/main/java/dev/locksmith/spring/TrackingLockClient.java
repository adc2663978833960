package dev.locksmith.spring;

import dev.locksmith.DistributedLock;
import dev.locksmith.DistributedReadWriteLock;
import dev.locksmith.Guarantees;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockOptions;

/**
 * The starter's client as the application sees it: every call goes to the connected client; names
 * used for semaphores and read-write locks are told to the {@link HeldLeaseTracker} first, so the
 * actuator endpoint keeps their several holders apart from an exclusive lock's hand-off.
 */
final class TrackingLockClient implements LockClient {
  private final LockClient client;
  private final HeldLeaseTracker tracker;

  TrackingLockClient(LockClient client, HeldLeaseTracker tracker) {
    this.client = client;
    this.tracker = tracker;
  }

  @Override
  public DistributedLock lock(String name) {
    return client.lock(name);
  }

  @Override
  public DistributedLock lock(String name, LockOptions options) {
    return client.lock(name, options);
  }

  @Override
  public DistributedLock semaphore(String name, int permits) {
    return tracker.sharedName(name, client.semaphore(name, permits)); // checked by the client first
  }

  @Override
  public DistributedLock semaphore(String name, int permits, LockOptions options) {
    return tracker.sharedName(
        name, client.semaphore(name, permits, options)); // checked by the client first
  }

  @Override
  public DistributedReadWriteLock readWriteLock(String name) {
    return tracker.sharedName(name, client.readWriteLock(name)); // checked by the client first
  }

  @Override
  public DistributedReadWriteLock readWriteLock(String name, LockOptions options) {
    return tracker.sharedName(
        name, client.readWriteLock(name, options)); // checked by the client first
  }

  @Override
  public boolean breakLock(String name, String reason) {
    return client.breakLock(name, reason);
  }

  @Override
  public dev.locksmith.LockPage list(String prefix, String cursor, int limit) {
    return client.list(prefix, cursor, limit);
  }

  @Override
  public Guarantees guarantees() {
    return client.guarantees();
  }

  @Override
  public LockConfig config() {
    return client.config();
  }

  @Override
  public void close() {
    client.close();
  }

  @Override
  public String toString() {
    return client.toString();
  }
}
