package dev.locksmith.spi;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A lock server address as Locksmith reads it. {@link java.net.URI} cannot hold the forms lock
 * users write ({@code redlock://h1:6379,h2:6379}, {@code jdbc:mysql://…}, {@code local:}), so
 * this is a small parser of its own:
 *
 * <pre>
 *   scheme ":" [ "//" [ user [ ":" password ] "@" ] host[:port] ( "," host[:port] )* ] path [ "?" query ]
 * </pre>
 *
 * <p>The scheme is lower-cased; {@code jdbc:xyz:} is read as the scheme {@code jdbc:xyz}. User
 * and password are percent-decoded. {@link #toString()} and {@link #redact(String)} hide the
 * password and every query value whose key names a secret.
 */
public final class LockUri {
  private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.\\-]*");
  private static final Pattern USERINFO_SECRET = Pattern.compile("(//[^/@?#,]*?:)[^/?#]*@");
  private static final Pattern PARAM_SECRET = Pattern.compile(
      "((?:^|[?&;])(?i:[a-z0-9_.\\-]*(?:password|passwd|pwd|secret|token|credential)[a-z0-9_.\\-]*)=)[^&;#]*");

  /** One {@code host[:port]} of the authority; {@code port} is -1 when none was given. */
  public static final class HostPort {
    private final String host;
    private final int port;

    HostPort(String host, int port) {
      this.host = host;
      this.port = port;
    }

    /** @return the host name or address (an IPv6 address without brackets) */
    public String host() {
      return host;
    }

    /** @return the port, or -1 when the URI gave none */
    public int port() {
      return port;
    }

    /**
     * @param defaultPort the port to use when none was given
     * @return the port given, else {@code defaultPort}
     */
    public int portOr(int defaultPort) {
      return port < 0 ? defaultPort : port;
    }

    @Override
    public String toString() {
      String h = host.indexOf(':') >= 0 ? "[" + host + "]" : host;
      return port < 0 ? h : h + ":" + port;
    }
  }

  private final String raw;
  private final String scheme;
  private final String user;
  private final String password;
  private final List<HostPort> hosts;
  private final String path;
  private final Map<String, String> query;

  private LockUri(String raw, String scheme, String user, String password, List<HostPort> hosts,
      String path, Map<String, String> query) {
    this.raw = raw;
    this.scheme = scheme;
    this.user = user;
    this.password = password;
    this.hosts = hosts;
    this.path = path;
    this.query = query;
  }

  /**
   * Parses a lock URI.
   *
   * @param text the URI
   * @return the parsed URI
   * @throws IllegalArgumentException naming what is wrong and how a valid URI looks; secrets redacted
   */
  public static LockUri parse(String text) {
    if (text == null) {
      throw new IllegalArgumentException("`uri` was null but it must be a lock URI such as redis://localhost:6379 or local:");
    }
    String shown = redact(text);
    if (text.isBlank()) {
      throw new IllegalArgumentException("`uri` was '' but it must be a lock URI such as redis://localhost:6379 or local:");
    }
    if (!text.equals(text.trim()) || text.chars().anyMatch(c -> c <= ' ')) {
      throw new IllegalArgumentException("`uri` was '" + shown + "' but it must not contain spaces or control characters");
    }
    int colon = text.indexOf(':');
    if (colon <= 0 || !SCHEME.matcher(text.substring(0, colon)).matches()) {
      throw new IllegalArgumentException("`uri` was '" + shown
          + "' but it must start with a scheme such as redis:, zookeeper:, jdbc:postgresql: or local:");
    }
    String scheme = text.substring(0, colon).toLowerCase(Locale.ROOT);
    String rest = text.substring(colon + 1);
    if (scheme.equals("jdbc")) {
      int c2 = rest.indexOf(':');
      if (c2 <= 0 || !SCHEME.matcher(rest.substring(0, c2)).matches()) {
        throw new IllegalArgumentException("`uri` was '" + shown
            + "' but a JDBC URI must name its database, such as jdbc:postgresql://localhost/db");
      }
      scheme = scheme + ":" + rest.substring(0, c2).toLowerCase(Locale.ROOT);
      rest = rest.substring(c2 + 1);
    }
    int hash = rest.indexOf('#');
    if (hash >= 0) {
      rest = rest.substring(0, hash);
    }
    Map<String, String> query = new LinkedHashMap<>();
    int q = rest.indexOf('?');
    if (q >= 0) {
      for (String pair : rest.substring(q + 1).split("&")) {
        if (pair.isEmpty()) {
          continue;
        }
        int eq = pair.indexOf('=');
        String key = decode(eq < 0 ? pair : pair.substring(0, eq));
        String value = eq < 0 ? "" : decode(pair.substring(eq + 1));
        query.put(key, value);
      }
      rest = rest.substring(0, q);
    }
    String user = null;
    String password = null;
    List<HostPort> hosts = new ArrayList<>();
    String path = rest;
    if (rest.startsWith("//")) {
      int end = rest.indexOf('/', 2);
      String authority = end < 0 ? rest.substring(2) : rest.substring(2, end);
      path = end < 0 ? "" : rest.substring(end);
      int at = authority.lastIndexOf('@');
      if (at >= 0) {
        String userInfo = authority.substring(0, at);
        authority = authority.substring(at + 1);
        int c = userInfo.indexOf(':');
        user = decode(c < 0 ? userInfo : userInfo.substring(0, c));
        password = c < 0 ? null : decode(userInfo.substring(c + 1));
        if (user.isEmpty()) {
          user = null;
        }
      }
      if (!authority.isEmpty()) {
        for (String hp : authority.split(",", -1)) {
          hosts.add(hostPort(hp, shown));
        }
      }
    }
    return new LockUri(text, scheme, user, password, Collections.unmodifiableList(hosts), path,
        Collections.unmodifiableMap(query));
  }

  private static HostPort hostPort(String hp, String shown) {
    String host;
    String port = null;
    if (hp.startsWith("[")) {
      int close = hp.indexOf(']');
      if (close < 0) {
        throw new IllegalArgumentException("`uri` was '" + shown + "' but the IPv6 address '" + hp + "' lacks its closing ']'");
      }
      host = hp.substring(1, close);
      if (close + 1 < hp.length()) {
        if (hp.charAt(close + 1) != ':') {
          throw new IllegalArgumentException("`uri` was '" + shown + "' but '" + hp + "' is not host:port");
        }
        port = hp.substring(close + 2);
      }
    } else {
      int c = hp.lastIndexOf(':');
      host = c < 0 ? hp : hp.substring(0, c);
      port = c < 0 ? null : hp.substring(c + 1);
    }
    if (host.isEmpty()) {
      throw new IllegalArgumentException("`uri` was '" + shown + "' but one of its hosts is empty; write host:port, separated by commas");
    }
    int p = -1;
    if (port != null) {
      try {
        p = Integer.parseInt(port);
      } catch (NumberFormatException e) {
        p = 0;
      }
      if (p < 1 || p > 65535) {
        throw new IllegalArgumentException("`uri` was '" + shown + "' but the port '" + port + "' of host '" + host
            + "' must be a number from 1 to 65535");
      }
    }
    return new HostPort(host, p);
  }

  private static String decode(String s) {
    try {
      return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      return s;
    }
  }

  /**
   * Hides secrets in any text that may hold a URI: the password of {@code user:password@} and
   * every query or {@code ;key=value} parameter whose key names a password, secret or token.
   *
   * @param text the text, may be null
   * @return the text with secrets replaced by {@code ****}
   */
  public static String redact(String text) {
    if (text == null) {
      return null;
    }
    String s = USERINFO_SECRET.matcher(text).replaceAll("$1****@");
    return PARAM_SECRET.matcher(s).replaceAll("$1****");
  }

  /** @return the scheme, lower-cased; {@code jdbc:postgresql} for JDBC URIs */
  public String scheme() {
    return scheme;
  }

  /** @return the user of {@code user:password@}, or null */
  public String user() {
    return user;
  }

  /** @return the password of {@code user:password@}, or null. Never log it. */
  public String password() {
    return password;
  }

  /** @return the hosts of the authority, in order; empty for URIs without {@code //} */
  public List<HostPort> hosts() {
    return hosts;
  }

  /** @return what follows the authority (or the scheme, for opaque URIs) up to the query; may be empty */
  public String path() {
    return path;
  }

  /** @return the query parameters, percent-decoded, in order */
  public Map<String, String> query() {
    return query;
  }

  /** @return the URI exactly as given, secrets included. Never log it. */
  public String raw() {
    return raw;
  }

  /** @return the URI as given without its query and fragment, secrets included. Never log it. */
  public String withoutQuery() {
    int end = raw.length();
    int q = raw.indexOf('?');
    int h = raw.indexOf('#');
    if (q >= 0) {
      end = q;
    }
    if (h >= 0 && h < end) {
      end = h;
    }
    return raw.substring(0, end);
  }

  /** @return the URI with secrets redacted */
  @Override
  public String toString() {
    return redact(raw);
  }
}
