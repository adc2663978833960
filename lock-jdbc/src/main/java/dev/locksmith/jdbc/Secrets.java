package dev.locksmith.jdbc;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The secret values of one JDBC URI and its driver properties, and the means to keep them out of
 * every text we produce or pass on. Redacting by structure alone is not enough here: drivers echo
 * pieces of the URL in their own messages, cut wherever their parser gave up, so every message is
 * also searched for the secret values themselves.
 */
final class Secrets {
  static final String MASK = "****";

  /** A key whose value may be a secret: a password, a token, a key, credentials of any kind. */
  private static final Pattern SECRET_KEY =
      Pattern.compile("(?i).*(pass|pwd|secret|auth|token|key|credential).*");

  /** {@code key=value} after any opener a JDBC URL uses: query, H2 settings, MySQL host forms. */
  private static final Pattern KEY_VALUE =
      Pattern.compile("(?:^|(?<=[?&;(,]))\\s*([A-Za-z0-9_.\\-]+)\\s*=");

  /** Below this length a secret is masked only as a whole word, so that messages stay readable. */
  private static final int SHORT = 3;

  private final Set<String> values = new LinkedHashSet<>();

  /**
   * @return whether the value of {@code key} must never be shown
   */
  static boolean isSecretKey(String key) {
    return key != null && SECRET_KEY.matcher(key).matches();
  }

  /**
   * @return the value as it may be shown for {@code key}: masked when the key names a secret
   */
  static String shown(String key, String value) {
    return isSecretKey(key) && value != null && !value.isEmpty() ? MASK : value;
  }

  /** Adds a secret value, in the forms it may take in a message: as given, decoded and encoded. */
  void add(String value) {
    if (value == null || value.isEmpty()) {
      return;
    }
    values.add(value);
    try {
      values.add(URLDecoder.decode(value.replace("+", "%2B"), StandardCharsets.UTF_8));
    } catch (IllegalArgumentException e) {
      // not percent-encoded: the value as given is enough
    }
    values.add(URLEncoder.encode(value, StandardCharsets.UTF_8));
  }

  /**
   * Collects, generously, every value in {@code text} that follows a key naming a secret, as any
   * driver's parser might cut it: up to the next separator, and for the parenthesised MySQL host
   * forms also up to the last ')' of the host, since the password itself may hold ')'.
   */
  void addKeyValues(String text) {
    Matcher m = KEY_VALUE.matcher(text);
    while (m.find()) {
      if (!isSecretKey(m.group(1))) {
        continue;
      }
      int start = m.end();
      char opener = m.start() == 0 ? '?' : text.charAt(m.start() - 1);
      if (opener == '(' || opener == ',') {
        add(text.substring(start, end(text, start, "),")));
        int hostEnd = end(text, start, "/?");
        int lastParen = text.lastIndexOf(')', hostEnd - 1);
        if (lastParen > start) {
          add(text.substring(start, lastParen));
        }
      } else {
        add(text.substring(start, end(text, start, opener == ';' ? ";?#" : "&#")));
      }
    }
  }

  private static int end(String text, int from, String stops) {
    for (int i = from; i < text.length(); i++) {
      if (stops.indexOf(text.charAt(i)) >= 0) {
        return i;
      }
    }
    return text.length();
  }

  /**
   * @return {@code text} with every secret value masked, and every value after a secret-naming key
   */
  String scrub(String text) {
    if (text == null) {
      return null;
    }
    String s = text;
    List<String> longestFirst =
        values.stream()
            .sorted(Comparator.comparingInt(String::length).reversed())
            .collect(Collectors.toList());
    for (String v : longestFirst) {
      if (v.length() >= SHORT) {
        s = s.replace(v, MASK);
      } else {
        s = s.replaceAll("(?<![A-Za-z0-9])" + Pattern.quote(v) + "(?![A-Za-z0-9])", MASK);
      }
    }
    return maskKeyValues(s);
  }

  /** Masks the value after every key naming a secret, for values we were never told about. */
  static String maskKeyValues(String text) {
    StringBuilder out = new StringBuilder();
    Matcher m = KEY_VALUE.matcher(text);
    int last = 0;
    while (m.find()) {
      if (m.start() < last || !isSecretKey(m.group(1))) {
        continue;
      }
      int start = m.end();
      int stop = end(text, start, ")&;,#'\" \n");
      out.append(text, last, start);
      if (stop > start && !text.startsWith(MASK, start)) {
        out.append(MASK);
      } else {
        out.append(text, start, stop);
      }
      last = stop;
    }
    return out.append(text.substring(last)).toString();
  }

  /**
   * @return whether any text of the failure or its causes holds a secret
   */
  boolean leaksIn(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      String m = t.getMessage();
      if (m != null && !scrub(m).equals(m)) {
        return true;
      }
    }
    return false;
  }

  /**
   * @return the failure itself when no message in its chain holds a secret; otherwise a copy with
   *     the same SQL state, vendor code and stack traces whose messages are scrubbed
   */
  SQLException scrubbed(SQLException e) {
    if (!leaksIn(e)) {
      return e;
    }
    SQLException copy =
        new SQLException(
            scrub(e.getMessage()), e.getSQLState(), e.getErrorCode(), scrubbedCause(e.getCause()));
    copy.setStackTrace(e.getStackTrace());
    return copy;
  }

  private Throwable scrubbedCause(Throwable t) {
    if (t == null) {
      return null;
    }
    Throwable copy =
        new ScrubbedCause(
            t.getClass().getName(), scrub(t.getMessage()), scrubbedCause(t.getCause()));
    copy.setStackTrace(t.getStackTrace());
    return copy;
  }

  /** A cause whose message held a secret, kept with its original class name and stack trace. */
  static final class ScrubbedCause extends Exception {
    private static final long serialVersionUID = 1L;
    private final String originalClass;

    ScrubbedCause(String originalClass, String message, Throwable cause) {
      super(message, cause);
      this.originalClass = originalClass;
    }

    @Override
    public String toString() {
      String m = getMessage();
      return originalClass + (m == null ? "" : ": " + m);
    }
  }

  @Override
  public String toString() {
    return "Secrets{" + values.size() + " value(s), " + MASK + "}";
  }
}
