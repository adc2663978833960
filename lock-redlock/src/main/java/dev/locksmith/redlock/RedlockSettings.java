package dev.locksmith.redlock;

import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.Durations;
import java.time.Duration;
import java.util.Locale;
import java.util.Set;

/**
 * The options Redlock adds to those of every Redis server: the clock-drift allowance and the
 * per-server timeout. Problems go into the {@link BackendConfig}, to be reported with the rest.
 */
final class RedlockSettings {
  static final String DRIFT_FACTOR = "drift-factor";
  static final String SERVER_TIMEOUT = "server-timeout";
  static final Set<String> OPTIONS = Set.of(DRIFT_FACTOR, SERVER_TIMEOUT);

  static final double DEFAULT_DRIFT_FACTOR = 0.01;

  /** Added to the drift allowance: the resolution of the servers' expiry clocks. */
  static final Duration DRIFT_FLOOR = Duration.ofMillis(2);

  static final Duration MIN_SERVER_TIMEOUT = Duration.ofMillis(10);

  private final double driftFactor;

  /** Null: a tenth of the lease, from 10ms up to the command timeout. */
  private final Duration serverTimeout;

  private final Duration commandTimeout;

  RedlockSettings(double driftFactor, Duration serverTimeout, Duration commandTimeout) {
    this.driftFactor = driftFactor;
    this.serverTimeout = serverTimeout;
    this.commandTimeout = commandTimeout;
  }

  static RedlockSettings read(BackendConfig config, Duration commandTimeout) {
    double drift = DEFAULT_DRIFT_FACTOR;
    String text = config.options().get(DRIFT_FACTOR);
    if (text != null) {
      double d;
      try {
        d = Double.parseDouble(text.trim());
      } catch (NumberFormatException e) {
        d = Double.NaN;
      }
      if (!(d >= 0 && d <= 0.5)) {
        config.problem(
            DRIFT_FACTOR,
            text,
            "it must be a number from 0 to 0.5, the share of the lease allowed for clock drift,"
                + " such as 0.01");
      } else {
        drift = d;
      }
    }
    Duration serverTimeout = null;
    if (config.options().containsKey(SERVER_TIMEOUT)) {
      serverTimeout =
          config.duration(
              SERVER_TIMEOUT, Duration.ofMillis(100), MIN_SERVER_TIMEOUT, Duration.ofMinutes(1));
      if (serverTimeout.compareTo(commandTimeout) > 0) {
        config.problem(
            SERVER_TIMEOUT,
            config.options().get(SERVER_TIMEOUT),
            "it must not exceed the command-timeout of " + Durations.format(commandTimeout));
      }
    }
    return new RedlockSettings(drift, serverTimeout, commandTimeout);
  }

  double driftFactor() {
    return driftFactor;
  }

  /**
   * @return the drift allowance for a lease: lease * drift-factor + 2ms
   */
  long driftNanos(Duration lease) {
    return (long) (lease.toNanos() * driftFactor) + DRIFT_FLOOR.toNanos();
  }

  /**
   * @return how long one server may take to answer an acquire or a release: short against the lease
   */
  Duration perServerTimeout(Duration lease) {
    if (serverTimeout != null) {
      return serverTimeout;
    }
    Duration tenth = lease.dividedBy(10);
    if (tenth.compareTo(MIN_SERVER_TIMEOUT) < 0) {
      tenth = MIN_SERVER_TIMEOUT;
    }
    return tenth.compareTo(commandTimeout) > 0 ? commandTimeout : tenth;
  }

  /**
   * @return how long one server may take to answer a renewal pipeline: a third of the lease at most
   */
  Duration renewTimeout(Duration shortestLease) {
    Duration third = shortestLease.dividedBy(3);
    Duration own = perServerTimeout(shortestLease);
    Duration t = third.compareTo(own) > 0 ? third : own;
    if (t.compareTo(commandTimeout) > 0) {
      t = commandTimeout;
    }
    return t;
  }

  @Override
  public String toString() {
    return String.format(
        Locale.ROOT,
        "drift-factor=%s, server-timeout=%s",
        driftFactor,
        serverTimeout == null ? "lease/10" : Durations.format(serverTimeout));
  }
}
