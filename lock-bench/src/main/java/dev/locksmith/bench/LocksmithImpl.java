package dev.locksmith.bench;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.Optional;

/**
 * Locksmith through its public API only, as a user would call it: one client, shared by threads.
 */
final class LocksmithImpl implements LockImpl {
  private final LockClient client;

  LocksmithImpl(String uri) {
    this.client = Locks.connect(uri);
  }

  LockClient client() {
    return client;
  }

  @Override
  public Held acquire(String name, Duration timeout) throws Exception {
    if (timeout == null) {
      Lease lease = client.lock(name).acquire();
      return lease::close;
    }
    Optional<Lease> lease = client.lock(name).tryAcquire(timeout);
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
