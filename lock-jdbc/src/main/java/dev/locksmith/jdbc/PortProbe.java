package dev.locksmith.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Says what is at a port a driver could not log in to, after the failure: a driver says "Connection
 * attempt timed out." whether nothing answers, a Redis server answers or the server is paused. One
 * short look per endpoint within a small budget: connect; read a greeting (MySQL and MariaDB speak
 * first); else send PostgreSQL's SSL request followed by a line end, which a PostgreSQL server
 * answers with one byte and a Redis server with an error line.
 */
final class PortProbe {
  /** PostgreSQL's SSLRequest: length 8, code 80877103. */
  private static final byte[] SSL_REQUEST = {0, 0, 0, 8, 4, (byte) 0xd2, 22, 47, '\r', '\n'};

  private PortProbe() {}

  /**
   * @param endpoints the servers the driver tried
   * @param expected the database the URI names
   * @param budget the most all looks together may take
   * @return one finding per endpoint looked at, joined; never null
   */
  static String diagnose(List<JdbcUrl.Endpoint> endpoints, Dialect expected, Duration budget) {
    long deadline = System.nanoTime() + budget.toNanos();
    List<String> found = new ArrayList<>();
    for (JdbcUrl.Endpoint e : endpoints) {
      long left = (deadline - System.nanoTime()) / 1_000_000;
      if (left < 20) {
        found.add(e + ": not looked at (no time left)");
        continue;
      }
      found.add(e + ": " + look(e, expected, left));
    }
    return String.join("; ", found);
  }

  private static String look(JdbcUrl.Endpoint e, Dialect expected, long millis) {
    String want = product(expected);
    long deadline = System.nanoTime() + millis * 1_000_000;
    byte[] answer;
    try (Socket s = new Socket()) {
      try {
        s.connect(new InetSocketAddress(e.host, e.port), (int) millis);
      } catch (UnknownHostException x) {
        return "the host name is unknown";
      } catch (ConnectException x) {
        return "connection refused: nothing listens on that port (is "
            + want
            + " running, and on this port?)";
      } catch (SocketTimeoutException x) {
        return "no answer to the TCP connect (a firewall, or a host that is down)";
      }
      answer = read(s, remaining(deadline) / 3);
      if (answer != null && answer.length == 0) {
        s.getOutputStream().write(SSL_REQUEST);
        s.getOutputStream().flush();
        answer = read(s, remaining(deadline) / 2);
      }
    } catch (IOException x) {
      return "could not be checked (" + x.getClass().getSimpleName() + ")";
    }
    if (answer != null && answer.length == 0) {
      // a server that waits for a line, such as Redis, ignores the binary request: ask for a line
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(e.host, e.port), (int) remaining(deadline));
        s.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
        s.getOutputStream().flush();
        answer = read(s, remaining(deadline));
      } catch (IOException x) {
        answer = new byte[0];
      }
    }
    if (answer == null) {
      return "the server closed the connection without a word: not "
          + article(want)
          + " server, or one refusing us";
    }
    if (answer.length == 0) {
      return "accepts connections but did not answer within "
          + millis
          + " ms: not "
          + article(want)
          + " server, or one that is paused or overloaded";
    }
    String what = identify(answer);
    if (what == null) {
      return "a server answered '"
          + printable(answer)
          + "', which is not how "
          + article(want)
          + " server answers;"
          + " check the host and port of the URI";
    }
    if (what.equals(want)) {
      return article(want) + " server answers there";
    }
    return article(what)
        + " server answers there, not "
        + article(want)
        + " server; check the host and port of the URI ("
        + want
        + " listens on "
        + JdbcUrl.defaultPort(expected)
        + " by default)";
  }

  private static String article(String product) {
    return ("AEIOUH".indexOf(product.charAt(0)) >= 0 && !product.startsWith("HTTP") ? "an " : "a ")
        + product;
  }

  private static long remaining(long deadline) {
    return Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
  }

  /**
   * @return the bytes that came within the time, empty if none, null on end of stream
   */
  private static byte[] read(Socket s, long millis) throws IOException {
    InputStream in = s.getInputStream();
    s.setSoTimeout((int) Math.max(1, millis));
    byte[] buf = new byte[64];
    try {
      int n = in.read(buf);
      return n < 0 ? null : Arrays.copyOf(buf, n);
    } catch (SocketTimeoutException x) {
      return new byte[0];
    }
  }

  /**
   * @return the product that answers so, or null if we cannot tell
   */
  private static String identify(byte[] b) {
    String text = new String(b, StandardCharsets.ISO_8859_1);
    if ((b[0] == 'S' || b[0] == 'N') && (b.length == 1 || b[1] == 'E')) {
      return product(
          Dialect.POSTGRESQL); // the answer to the SSL request, perhaps then an error for what
      // followed
    }
    if (text.startsWith("E") && text.contains("SFATAL")) {
      return product(Dialect.POSTGRESQL);
    }
    if (b.length > 5 && b[3] == 0 && (b[4] == 10 || b[4] == (byte) 0xff)) {
      return product(
          Dialect.MYSQL); // a handshake packet (protocol 10) or an error packet (host blocked, too
      // many connections)
    }
    if (text.startsWith("+PONG")
        || text.startsWith("-ERR")
        || text.startsWith("-NOAUTH")
        || text.startsWith("-DENIED")) {
      return "Redis";
    }
    if (text.startsWith("HTTP/")) {
      return "HTTP";
    }
    if (text.startsWith("SSH-")) {
      return "SSH";
    }
    return null;
  }

  private static String printable(byte[] b) {
    StringBuilder shown = new StringBuilder();
    for (int i = 0; i < Math.min(b.length, 16); i++) {
      int c = b[i] & 0xff;
      shown.append(c >= 32 && c < 127 ? String.valueOf((char) c) : String.format("\\x%02x", c));
    }
    return shown.toString();
  }

  private static String product(Dialect d) {
    switch (d) {
      case POSTGRESQL:
        return "PostgreSQL";
      case H2:
        return "H2";
      default:
        return "MySQL or MariaDB";
    }
  }
}
