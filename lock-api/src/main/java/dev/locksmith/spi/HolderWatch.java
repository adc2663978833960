package dev.locksmith.spi;

/**
 * A watch on who holds one exclusive lock, opened by {@link LockBackend#watchHolder}: for {@link
 * dev.locksmith.Election#observe} observers, which read the lock's state when it calls them instead
 * of waiting for their next read. Closing it stops the calls.
 */
public interface HolderWatch extends AutoCloseable {

  /**
   * @return true if the watch is called after every grant as well as every release (a watch on the
   *     lock's own keys or nodes, or an in-process space), so that an observer reads only when
   *     called, when the leader's lease may have run out (a lease that runs out by time need not be
   *     announced) and, as a safety net, once a second; false if it is called after releases only
   *     (a release announcement), so that an observer still reads every {@link
   *     dev.locksmith.Election#OBSERVE_EVERY} for the grants it is not told of
   */
  boolean seesGrants();

  /** Stops the calls; must not throw, must not block for long. */
  @Override
  void close();

  /**
   * A watch whose closing runs {@code stop}, once (a second close does nothing).
   *
   * @param seesGrants what {@link #seesGrants()} answers
   * @param stop what stops the calls
   * @return the watch
   */
  static HolderWatch of(boolean seesGrants, Runnable stop) {
    java.util.Objects.requireNonNull(stop, "`stop` was null but it must stop the watch's calls");
    java.util.concurrent.atomic.AtomicBoolean closed =
        new java.util.concurrent.atomic.AtomicBoolean();
    return new HolderWatch() {
      @Override
      public boolean seesGrants() {
        return seesGrants;
      }

      @Override
      public void close() {
        if (closed.compareAndSet(false, true)) {
          stop.run();
        }
      }
    };
  }
}
