package dev.locksmith.spi;

import java.util.Objects;

/**
 * What one lease takes of a named resource: the whole of an exclusive lock, one permit of a
 * semaphore, or the read or the write side of a read-write lock. Immutable.
 *
 * <p><b>Resources.</b> An exclusive lock, a semaphore and a read-write lock of the same name are
 * three different resources: a backend keeps them apart (separate keys, rows or nodes), so that
 * taking one never blocks or frees another.
 *
 * <p><b>What a backend must keep true</b>, on the server, in one atomic step per grant:
 *
 * <ul>
 *   <li>{@link Kind#PERMIT}: at most {@link #permits()} live leases of the semaphore. The count is
 *       kept with the semaphore while any lease is live; a grant asked with another count while
 *       leases live throws {@link #permitsInUse} from {@link LockAttempt#poll()} and takes nothing.
 *       A semaphore with no live lease takes the count of its next grant.
 *   <li>{@link Kind#WRITE}: granted only when no lease of the read-write lock, read or write, is
 *       live. {@link Kind#READ}: granted only when no write lease is live <em>and no writer is
 *       waiting</em> (writer preference: a steady stream of readers never starves a writer). A
 *       waiting writer's mark must end by itself within a few recheck intervals ({@link
 *       BackendContext#recheck()}) if the writer vanishes, and at once when it withdraws ({@link
 *       LockAttempt#abandon()}) or is granted. Backends that queue every waiter in arrival order
 *       (ZooKeeper sequence nodes, etcd revisions) may instead grant a reader once no write lease
 *       or write waiter is ahead of it, and a writer once nothing is ahead of it.
 *   <li>Leases expire like a lock's: a holder that vanishes frees its permit or side within its
 *       lease plus the backend's slack; renewals, releases and extends are owner-checked per lease.
 *   <li>Fencing: one counter per resource. Every grant's token is above every earlier grant's of
 *       the same resource, so a write lease's token is above every earlier lease's, and a read
 *       lease's above every earlier write lease's.
 *   <li>Wake-up: a release of a permit or a side (and a writer's withdrawal, which may free
 *       readers) wakes waiters of the same resource as the backend's {@link
 *       dev.locksmith.Guarantees.Feature#NOTIFIED_WAKEUP} says for locks.
 * </ul>
 */
public final class Claim {
  /** The most permits a semaphore may have. */
  public static final int MAX_PERMITS = 10_000;

  /** The kind of a claim. */
  public enum Kind {
    /** The whole of an exclusive lock. */
    EXCLUSIVE,
    /** One permit of a semaphore. */
    PERMIT,
    /** The shared side of a read-write lock. */
    READ,
    /** The exclusive side of a read-write lock. */
    WRITE
  }

  private static final Claim EXCLUSIVE = new Claim(Kind.EXCLUSIVE, 1);
  private static final Claim READ = new Claim(Kind.READ, 0);
  private static final Claim WRITE = new Claim(Kind.WRITE, 0);

  private final Kind kind;
  private final int permits;

  private Claim(Kind kind, int permits) {
    this.kind = kind;
    this.permits = permits;
  }

  /**
   * @return the claim of an exclusive lock
   */
  public static Claim exclusive() {
    return EXCLUSIVE;
  }

  /**
   * @param permits the semaphore's number of permits, 1 to {@link #MAX_PERMITS}
   * @return the claim of one permit of a semaphore with that many
   * @throws IllegalArgumentException if {@code permits} is out of range
   */
  public static Claim permit(int permits) {
    if (permits < 1 || permits > MAX_PERMITS) {
      throw new IllegalArgumentException(
          "`permits` was " + permits + " but it must be from 1 to " + MAX_PERMITS);
    }
    return new Claim(Kind.PERMIT, permits);
  }

  /**
   * @return the claim of the read side of a read-write lock
   */
  public static Claim read() {
    return READ;
  }

  /**
   * @return the claim of the write side of a read-write lock
   */
  public static Claim write() {
    return WRITE;
  }

  /**
   * @return the kind
   */
  public Kind kind() {
    return kind;
  }

  /**
   * @return the semaphore's permits for {@link Kind#PERMIT}; 1 for an exclusive lock; 0 for a
   *     read-write side
   */
  public int permits() {
    return permits;
  }

  /**
   * @return whether this claims a whole exclusive lock
   */
  public boolean isExclusive() {
    return kind == Kind.EXCLUSIVE;
  }

  /**
   * The error a backend throws from {@link LockAttempt#poll()} when a semaphore is asked for with
   * another count than the one its live leases hold, so that every backend words it alike.
   *
   * @param name the semaphore's name
   * @param asked the count this claim asked for
   * @param inUse the count the live leases hold
   * @return the exception to throw
   */
  public static IllegalStateException permitsInUse(String name, int asked, int inUse) {
    return new IllegalStateException(
        "`permits` was "
            + asked
            + " for semaphore '"
            + name
            + "' but it is in use with "
            + inUse
            + " permits: every client must give the same count; it can change only when no permit"
            + " is held");
  }

  /**
   * @param kind a kind
   * @return the word the core's messages use for a resource of that kind
   */
  public static String noun(Kind kind) {
    switch (Objects.requireNonNull(kind, "kind")) {
      case PERMIT:
        return "semaphore";
      case READ:
      case WRITE:
        return "read-write lock";
      default:
        return "lock";
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Claim && ((Claim) o).kind == kind && ((Claim) o).permits == permits;
  }

  @Override
  public int hashCode() {
    return kind.hashCode() * 31 + permits;
  }

  @Override
  public String toString() {
    switch (kind) {
      case PERMIT:
        return "1 of " + permits + " permits";
      case READ:
        return "read";
      case WRITE:
        return "write";
      default:
        return "exclusive";
    }
  }
}
