package dev.locksmith.spi;

import java.time.Duration;

/** A lease as the core hands it back to the backend for renewal and release. Made by the core. */
public final class BackendLease {
  private final String name;
  private final String ownerId;
  private final long fencingToken;
  private final Duration lease;
  private final Object state;
  private final Claim claim;

  /**
   * @param name the lock's name
   * @param ownerId the owner id the lease was acquired with
   * @param fencingToken the lease's token
   * @param lease the lease time asked for
   * @param state what the backend returned with the grant
   */
  public BackendLease(
      String name, String ownerId, long fencingToken, Duration lease, Object state) {
    this(name, Claim.exclusive(), ownerId, fencingToken, lease, state);
  }

  /**
   * @param name the resource's name
   * @param claim what the lease took of it
   * @param ownerId the owner id the lease was acquired with
   * @param fencingToken the lease's token
   * @param lease the lease time asked for
   * @param state what the backend returned with the grant
   */
  public BackendLease(
      String name, Claim claim, String ownerId, long fencingToken, Duration lease, Object state) {
    this.claim = java.util.Objects.requireNonNull(claim, "claim");
    this.name = name;
    this.ownerId = ownerId;
    this.fencingToken = fencingToken;
    this.lease = lease;
    this.state = state;
  }

  /**
   * @return the lock's name
   */
  public String name() {
    return name;
  }

  /**
   * @return what the lease took: a whole lock, a permit, or a side of a read-write lock
   */
  public Claim claim() {
    return claim;
  }

  /**
   * @return the owner id the lease was acquired with
   */
  public String ownerId() {
    return ownerId;
  }

  /**
   * @return the lease's fencing token
   */
  public long fencingToken() {
    return fencingToken;
  }

  /**
   * @return the lease time asked for
   */
  public Duration lease() {
    return lease;
  }

  /**
   * @return what the backend returned with the grant
   */
  public Object state() {
    return state;
  }

  @Override
  public String toString() {
    return "BackendLease{"
        + name
        + (claim.isExclusive() ? "" : " (" + claim + ")")
        + ", owner "
        + ownerId
        + ", token "
        + fencingToken
        + "}";
  }
}
