package dev.locksmith.spi;

import java.time.Duration;
import java.util.Objects;

/** The outcome of one {@link LockAttempt#poll()}. */
public final class Poll {
  /** Marks a grant whose validity the core computes: from the poll's start plus the lease. */
  private static final long FROM_LEASE = Long.MIN_VALUE;

  /** Marks a grant held until the backend reports it lost. */
  private static final long BY_SESSION = Long.MAX_VALUE;

  private final boolean granted;
  private final boolean session;
  private final long fencingToken;
  private final long validUntilNanos;
  private final Object state;
  private final Duration retryAfter;

  private Poll(
      boolean granted, long fencingToken, long validUntilNanos, Object state, Duration retryAfter) {
    this(granted, false, fencingToken, validUntilNanos, state, retryAfter);
  }

  private Poll(
      boolean granted,
      boolean session,
      long fencingToken,
      long validUntilNanos,
      Object state,
      Duration retryAfter) {
    this.granted = granted;
    this.session = session;
    this.fencingToken = fencingToken;
    this.validUntilNanos = validUntilNanos;
    this.state = state;
    this.retryAfter = retryAfter;
  }

  /**
   * The lock is ours for the lease, counted from the start of the poll.
   *
   * @param fencingToken greater than zero
   * @param state anything the backend needs later to renew or release; handed back in {@link
   *     BackendLease#state()}
   * @return the outcome
   */
  public static Poll granted(long fencingToken, Object state) {
    return new Poll(true, checkToken(fencingToken), FROM_LEASE, state, null);
  }

  /**
   * The lock is ours until a time the backend computed (Redlock: lease minus elapsed minus drift).
   *
   * @param fencingToken greater than zero
   * @param validUntilNanos a {@link System#nanoTime()} value
   * @param state handed back in {@link BackendLease#state()}
   * @return the outcome
   */
  public static Poll grantedUntil(long fencingToken, long validUntilNanos, Object state) {
    if (validUntilNanos == FROM_LEASE || validUntilNanos == BY_SESSION) {
      validUntilNanos += validUntilNanos == FROM_LEASE ? 1 : -1;
    }
    return new Poll(true, checkToken(fencingToken), validUntilNanos, state, null);
  }

  /**
   * The lock is ours while the backend's session lives; the backend reports loss through {@link
   * BackendContext}. Only for backends whose {@link LockBackend#renewsBySession()} is true. The
   * grant counts as valid without a bound until the backend bounds it with {@link
   * BackendContext#leaseValidUntil}: prefer {@link #grantedForSession(long, long, Object)} unless
   * the backend's own heartbeat already bounds every lease it grants.
   *
   * @param fencingToken greater than zero
   * @param state handed back in {@link BackendLease#state()}
   * @return the outcome
   */
  public static Poll grantedForSession(long fencingToken, Object state) {
    return new Poll(true, true, checkToken(fencingToken), BY_SESSION, state, null);
  }

  /**
   * The lock is ours while the backend's session lives, and counts as valid no longer than {@code
   * validUntilNanos} unless the backend extends or lifts that bound through {@link
   * BackendContext#leaseValidUntil} (each heartbeat that confirms the session moves it; {@link
   * Long#MAX_VALUE} lifts it). Give the session's last confirmation plus its timeout, so that a
   * grant made just before the connection was cut, before any heartbeat knew of it, is still
   * reported lost in time (kit rule 14.3). Only for backends whose {@link
   * LockBackend#renewsBySession()} is true.
   *
   * @param fencingToken greater than zero
   * @param validUntilNanos a {@link System#nanoTime()} value
   * @param state handed back in {@link BackendLease#state()}
   * @return the outcome
   */
  public static Poll grantedForSession(long fencingToken, long validUntilNanos, Object state) {
    if (validUntilNanos == FROM_LEASE) {
      validUntilNanos++;
    }
    return new Poll(true, true, checkToken(fencingToken), validUntilNanos, state, null);
  }

  /**
   * Someone else holds the lock. The core waits until woken, until {@code retryAfter}, or until the
   * client's recheck interval, whichever comes first.
   *
   * @param retryAfter when a new poll could succeed without a wake-up (the holder's lease ends, a
   *     backoff step); {@link Duration#ZERO} to poll again at once
   * @return the outcome
   */
  public static Poll busy(Duration retryAfter) {
    Objects.requireNonNull(retryAfter, "retryAfter");
    return new Poll(false, 0, 0, null, retryAfter.isNegative() ? Duration.ZERO : retryAfter);
  }

  private static long checkToken(long token) {
    if (token <= 0) {
      throw new IllegalArgumentException(
          "`fencingToken` was " + token + " but it must be greater than 0");
    }
    return token;
  }

  /**
   * @return whether the lock was granted
   */
  public boolean isGranted() {
    return granted;
  }

  /**
   * @return the fencing token of a grant
   */
  public long fencingToken() {
    return fencingToken;
  }

  /**
   * @param pollStartNanos when the poll started
   * @param leaseNanos the lease asked for
   * @return until when a grant is valid, as a {@link System#nanoTime()} value; {@link
   *     Long#MAX_VALUE} for a session grant without a bound
   */
  public long validUntilNanos(long pollStartNanos, long leaseNanos) {
    return validUntilNanos == FROM_LEASE ? pollStartNanos + leaseNanos : validUntilNanos;
  }

  /**
   * @return whether a grant lasts while the backend's session does
   */
  public boolean isSessionGrant() {
    return granted && session;
  }

  /**
   * @return the backend's state for a grant
   */
  public Object state() {
    return state;
  }

  /**
   * @return for a busy outcome, when to retry without a wake-up
   */
  public Duration retryAfter() {
    return retryAfter;
  }

  @Override
  public String toString() {
    return granted
        ? "granted(token " + fencingToken + ")"
        : "busy(retry after " + Durations.format(retryAfter) + ")";
  }
}
