package dev.locksmith.spi;

import dev.locksmith.LeaseLostException;
import java.time.Duration;

/** Callbacks from a backend into the client's core. Safe to call from any thread. */
public interface BackendContext {

  /**
   * @return this client's id, unique among clients and free of colons; owner ids are this id, a
   *     colon and a number. Not an owner id: one client holds many leases, and ownership is checked
   *     per lease
   */
  String clientId();

  /**
   * @return the longest a waiter sleeps without a wake-up: poll again at least this often
   */
  Duration recheck();

  /**
   * The server says a lease is no longer ours (key gone, node deleted, session expired).
   *
   * @param ownerId the lease's owner id
   * @param reason the reason to report
   * @param detail what was observed
   */
  void leaseLost(String ownerId, LeaseLostException.Reason reason, String detail);

  /**
   * Every lease of this client is lost at once: the session or shared lease ended.
   *
   * @param detail what was observed
   */
  void allLeasesLost(String detail);

  /**
   * Bounds how long a session-held lease counts as valid while its connection is in doubt
   * (ZooKeeper SUSPENDED, etcd keep-alive failing); {@link Long#MAX_VALUE} lifts the bound once the
   * backend has confirmed the lease is still ours. A grant's first bound comes with it ({@link
   * Poll#grantedForSession(long, long, Object)}); each heartbeat may move it. When the bound
   * passes, the core reports the lease lost ({@code SESSION_LOST}) and releases it in the
   * background. Ignored for a lease the core no longer holds.
   *
   * @param ownerId the lease's owner id
   * @param validUntilNanos a {@link System#nanoTime()} value
   */
  void leaseValidUntil(String ownerId, long validUntilNanos);
}
