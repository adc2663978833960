package dev.locksmith.jdbc;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A JDBC URL read the way its driver reads it, for three things the generic lock URI cannot give:
 * the real {@code host:port} of every server (MySQL's {@code address=(host=…)(port=…)} and {@code
 * (host=…,port=…)} forms, H2's {@code tcp://}), the user and password of {@code user:password@}
 * whatever characters the password holds, and every secret of the URL, so that no message shows
 * one.
 *
 * <p>The user information ends at the last {@code @} of the authority. A password holding {@code
 * /}, {@code ?} or {@code #} (which end an authority in a plain URI) is still found: when the
 * authority read by the book is not a host list, or the path holds an {@code @}, the user
 * information ends at the last {@code @} that is followed by a valid host list.
 */
final class JdbcUrl {
  private static final Pattern HOST_NAME = Pattern.compile("[A-Za-z0-9_%.\\-]+");

  /** The authority ends at the first '/', '?' or '#', for the drivers as for us. */
  private static final String ENCODE_HINT =
      "; a value holding '/', '?' or '#' (a password, say) must be percent-encoded"
          + " as %2F, %3F or %23, or the password given as ?password=";

  private static final Pattern GROUP = Pattern.compile("\\(\\s*([A-Za-z0-9_.\\-]+)\\s*=([^)]*)\\)");

  /** One server as the driver will dial it. */
  static final class Endpoint {
    final String host;
    final int port;

    Endpoint(String host, int port) {
      this.host = host;
      this.port = port;
    }

    @Override
    public String toString() {
      return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }
  }

  final Dialect dialect;

  /** The user of {@code user:password@}, decoded; null if none. */
  final String user;

  /** The password of {@code user:password@}, decoded; null if none. Never show it. */
  final String password;

  final List<Endpoint> endpoints;

  /**
   * The host list as written, secrets included (MySQL host forms may carry them); "" for embedded
   * H2.
   */
  final String hostsText;

  /** What follows the hosts up to the query: {@code /database}, or H2's {@code mem:x;SETTING=…}. */
  final String path;

  /** Every secret of the URL; grows with the driver properties' secrets. */
  final Secrets secrets = new Secrets();

  /** Why the URL cannot be used, secrets included; null when it can. */
  private final String problem;

  private final String raw;

  private JdbcUrl(
      Dialect dialect,
      String raw,
      String user,
      String password,
      List<Endpoint> endpoints,
      String hostsText,
      String path,
      String problem) {
    this.dialect = dialect;
    this.raw = raw;
    this.user = user;
    this.password = password;
    this.endpoints = endpoints;
    this.hostsText = hostsText;
    this.path = path;
    this.problem = problem;
    secrets.add(password);
    secrets.addKeyValues(raw);
  }

  /**
   * @param dialect the database
   * @param raw the lock URI exactly as given
   * @return the URL as the dialect's driver reads it
   */
  static JdbcUrl parse(Dialect dialect, String raw) {
    int first = raw.indexOf(':');
    int second = raw.indexOf(':', first + 1);
    String rest = raw.substring(second + 1);
    if (dialect == Dialect.H2) {
      String lower = rest.toLowerCase(Locale.ROOT);
      int q = rest.indexOf('?');
      String path = q < 0 ? rest : rest.substring(0, q);
      if (lower.startsWith("tcp://") || lower.startsWith("ssl://")) {
        String after = path.substring(6);
        int slash = after.indexOf('/');
        String hosts = slash < 0 ? after : after.substring(0, slash);
        List<Endpoint> eps = new ArrayList<>();
        String problem = hosts(hosts, dialect, eps);
        return new JdbcUrl(dialect, raw, null, null, eps, hosts, path, problem);
      }
      return new JdbcUrl(dialect, raw, null, null, List.of(), "", path, null);
    }
    if (!rest.startsWith("//")) {
      int q = rest.indexOf('?');
      return new JdbcUrl(
          dialect, raw, null, null, List.of(), "", q < 0 ? rest : rest.substring(0, q), null);
    }
    String s = rest.substring(2);
    int rfcEnd = indexOfAny(s, "/?#", 0);
    String rfcAuthority = s.substring(0, rfcEnd);
    int queryAt = indexOfAny(s, "?#", rfcEnd);
    boolean byTheBook =
        rfcAuthority.indexOf('@') < 0
            && hosts(rfcAuthority, dialect, new ArrayList<>()) == null
            && s.substring(rfcEnd, queryAt).indexOf('@') < 0;
    int at = byTheBook ? -1 : userInfoEnd(s, dialect);
    if (at < 0 && !byTheBook) {
      at = rfcAuthority.lastIndexOf('@');
    }
    String userInfo = at < 0 ? null : s.substring(0, at);
    int hostsEnd = indexOfAny(s, "/?#", at + 1);
    String hosts = s.substring(at + 1, hostsEnd);
    int pathEnd = indexOfAny(s, "?#", hostsEnd);
    String path = s.substring(hostsEnd, pathEnd);
    String user = null;
    String password = null;
    if (userInfo != null) {
      int colon = userInfo.indexOf(':');
      user = decode(colon < 0 ? userInfo : userInfo.substring(0, colon));
      password = colon < 0 ? null : decode(userInfo.substring(colon + 1));
      if (user.isEmpty()) {
        user = null;
      }
    }
    List<Endpoint> eps = new ArrayList<>();
    String problem = hosts(hosts, dialect, eps);
    JdbcUrl url = new JdbcUrl(dialect, raw, user, password, eps, hosts, path, problem);
    if (userInfo != null && userInfo.indexOf(':') >= 0) {
      url.secrets.add(userInfo.substring(userInfo.indexOf(':') + 1)); // as written, before decoding
    }
    return url;
  }

  /**
   * @return why the host list cannot be used, secrets masked; null when it can
   */
  String problem() {
    return secrets.scrub(problem);
  }

  /**
   * @return the index of the last '@' after which a valid host list follows, or -1
   */
  private static int userInfoEnd(String s, Dialect dialect) {
    for (int at = s.lastIndexOf('@'); at >= 0; at = at == 0 ? -1 : s.lastIndexOf('@', at - 1)) {
      String hosts = s.substring(at + 1, indexOfAny(s, "/?#", at + 1));
      if (!hosts.isEmpty() && hosts(hosts, dialect, new ArrayList<>()) == null) {
        return at;
      }
    }
    return -1;
  }

  /**
   * Reads a host list into {@code out}.
   *
   * @return null if every host is valid, else what is wrong (may hold secrets: scrub it)
   */
  private static String hosts(String text, Dialect dialect, List<Endpoint> out) {
    if (text.isEmpty()) {
      return null; // the driver's default host
    }
    for (String item : splitTopLevel(text)) {
      String why = host(item.trim(), dialect, out);
      if (why != null) {
        return why;
      }
    }
    return null;
  }

  private static String host(String item, Dialect dialect, List<Endpoint> out) {
    int defaultPort = defaultPort(dialect);
    if (item.isEmpty()) {
      return "one of its hosts is empty; write host:port, separated by commas";
    }
    String lower = item.toLowerCase(Locale.ROOT);
    if (dialect.isMysqlFamily() && (lower.startsWith("address=") || item.startsWith("("))) {
      String host = "localhost";
      String port = null;
      if (lower.startsWith("address=")) {
        String groups = item.substring("address=".length());
        Matcher m = GROUP.matcher(groups);
        int last = 0;
        while (m.find() && m.start() == last) {
          last = m.end();
          String key = m.group(1).toLowerCase(Locale.ROOT);
          if (key.equals("host")) {
            host = m.group(2).trim();
          } else if (key.equals("port")) {
            port = m.group(2).trim();
          }
        }
        if (last == 0 || last != groups.length()) {
          return "a host written as address=(…) must be"
              + " address=(host=name)(port=number)(name=value)…, every group closed with ')'"
              + ENCODE_HINT;
        }
      } else {
        if (!item.endsWith(")")) {
          return "a host written as (host=name,port=number,…) must end with ')'" + ENCODE_HINT;
        }
        for (String pair : item.substring(1, item.length() - 1).split(",")) {
          int eq = pair.indexOf('=');
          String key = eq < 0 ? pair.trim() : pair.substring(0, eq).trim().toLowerCase(Locale.ROOT);
          if (key.equals("host")) {
            host = pair.substring(eq + 1).trim();
          } else if (key.equals("port")) {
            port = pair.substring(eq + 1).trim();
          }
        }
      }
      Integer p = port == null ? Integer.valueOf(defaultPort) : port(port);
      if (p == null) {
        return "the port '" + port + "' of host '" + host + "' must be a number from 1 to 65535";
      }
      out.add(
          new Endpoint(
              host.startsWith("[") && host.endsWith("]")
                  ? host.substring(1, host.length() - 1)
                  : host,
              p));
      return null;
    }
    String host;
    String port = null;
    if (item.startsWith("[")) {
      int close = item.indexOf(']');
      if (close < 0) {
        return "the IPv6 address '" + item + "' lacks its closing ']'";
      }
      host = item.substring(1, close);
      if (close + 1 < item.length()) {
        if (item.charAt(close + 1) != ':') {
          return "'" + item + "' is not host:port";
        }
        port = item.substring(close + 2);
      }
    } else {
      int c = item.lastIndexOf(':');
      host = c < 0 ? item : item.substring(0, c);
      port = c < 0 ? null : item.substring(c + 1);
      if (!HOST_NAME.matcher(host).matches()) {
        return "'" + item + "' is not a host name or address";
      }
    }
    Integer p = port == null ? Integer.valueOf(defaultPort) : port(port);
    if (p == null) {
      return "the port '" + port + "' of host '" + host + "' must be a number from 1 to 65535";
    }
    out.add(new Endpoint(host, p));
    return null;
  }

  private static Integer port(String text) {
    try {
      int p = Integer.parseInt(text.trim());
      return p >= 1 && p <= 65535 ? p : null;
    } catch (NumberFormatException e) {
      return null;
    }
  }

  static int defaultPort(Dialect d) {
    return d.isMysqlFamily() ? 3306 : d == Dialect.POSTGRESQL ? 5432 : 9092;
  }

  /** Splits at commas outside parentheses and brackets. */
  private static List<String> splitTopLevel(String text) {
    List<String> parts = new ArrayList<>();
    int depth = 0;
    int start = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '(' || c == '[') {
        depth++;
      } else if ((c == ')' || c == ']') && depth > 0) {
        depth--;
      } else if (c == ',' && depth == 0) {
        parts.add(text.substring(start, i));
        start = i + 1;
      }
    }
    parts.add(text.substring(start));
    return parts;
  }

  private static int indexOfAny(String s, String chars, int from) {
    for (int i = Math.max(0, from); i < s.length(); i++) {
      if (chars.indexOf(s.charAt(i)) >= 0) {
        return i;
      }
    }
    return s.length();
  }

  private static String decode(String s) {
    try {
      return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return s;
    }
  }

  /**
   * @return the URL for the driver: no user information and no query (options travel as properties)
   */
  String driverUrl() {
    if (dialect == Dialect.H2) {
      return dialect.scheme + ":" + path;
    }
    if (endpoints.isEmpty()
        && hostsText.isEmpty()
        && !raw.substring(raw.indexOf(':', raw.indexOf(':') + 1) + 1).startsWith("//")) {
      return dialect.scheme + ":" + path;
    }
    return dialect.scheme + "://" + hostsText + path;
  }

  /**
   * @return whether the URL names a database at all
   */
  boolean namesDatabase() {
    return !hostsText.isEmpty() || !path.isEmpty();
  }

  /**
   * @return every server as {@code host:port}, for messages; for embedded H2 the database
   */
  String endpointText() {
    if (endpoints.isEmpty()) {
      if (dialect == Dialect.H2) {
        int semi = path.indexOf(';');
        return "H2 database " + (semi < 0 ? path : path.substring(0, semi));
      }
      return "localhost:" + defaultPort(dialect);
    }
    StringBuilder sb = new StringBuilder();
    for (Endpoint e : endpoints) {
      sb.append(sb.length() == 0 ? "" : ",").append(e);
    }
    return secrets.scrub(sb.toString());
  }

  /**
   * @return the whole URI as given, with the password of user:password@ and every other secret
   *     masked
   */
  String shown() {
    return secrets.scrub(raw);
  }

  @Override
  public String toString() {
    return shown();
  }
}
