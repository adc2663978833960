package dev.locksmith;

/**
 * A lease stopped being held before it was released: it expired without renewal, the server gave
 * the lock to someone else, renewal could not reach the server before the lease ran out, the
 * session ended, or the client was closed under it. Delivered by {@link Lease#lost()}.
 */
public final class LeaseLostException extends LockException {
  private static final long serialVersionUID = 1L;

  /** Why a lease was lost. */
  public enum Reason {
    /** The lease ran out without being renewed (auto-renew was off). */
    EXPIRED,
    /** The server no longer records us as the holder: the lock is gone or someone else has it. */
    TAKEN,
    /** Renewal could not reach the server before the lease ran out. */
    RENEWAL_FAILED,
    /** The backend's session (ZooKeeper session, etcd lease) ended. */
    SESSION_LOST,
    /** The client was closed while the lease was held; the lock was released or abandoned. */
    CLIENT_CLOSED
  }

  private final String lockName;
  private final long fencingToken;
  private final Reason reason;

  /**
   * @param lockName the lock whose lease was lost
   * @param fencingToken the token of the lost lease
   * @param reason why it was lost
   * @param detail what the backend observed
   */
  public LeaseLostException(String lockName, long fencingToken, Reason reason, String detail) {
    super(
        "lease on lock '"
            + lockName
            + "' (fencing token "
            + fencingToken
            + ") was lost: "
            + reason
            + (detail == null || detail.isEmpty() ? "" : " (" + detail + ")"));
    this.lockName = lockName;
    this.fencingToken = fencingToken;
    this.reason = reason;
  }

  /**
   * @return the lock whose lease was lost
   */
  public String lockName() {
    return lockName;
  }

  /**
   * @return the fencing token of the lost lease
   */
  public long fencingToken() {
    return fencingToken;
  }

  /**
   * @return why the lease was lost
   */
  public Reason reason() {
    return reason;
  }
}
