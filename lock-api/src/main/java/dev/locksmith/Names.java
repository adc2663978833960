package dev.locksmith;

import dev.locksmith.spi.Durations;
import java.time.Duration;

/**
 * Argument checks shared by every backend, so that every backend rejects the same things the same
 * way.
 */
final class Names {
  static final int MAX_LENGTH = 255;
  private static final String RULE =
      "it must be 1 to " + MAX_LENGTH + " characters without control characters";

  private Names() {}

  static String check(String name) {
    if (name == null) {
      throw new NullPointerException("`name` was null but " + RULE);
    }
    if (name.isEmpty()) {
      throw new IllegalArgumentException("`name` was '' but " + RULE);
    }
    if (name.length() > MAX_LENGTH) {
      throw new IllegalArgumentException(
          "`name` was '"
              + show(name.substring(0, 40))
              + "…' ("
              + name.length()
              + " characters) but it must be at most "
              + MAX_LENGTH
              + " characters");
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (Character.isISOControl(c)) {
        throw new IllegalArgumentException(
            "`name` was '"
                + show(name)
                + "' but it has the control character "
                + String.format("U+%04X", (int) c)
                + " at index "
                + i
                + "; "
                + RULE);
      }
      if (Character.isHighSurrogate(c)
              && (i + 1 == name.length() || !Character.isLowSurrogate(name.charAt(i + 1)))
          || Character.isLowSurrogate(c)
              && (i == 0 || !Character.isHighSurrogate(name.charAt(i - 1)))) {
        throw new IllegalArgumentException(
            "`name` was '"
                + show(name)
                + "' but it has an unpaired surrogate "
                + String.format("U+%04X", (int) c)
                + " at index "
                + i
                + "; it must be valid Unicode text");
      }
    }
    return name;
  }

  /** Escapes control characters so a message shows what was passed. */
  static String show(String s) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isISOControl(c) || Character.isSurrogate(c)) {
        b.append(String.format("\\u%04X", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }

  static long timeoutNanos(Duration timeout) {
    if (timeout == null) {
      throw new NullPointerException(
          "`timeout` was null but it must be zero (one attempt) or a positive duration such as 5s");
    }
    if (timeout.isNegative()) {
      throw new IllegalArgumentException(
          "`timeout` was '"
              + Durations.format(timeout)
              + "' but it must be zero (one attempt) or a positive duration such as 5s; longer than"
              + " 292 years waits for ever");
    }
    return Durations.toNanosSaturated(timeout);
  }

  /**
   * @param executor the executor an asynchronous acquire runs on
   * @throws NullPointerException if it is null, naming the parameter
   */
  static void checkExecutor(java.util.concurrent.Executor executor) {
    if (executor == null) {
      throw new NullPointerException(
          "`executor` was null but it must be an Executor for blocking work, such as"
              + " Executors.newVirtualThreadPerTaskExecutor()");
    }
  }
}
