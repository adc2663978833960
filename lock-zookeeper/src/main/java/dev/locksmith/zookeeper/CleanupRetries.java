package dev.locksmith.zookeeper;

import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.Delayed;
import java.util.concurrent.TimeUnit;
import org.apache.curator.RetryPolicy;
import org.apache.curator.RetrySleeper;

/**
 * Curator's retry policy for this client: every operation gives up once the connection timeout has
 * passed without a connection ({@code RetryUntilElapsed}), except the clean-ups Curator never gives
 * up on.
 *
 * <p>After a protected create whose outcome is unknown (the connection was lost), Curator looks for
 * the node in the background and deletes it, and a guaranteed delete is retried until it succeeds.
 * When the retries of such an operation are exhausted, Curator hands it straight back for another
 * try, on the same thread: asked again and again about an operation whose time has passed, a plain
 * {@code RetryUntilElapsed} answers no at once each time, so while the server stays out of reach
 * the thread recurses until its stack overflows, logging each step (a client cut off from ZooKeeper
 * for longer than the connection timeout logged millions of lines). An operation that comes back
 * after it was told no is such a clean-up: it is let through again after {@link
 * #CLEANUP_RETRY_MILLIS}, from Curator's queue of delayed operations, until it succeeds or the
 * client closes. Every other operation is bounded as before; foreground calls, whose sleeper
 * Curator shares between them, are never let through past their time.
 */
final class CleanupRetries implements RetryPolicy {
  /**
   * How often a clean-up that outlived its retries tries again while the server is out of reach.
   */
  static final long CLEANUP_RETRY_MILLIS = 1_000;

  private final RetryPolicy bounded;

  /** Operations told no, by their sleeper (Curator's record of one background operation). */
  private final Map<RetrySleeper, Boolean> exhausted =
      Collections.synchronizedMap(new WeakHashMap<>());

  CleanupRetries(RetryPolicy bounded) {
    this.bounded = bounded;
  }

  @Override
  public boolean allowRetry(int retryCount, long elapsedTimeMs, RetrySleeper sleeper) {
    if (bounded.allowRetry(retryCount, elapsedTimeMs, sleeper)) {
      return true;
    }
    // Only a background operation's record is one per operation (it is a Delayed: Curator's
    // queue of delayed operations holds it); a foreground call's sleeper is shared by all of them.
    if (!(sleeper instanceof Delayed) || exhausted.put(sleeper, Boolean.TRUE) == null) {
      return false; // the first no: an ordinary operation fails here, and is not asked about again
    }
    try {
      sleeper.sleepFor(
          CLEANUP_RETRY_MILLIS,
          TimeUnit.MILLISECONDS); // a background operation's delay, not a sleep
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
    return true;
  }

  @Override
  public boolean allowRetry(Throwable exception) {
    return bounded.allowRetry(exception);
  }
}
