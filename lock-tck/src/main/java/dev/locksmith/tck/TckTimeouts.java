package dev.locksmith.tck;

import java.time.Duration;
import java.util.Objects;

/**
 * Every time limit the kit uses, in one place, scaled by the environment variable {@code
 * LOCKSMITH_TCK_TIME_SCALE} (a positive number; 2 doubles every limit) for slow machines. A backend
 * whose locks are freed by a session timeout rather than the lease overrides {@link
 * LockCompatibilityKit#timeouts()} with a larger {@link #expirySlack()}.
 */
public final class TckTimeouts {
  /** The environment variable that scales every limit. */
  public static final String SCALE_VARIABLE = "LOCKSMITH_TCK_TIME_SCALE";

  private final double scale;
  private final Duration lease;
  private final Duration tolerance;
  private final Duration expirySlack;
  private final Duration wakeUp;

  private TckTimeouts(
      double scale, Duration lease, Duration tolerance, Duration expirySlack, Duration wakeUp) {
    this.scale = scale;
    this.lease = lease;
    this.tolerance = tolerance;
    this.expirySlack = expirySlack;
    this.wakeUp = wakeUp;
  }

  /**
   * @return the defaults (lease 1s, tolerance 1s, expiry slack 1s, wake-up 50ms), scaled by {@code
   *     LOCKSMITH_TCK_TIME_SCALE}
   * @throws IllegalArgumentException if the variable is set but not a positive number
   */
  public static TckTimeouts fromEnvironment() {
    String text = System.getenv(SCALE_VARIABLE);
    double scale = 1.0;
    if (text != null && !text.isBlank()) {
      try {
        scale = Double.parseDouble(text.trim());
      } catch (NumberFormatException e) {
        scale = -1;
      }
      if (!(scale > 0) || scale > 100) {
        throw new IllegalArgumentException(
            "`"
                + SCALE_VARIABLE
                + "` was '"
                + text
                + "' but it must be a number above 0 and at most 100, such as 2");
      }
    }
    return new TckTimeouts(
        scale, scaled(scale, 1000), scaled(scale, 1000), scaled(scale, 1000), scaled(scale, 50));
  }

  private static Duration scaled(double scale, long millis) {
    return Duration.ofMillis(Math.round(millis * scale));
  }

  /**
   * @return the factor every limit was multiplied by
   */
  public double scale() {
    return scale;
  }

  /**
   * @return the short lease the kit's clients hold locks with, so expiry rules run fast
   */
  public Duration lease() {
    return lease;
  }

  /**
   * @return slack for scheduling and round trips on top of any expected time
   */
  public Duration tolerance() {
    return tolerance;
  }

  /**
   * @return how long after its lease a vanished holder's lock may stay taken; a backend freed by a
   *     session timeout sets its session timeout here
   */
  public Duration expirySlack() {
    return expirySlack;
  }

  /**
   * @return the longest median hand-off from release to a waiter's grant under notified wake-up
   */
  public Duration wakeUp() {
    return wakeUp;
  }

  /**
   * @param lease the lease for the kit's clients
   * @return a copy with that lease
   */
  public TckTimeouts withLease(Duration lease) {
    return new TckTimeouts(
        scale, Objects.requireNonNull(lease, "lease"), tolerance, expirySlack, wakeUp);
  }

  /**
   * @param tolerance the slack for scheduling and round trips
   * @return a copy with that tolerance
   */
  public TckTimeouts withTolerance(Duration tolerance) {
    return new TckTimeouts(
        scale, lease, Objects.requireNonNull(tolerance, "tolerance"), expirySlack, wakeUp);
  }

  /**
   * @param expirySlack how long after its lease a vanished holder's lock may stay taken
   * @return a copy with that slack
   */
  public TckTimeouts withExpirySlack(Duration expirySlack) {
    return new TckTimeouts(
        scale, lease, tolerance, Objects.requireNonNull(expirySlack, "expirySlack"), wakeUp);
  }

  /**
   * @param wakeUp the longest median hand-off under notified wake-up
   * @return a copy with that bound
   */
  public TckTimeouts withWakeUp(Duration wakeUp) {
    return new TckTimeouts(
        scale, lease, tolerance, expirySlack, Objects.requireNonNull(wakeUp, "wakeUp"));
  }

  @Override
  public String toString() {
    return "TckTimeouts{scale="
        + scale
        + ", lease="
        + lease
        + ", tolerance="
        + tolerance
        + ", expirySlack="
        + expirySlack
        + ", wakeUp="
        + wakeUp
        + "}";
  }
}
