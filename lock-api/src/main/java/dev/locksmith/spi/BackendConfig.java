package dev.locksmith.spi;

import dev.locksmith.LockConfigurationException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The URI and backend options as a {@link LockProvider} reads them. The typed getters never throw:
 * a bad value is recorded as a problem and the default returned, so that {@link #check()} can
 * report every problem at once before anything is opened.
 */
public final class BackendConfig {
  private final LockUri uri;
  private final Map<String, String> options;
  private final List<String> problems;

  /**
   * @param uri the parsed lock URI
   * @param options backend options, from the URI's query and separately given settings
   * @param problems problems already found by the core (such as unknown options); copied
   */
  public BackendConfig(LockUri uri, Map<String, String> options, List<String> problems) {
    this.uri = Objects.requireNonNull(uri, "uri");
    this.options = Collections.unmodifiableMap(new LinkedHashMap<>(options));
    this.problems = new ArrayList<>(problems);
  }

  /**
   * @return the lock URI
   */
  public LockUri uri() {
    return uri;
  }

  /**
   * @return every backend option as given
   */
  public Map<String, String> options() {
    return options;
  }

  /**
   * @param key an option
   * @param defaultValue returned when the option is absent
   * @return the option's text
   */
  public String string(String key, String defaultValue) {
    return options.getOrDefault(key, defaultValue);
  }

  /**
   * @param key an option
   * @param defaultValue returned when the option is absent or bad
   * @param min smallest valid value
   * @param max largest valid value
   * @return the duration
   */
  public Duration duration(String key, Duration defaultValue, Duration min, Duration max) {
    String text = options.get(key);
    if (text == null) {
      return defaultValue;
    }
    String range =
        "a duration from "
            + Durations.format(min)
            + " to "
            + Durations.format(max)
            + ", such as "
            + Durations.format(defaultValue);
    try {
      Duration d = Durations.parse(text);
      if (d.compareTo(min) >= 0 && d.compareTo(max) <= 0) {
        return d;
      }
    } catch (IllegalArgumentException e) {
      // reported below
    }
    problem(key, text, "it must be " + range);
    return defaultValue;
  }

  /**
   * @param key an option
   * @param defaultValue returned when the option is absent or bad
   * @param min smallest valid value
   * @param max largest valid value
   * @return the number
   */
  public int integer(String key, int defaultValue, int min, int max) {
    String text = options.get(key);
    if (text == null) {
      return defaultValue;
    }
    try {
      int n = Integer.parseInt(text.trim());
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    problem(key, text, "it must be a whole number from " + min + " to " + max);
    return defaultValue;
  }

  /**
   * @param key an option
   * @param defaultValue returned when the option is absent or bad
   * @return the flag
   */
  public boolean bool(String key, boolean defaultValue) {
    String text = options.get(key);
    if (text == null) {
      return defaultValue;
    }
    if (text.equalsIgnoreCase("true") || text.equalsIgnoreCase("false")) {
      return Boolean.parseBoolean(text.toLowerCase(java.util.Locale.ROOT));
    }
    problem(key, text, "it must be true or false");
    return defaultValue;
  }

  /**
   * Records a problem in the standard form: {@code `key` was 'value' but reason}. Values of options
   * whose key names a secret are redacted.
   *
   * @param key the option or part of the URI
   * @param value what was given
   * @param reason {@code it must be ...}
   */
  public void problem(String key, String value, String reason) {
    String shown = LockUri.redactValue(key, value);
    problems.add("`" + key + "` was '" + shown + "' but " + reason);
  }

  /**
   * Records a problem in free form.
   *
   * @param message the whole problem, secrets already redacted
   */
  public void problem(String message) {
    problems.add(Objects.requireNonNull(message, "message"));
  }

  /**
   * @throws LockConfigurationException listing every problem recorded so far, if any
   */
  public void check() {
    if (!problems.isEmpty()) {
      throw new LockConfigurationException(problems);
    }
  }
}
