package dev.locksmith;

import java.time.Duration;

/**
 * A listener for what happens to locks of one client, for metrics and logs. Every method has an
 * empty default; override what you need. Methods are called on the client's event thread, never
 * while a lock operation waits on them, so a slow listener delays other events, not locking. An
 * exception thrown by a listener is logged and otherwise ignored.
 *
 * <pre>{@code
 * LockConfig config = LockConfig.builder().uri("redis://localhost:6379").events(new LockEvents() {
 *   public void acquired(String name, long token, Duration waited) { timer.record(waited); }
 * }).build();
 * }</pre>
 */
public interface LockEvents {
  /** Ignores every event. */
  LockEvents NONE = new LockEvents() {};

  /**
   * A lease was granted (not called for a reentrant re-acquire).
   *
   * @param name the lock
   * @param fencingToken the new lease's token
   * @param waited from the call to the grant
   */
  default void acquired(String name, long fencingToken, Duration waited) {}

  /** Why an acquire gave up, as told to {@link #gaveUp(String, Duration, GiveUpReason)}. */
  enum GiveUpReason {
    /**
     * The wait ran out, or a single attempt ({@code tryAcquire()}, a zero timeout) found the lock
     * held.
     */
    TIMEOUT,
    /** The waiting thread was interrupted. */
    INTERRUPTED,
    /**
     * The wait was cancelled: {@code acquireAsync}'s future was cancelled or completed by its
     * caller.
     */
    CANCELLED,
    /**
     * The backend or the client failed: server unreachable, client closed while waiting, and the
     * like.
     */
    ERROR
  }

  /**
   * An acquire gave up: timed out, interrupted or cancelled. Called by the default {@link
   * #gaveUp(String, Duration, GiveUpReason)}; a listener that needs the reason overrides that one
   * instead.
   *
   * @param name the lock
   * @param waited from the call to giving up
   */
  default void gaveUp(String name, Duration waited) {}

  /**
   * An acquire gave up, and why. The client calls this one; its default calls {@link
   * #gaveUp(String, Duration)}, so listeners written before it keep working.
   *
   * @param name the lock
   * @param waited from the call to giving up
   * @param reason why it gave up
   */
  default void gaveUp(String name, Duration waited, GiveUpReason reason) {
    gaveUp(name, waited);
  }

  /**
   * A lease was renewed.
   *
   * @param name the lock
   * @param fencingToken the lease's token
   * @param took the round trip of the renewal
   */
  default void renewed(String name, long fencingToken, Duration took) {}

  /**
   * A renewal could not reach the server; it is retried until the lease would expire.
   *
   * @param name the lock
   * @param fencingToken the lease's token
   * @param cause what failed
   */
  default void renewalFailed(String name, long fencingToken, Throwable cause) {}

  /**
   * A lease was lost while held.
   *
   * @param name the lock
   * @param fencingToken the lease's token
   * @param cause why
   */
  default void lost(String name, long fencingToken, LeaseLostException cause) {}

  /**
   * A lease was released by its holder.
   *
   * @param name the lock
   * @param fencingToken the lease's token
   * @param held from grant to release
   * @param stillHeld whether the server still had us as the holder at release
   */
  default void released(String name, long fencingToken, Duration held, boolean stillHeld) {}
}
