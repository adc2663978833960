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
 * users write ({@code redlock://h1:6379,h2:6379}, {@code jdbc:mysql://…}, {@code local:}), so this
 * is a small parser of its own:
 *
 * <pre>
 *   scheme ":" [ "//" [ user [ ":" password ] "@" ] host[:port] ( "," host[:port] )* ] path [ "?" query ]
 * </pre>
 *
 * <p>The scheme is lower-cased; {@code jdbc:xyz:} is read as the scheme {@code jdbc:xyz}. User and
 * password are percent-decoded. The user info ends at the last {@code @} before the query, so a
 * password may hold a raw {@code @} or {@code :}; a raw {@code /}, {@code ?} or {@code #} in it is
 * refused with a message that says to percent-encode it. A key given twice in the query is refused.
 * {@link #toString()} and {@link #redact(String)} hide the password (whatever characters it holds;
 * an empty one stays empty) and every query value whose key looks like a secret's name, misspelt
 * ones included.
 */
public final class LockUri {
  private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.\\-]*");

  /**
   * Keys whose values are hidden wherever a URI is shown: any key with a fragment of a secret's
   * name in it, misspellings included ({@code pasword}, {@code pass}, {@code auth}).
   */
  private static final String SECRET_FRAGMENT =
      "(?i:pass|pasw|pwd|psw|ssw|secret|token|cred|auth|api[_.\\-]?key|access[_.\\-]?key)";

  private static final String SECRET_KEY =
      "(?i:[a-z0-9_.\\-]*" + SECRET_FRAGMENT + "[a-z0-9_.\\-]*)";
  private static final Pattern SECRET_KEY_ONLY = Pattern.compile(SECRET_FRAGMENT);

  /**
   * In free text a value ends at white space; in a URI (where {@link #parse} refuses white space)
   * it does not.
   */
  private static final Pattern PARAM_SECRET_IN_TEXT =
      Pattern.compile("((?:^|[?&;])" + SECRET_KEY + "=)[^&;#\\s]+");

  private static final Pattern PARAM_SECRET_IN_URI =
      Pattern.compile("((?:^|[?&;])" + SECRET_KEY + "=)[^&;#]+");

  /** The MySQL host forms {@code address=(host=h)(password=p)} and {@code (host=h,password=p)}. */
  private static final Pattern PAREN_SECRET =
      Pattern.compile("([(,]\\s*" + SECRET_KEY + "\\s*=)[^),\\s]+");

  /**
   * A query starts at a {@code ?} followed by a key: a raw {@code ?} inside a password is not taken
   * for one.
   */
  private static final Pattern QUERY_HEAD = Pattern.compile("[A-Za-z0-9_.~%+\\-]*(?:[=&#;]|$)");

  private static final String ENCODE_HINT =
      "percent-encode it: '/' as %2F, '?' as %3F, '#' as %23, '@' as %40, ':' as %3A, '%' as %25";

  /** One {@code host[:port]} of the authority; {@code port} is -1 when none was given. */
  public static final class HostPort {
    private final String host;
    private final int port;

    HostPort(String host, int port) {
      this.host = host;
      this.port = port;
    }

    /**
     * @return the host name or address (an IPv6 address without brackets)
     */
    public String host() {
      return host;
    }

    /**
     * @return the port, or -1 when the URI gave none
     */
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

  private LockUri(
      String raw,
      String scheme,
      String user,
      String password,
      List<HostPort> hosts,
      String path,
      Map<String, String> query) {
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
   * @throws IllegalArgumentException naming what is wrong and how a valid URI looks; secrets
   *     redacted
   */
  public static LockUri parse(String text) {
    if (text == null) {
      throw new IllegalArgumentException(
          "`uri` was null but it must be a lock URI such as redis://localhost:6379 or local:");
    }
    String shown = redact(text, true);
    if (text.isBlank()) {
      throw new IllegalArgumentException(
          "`uri` was '' but it must be a lock URI such as redis://localhost:6379 or local:");
    }
    if (!text.equals(text.trim()) || text.chars().anyMatch(c -> c <= ' ')) {
      throw new IllegalArgumentException(
          "`uri` was '" + shown + "' but it must not contain spaces or control characters");
    }
    int colon = text.indexOf(':');
    if (colon <= 0 || !SCHEME.matcher(text.substring(0, colon)).matches()) {
      throw new IllegalArgumentException(
          "`uri` was '"
              + shown
              + "' but it must start with a scheme such as redis:, zookeeper:, jdbc:postgresql: or"
              + " local:");
    }
    String scheme = text.substring(0, colon).toLowerCase(Locale.ROOT);
    String rest = text.substring(colon + 1);
    if (scheme.equals("jdbc")) {
      int c2 = rest.indexOf(':');
      if (c2 <= 0 || !SCHEME.matcher(rest.substring(0, c2)).matches()) {
        throw new IllegalArgumentException(
            "`uri` was '"
                + shown
                + "' but a JDBC URI must name its database, such as"
                + " jdbc:postgresql://localhost/db");
      }
      scheme = scheme + ":" + rest.substring(0, c2).toLowerCase(Locale.ROOT);
      rest = rest.substring(c2 + 1);
    }
    boolean hierarchical = rest.startsWith("//");
    int at = hierarchical ? userInfoEnd(rest, 2) : -1;
    String user = null;
    String password = null;
    if (at >= 0) {
      String userInfo = rest.substring(2, at);
      int c = userInfo.indexOf(':');
      String rawPassword = c < 0 ? "" : userInfo.substring(c + 1);
      for (char bad : new char[] {'/', '?', '#'}) {
        if (rawPassword.indexOf(bad) >= 0) {
          throw new IllegalArgumentException(
              "`uri` was '"
                  + shown
                  + "' but its password holds a raw '"
                  + bad
                  + "', which would end the host part of the URI; "
                  + ENCODE_HINT);
        }
      }
      if (c < 0 && userInfo.matches(".*[/?#].*")) {
        throw new IllegalArgumentException(
            "`uri` was '" + shown + "' but its user holds a raw '/', '?' or '#'; " + ENCODE_HINT);
      }
      user = decode(c < 0 ? userInfo : userInfo.substring(0, c));
      password = c < 0 ? null : decode(rawPassword);
      if (user.isEmpty()) {
        user = null;
      }
      rest = "//" + rest.substring(at + 1);
    }
    int q = hierarchical ? queryStart(rest, 2) : rest.indexOf('?');
    String head = q < 0 ? rest : rest.substring(0, q);
    String queryText = q < 0 ? "" : rest.substring(q + 1);
    head = head.indexOf('#') >= 0 ? head.substring(0, head.indexOf('#')) : head;
    queryText =
        queryText.indexOf('#') >= 0 ? queryText.substring(0, queryText.indexOf('#')) : queryText;
    Map<String, String> query = new LinkedHashMap<>();
    for (String pair : queryText.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String key = decode(eq < 0 ? pair : pair.substring(0, eq));
      String value = eq < 0 ? "" : decode(pair.substring(eq + 1));
      if (query.put(key, value) != null) {
        throw new IllegalArgumentException(
            "`uri` was '" + shown + "' but it gives `" + key + "` twice; give each setting once");
      }
    }
    List<HostPort> hosts = new ArrayList<>();
    String path = head;
    if (hierarchical) {
      int end = head.indexOf('/', 2);
      String authority = end < 0 ? head.substring(2) : head.substring(2, end);
      path = end < 0 ? "" : head.substring(end);
      if (authority.indexOf('(') >= 0 || authority.indexOf('=') >= 0) {
        // a driver's key=value host form, such as MySQL's address=(host=h)(port=p) or
        // (host=h,password=…):
        // not host:port, and its commas are not host separators; the provider reads it whole, and
        // no
        // piece of it, which may hold a password, is echoed here
        hosts.add(new HostPort(authority, -1));
      } else if (!authority.isEmpty()) {
        for (String hp : authority.split(",", -1)) {
          hosts.add(hostPort(hp, shown));
        }
      }
    }
    return new LockUri(
        text,
        scheme,
        user,
        password,
        Collections.unmodifiableList(hosts),
        path,
        Collections.unmodifiableMap(query));
  }

  private static HostPort hostPort(String hp, String shown) {
    String host;
    String port = null;
    if (hp.startsWith("[")) {
      int close = hp.indexOf(']');
      if (close < 0) {
        throw new IllegalArgumentException(
            "`uri` was '" + shown + "' but the IPv6 address '" + hp + "' lacks its closing ']'");
      }
      host = hp.substring(1, close);
      if (close + 1 < hp.length()) {
        if (hp.charAt(close + 1) != ':') {
          throw new IllegalArgumentException(
              "`uri` was '" + shown + "' but '" + hp + "' is not host:port");
        }
        port = hp.substring(close + 2);
      }
    } else {
      int c = hp.lastIndexOf(':');
      host = c < 0 ? hp : hp.substring(0, c);
      port = c < 0 ? null : hp.substring(c + 1);
    }
    if (host.isEmpty()) {
      throw new IllegalArgumentException(
          "`uri` was '"
              + shown
              + "' but one of its hosts is empty; write host:port, separated by commas");
    }
    int p = -1;
    if (port != null) {
      try {
        p = Integer.parseInt(port);
      } catch (NumberFormatException e) {
        p = 0;
      }
      if (p < 1 || p > 65535) {
        throw new IllegalArgumentException(
            "`uri` was '"
                + shown
                + "' but the port '"
                + port
                + "' of host '"
                + host
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
   * Hides secrets in any text that may hold a URI: the password of {@code user:password@} and every
   * query or {@code ;key=value} parameter whose key names a password, secret or token.
   *
   * @param text the text, may be null
   * @return the text with secrets replaced by {@code ****}
   */
  public static String redact(String text) {
    return redact(text, false);
  }

  /**
   * @param oneUri whether all of {@code text} is one URI, white space included, as in {@link
   *     #parse}
   */
  private static String redact(String text, boolean oneUri) {
    if (text == null) {
      return null;
    }
    StringBuilder out = new StringBuilder(text.length());
    int from = 0;
    for (int slashes = text.indexOf("//"); slashes >= 0; slashes = text.indexOf("//", from)) {
      // a URI in a message ends at white space; the password is what lies between the user's
      // ':' and the '@' that ends the user info, whatever characters it holds
      int end = slashes + 2;
      while (end < text.length() && (oneUri || !Character.isWhitespace(text.charAt(end)))) {
        end++;
      }
      String uri = text.substring(0, end);
      int at = userInfoEnd(uri, slashes + 2);
      int colon = at < 0 ? -1 : uri.indexOf(':', slashes + 2);
      if (colon >= 0 && colon < at - 1) {
        out.append(text, from, colon + 1).append("****");
        from = at;
      } else {
        out.append(text, from, slashes + 2);
        from = slashes + 2;
      }
    }
    out.append(text, from, text.length());
    String s =
        (oneUri ? PARAM_SECRET_IN_URI : PARAM_SECRET_IN_TEXT).matcher(out).replaceAll("$1****");
    return PAREN_SECRET.matcher(s).replaceAll("$1****");
  }

  /**
   * The value of a setting as messages may show it: {@code ****} when its key looks like a secret's
   * name (misspelt ones included), empty when it is empty, else the value.
   *
   * @param key the setting's key
   * @param value its value, may be null
   * @return what to show
   */
  public static String redactValue(String key, String value) {
    if (value == null || value.isEmpty()) {
      return "";
    }
    return key != null && SECRET_KEY_ONLY.matcher(key).find() ? "****" : value;
  }

  /**
   * Where the user info of {@code text} ends: the last {@code @} before the query, whatever the
   * password holds ({@code @}, {@code :}, and the {@code /}, {@code ?} and {@code #} that {@link
   * #parse} then refuses).
   *
   * @param from just after the {@code //}
   * @return the index of that {@code @}, or -1 when there is no user info
   */
  private static int userInfoEnd(String text, int from) {
    int q = queryStart(text, from);
    int last = text.lastIndexOf('@');
    // a '?' with an '@' after it and no '=' in between is inside the password: a query's first
    // setting has its '=' before any '@' of its value (redis://:p@ss/w?rd@host:6379)
    while (q >= 0 && last > q && (text.indexOf('=', q) < 0 || text.indexOf('=', q) > last)) {
      q = queryStart(text, q + 1);
    }
    int at = text.lastIndexOf('@', (q < 0 ? text.length() : q) - 1);
    return at >= from ? at : -1;
  }

  private static int queryStart(String text, int from) {
    for (int i = text.indexOf('?', from); i >= 0; i = text.indexOf('?', i + 1)) {
      if (QUERY_HEAD.matcher(text).region(i + 1, text.length()).lookingAt()) {
        return i;
      }
    }
    return -1;
  }

  /**
   * @return the scheme, lower-cased; {@code jdbc:postgresql} for JDBC URIs
   */
  public String scheme() {
    return scheme;
  }

  /**
   * @return the user of {@code user:password@}, or null
   */
  public String user() {
    return user;
  }

  /**
   * @return the password of {@code user:password@}, or null. Never log it.
   */
  public String password() {
    return password;
  }

  /**
   * @return the hosts of the authority, in order; empty for URIs without {@code //}
   */
  public List<HostPort> hosts() {
    return hosts;
  }

  /**
   * @return what follows the authority (or the scheme, for opaque URIs) up to the query; may be
   *     empty
   */
  public String path() {
    return path;
  }

  /**
   * @return the query parameters, percent-decoded, in order
   */
  public Map<String, String> query() {
    return query;
  }

  /**
   * @return the URI exactly as given, secrets included. Never log it.
   */
  public String raw() {
    return raw;
  }

  /**
   * @return the URI as given without its query and fragment, secrets included. Never log it.
   */
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

  /**
   * @return the URI with secrets redacted
   */
  @Override
  public String toString() {
    return redact(raw, true);
  }
}
