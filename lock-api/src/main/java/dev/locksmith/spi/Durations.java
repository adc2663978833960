package dev.locksmith.spi;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads and writes durations the way people type them in configuration: {@code 30s}, {@code 500ms},
 * {@code 2m}, {@code 1h}, {@code 1d}, or ISO-8601 such as {@code PT30S}.
 */
public final class Durations {
  private static final Pattern SIMPLE =
      Pattern.compile("(\\d{1,12})\\s*(ms|s|m|h|d)", Pattern.CASE_INSENSITIVE);

  private Durations() {}

  /**
   * Parses a duration.
   *
   * @param text the text, such as {@code 30s}, {@code 250ms} or {@code PT1M}
   * @return the duration
   * @throws IllegalArgumentException if the text is not a duration; the message says which forms
   *     are valid
   */
  public static Duration parse(String text) {
    if (text == null) {
      throw new IllegalArgumentException(
          "was null but it must be a duration such as 30s, 500ms, 2m, 1h or PT30S");
    }
    String t = text.trim();
    Matcher m = SIMPLE.matcher(t);
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
      switch (m.group(2).toLowerCase(Locale.ROOT)) {
        case "ms":
          return Duration.ofMillis(n);
        case "s":
          return Duration.ofSeconds(n);
        case "m":
          return Duration.ofMinutes(n);
        case "h":
          return Duration.ofHours(n);
        default:
          return Duration.ofDays(n);
      }
    }
    if (t.regionMatches(true, 0, "P", 0, 1) || t.regionMatches(true, 0, "-P", 0, 2)) {
      try {
        return Duration.parse(t);
      } catch (DateTimeParseException e) {
        // fall through to the common message
      }
    }
    throw new IllegalArgumentException(
        "'"
            + text
            + "' is not a duration: use a whole number with a unit (ms, s, m, h, d) such as 30s or"
            + " 500ms, or ISO-8601 such as PT30S");
  }

  /**
   * Formats a duration compactly for messages: {@code 1.5s}, {@code 250ms}, {@code 2m}. Any
   * duration can be formatted, {@code Duration.ofSeconds(Long.MIN_VALUE)} and {@code
   * Duration.ofSeconds(Long.MAX_VALUE)} included.
   *
   * @param d the duration
   * @return the text
   */
  public static String format(Duration d) {
    if (d == null) {
      return "null";
    }
    if (d.isNegative()) {
      // the most negative duration has no positive counterpart: negating it would overflow
      return d.getSeconds() == Long.MIN_VALUE && d.getNano() == 0
          ? Long.MIN_VALUE + "s"
          : "-" + format(d.negated());
    }
    if (d.getSeconds() >= Long.MAX_VALUE / 1000) {
      // beyond what toMillis() can hold: whole days, hours or seconds, never an ArithmeticException
      long s = d.getSeconds();
      return s % 86_400 == 0 ? s / 86_400 + "d" : s % 3_600 == 0 ? s / 3_600 + "h" : s + "s";
    }
    long ms = d.toMillis();
    if (ms < 1000 && d.toNanos() % 1_000_000 != 0) {
      // exact, never rounded: 999999ns must not read as the 1ms it falls short of
      return java.math.BigDecimal.valueOf(d.toNanos(), 6).stripTrailingZeros().toPlainString()
          + "ms";
    }
    if (ms < 1000) {
      return ms + "ms";
    }
    if (ms % 3_600_000 == 0) {
      return ms / 3_600_000 + "h";
    }
    if (ms % 60_000 == 0) {
      return ms / 60_000 + "m";
    }
    if (ms % 1000 == 0) {
      return ms / 1000 + "s";
    }
    return String.format(Locale.ROOT, "%.3fs", ms / 1000.0);
  }

  /**
   * Converts to nanoseconds, saturating instead of overflowing: a duration of years means "wait as
   * long as it takes", not an {@link ArithmeticException}.
   *
   * @param d the duration, not negative
   * @return its length in nanoseconds, at most {@link Long#MAX_VALUE}
   */
  public static long toNanosSaturated(Duration d) {
    if (d.getSeconds() >= Long.MAX_VALUE / 1_000_000_000L - 1) {
      return Long.MAX_VALUE;
    }
    return d.toNanos();
  }
}
