package dev.locksmith.cli;

import dev.locksmith.spi.Durations;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Command-line options of one subcommand: {@code --key value}, {@code --key=value}, flags, and what
 * follows {@code --}.
 */
final class Args {
  private final Map<String, String> options = new LinkedHashMap<>();
  private final Map<String, List<String>> every = new LinkedHashMap<>();
  private final List<String> positional = new ArrayList<>();
  private final List<String> rest = new ArrayList<>();

  /** A bad command line: printed as one line plus the usage, exit status 2. */
  static final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }

  /**
   * @param argv the arguments after the subcommand
   * @param valued options that take a value
   * @param flags options that take none
   */
  static Args parse(List<String> argv, Set<String> valued, Set<String> flags) {
    Args a = new Args();
    for (int i = 0; i < argv.size(); i++) {
      String arg = argv.get(i);
      if (arg.equals("--")) {
        a.rest.addAll(argv.subList(i + 1, argv.size()));
        break;
      }
      if (arg.startsWith("--") && arg.length() > 2) {
        String key = arg.substring(2);
        String value = null;
        int eq = key.indexOf('=');
        if (eq >= 0) {
          value = key.substring(eq + 1);
          key = key.substring(0, eq);
        }
        if (flags.contains(key)) {
          if (value != null) {
            throw new UsageException("--" + key + " takes no value");
          }
          a.options.put(key, "true");
        } else if (valued.contains(key)) {
          if (value == null) {
            if (i + 1 >= argv.size()) {
              throw new UsageException("--" + key + " needs a value");
            }
            value = argv.get(++i);
          }
          a.options.put(key, value);
          a.every.computeIfAbsent(key, k -> new ArrayList<>()).add(value);
        } else {
          List<String> known = new ArrayList<>();
          valued.stream().sorted().forEach(k -> known.add("--" + k + " VALUE"));
          flags.stream().sorted().forEach(k -> known.add("--" + k));
          throw new UsageException(
              "unknown option --" + key + "; the options are " + String.join(", ", known));
        }
      } else {
        a.positional.add(arg);
      }
    }
    return a;
  }

  String get(String key) {
    return options.get(key);
  }

  /**
   * @return every value the option was given, in the order given; empty when not given
   */
  List<String> all(String key) {
    return every.getOrDefault(key, List.of());
  }

  boolean flag(String key) {
    return options.containsKey(key);
  }

  /**
   * @return the option's duration, from {@code min} to {@code max}; {@code defaultValue} when not
   *     given
   */
  Duration duration(String key, Duration defaultValue, Duration min, Duration max) {
    String v = options.get(key);
    if (v == null) {
      return defaultValue;
    }
    if (min.isZero() && v.trim().equals("0")) {
      return Duration.ZERO;
    }
    try {
      Duration d = Durations.parse(v);
      if (d.compareTo(min) >= 0 && d.compareTo(max) <= 0) {
        return d;
      }
    } catch (IllegalArgumentException e) {
      // reported below
    }
    throw new UsageException(
        "--"
            + key
            + " was '"
            + v
            + "' but it must be a duration from "
            + bound(min)
            + " to "
            + bound(max)
            + ", such as 30s or 500ms");
  }

  private static String bound(Duration d) {
    if (d.isZero()) {
      return "0";
    }
    return d.toDays() > 0 && d.equals(Duration.ofDays(d.toDays()))
        ? d.toDays() + "d"
        : Durations.format(d);
  }

  int integer(String key, int defaultValue, int min, int max) {
    String v = options.get(key);
    if (v == null) {
      return defaultValue;
    }
    try {
      int n = Integer.parseInt(v);
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new UsageException(
        "--" + key + " was '" + v + "' but it must be a whole number from " + min + " to " + max);
  }

  List<String> positional() {
    return positional;
  }

  List<String> rest() {
    return rest;
  }

  /**
   * @param missing the message when no positional argument was given
   * @param many how the message starts when more than one was given, or anything after --
   * @return the one positional argument
   * @throws UsageException if there is not exactly one
   */
  String onlyPositional(String missing, String many) {
    if (positional().isEmpty()) {
      throw new UsageException(missing);
    }
    if (positional().size() > 1 || !rest().isEmpty()) {
      throw new UsageException(
          many
              + "; unexpected '"
              + (positional().size() > 1 ? positional().get(1) : rest().get(0))
              + "'");
    }
    return positional().get(0);
  }
}
