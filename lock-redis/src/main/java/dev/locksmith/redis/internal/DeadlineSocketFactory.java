package dev.locksmith.redis.internal;

import dev.locksmith.spi.Durations;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.security.GeneralSecurityException;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import redis.clients.jedis.JedisSocketFactory;
import redis.clients.jedis.SslOptions;
import redis.clients.jedis.exceptions.JedisConnectionException;

/**
 * Opens the probe's socket so that the TCP connect, the TLS handshake and every reply read after
 * them share one deadline: the connect timeout is the whole time a failing connect takes, as its
 * message says. Jedis's own factory bounds each step separately, and when a TLS handshake times out
 * (a plain Redis port never answers it), closing the connection starts the handshake again and
 * waits a second timeout; here a failed handshake closes the plain socket underneath.
 */
final class DeadlineSocketFactory implements JedisSocketFactory {
  private final RedisSettings settings;
  private final long deadline;

  /**
   * @param settings the server; its connect timeout starts now
   */
  DeadlineSocketFactory(RedisSettings settings) {
    this.settings = settings;
    this.deadline = System.nanoTime() + settings.connectTimeout.toNanos();
  }

  /**
   * @return the time left, in milliseconds, at least 1
   * @throws JedisConnectionException with a {@link SocketTimeoutException} cause once the deadline
   *     passed
   */
  int remainingMillis() {
    long left = deadline - System.nanoTime();
    if (left <= 0) {
      throw new JedisConnectionException(
          new SocketTimeoutException(
              "the connect timeout of " + Durations.format(settings.connectTimeout) + " ran out"));
    }
    return (int) Math.min(Integer.MAX_VALUE, Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
  }

  @Override
  public Socket createSocket() {
    Socket plain = null;
    try {
      plain = connect();
      if (!settings.tls) {
        plain.setSoTimeout(remainingMillis());
        return plain;
      }
      SslOptions options = SslOptions.defaults();
      SSLSocket tls =
          (SSLSocket)
              options
                  .createSslContext()
                  .getSocketFactory()
                  .createSocket(plain, settings.host, settings.port, true);
      SSLParameters parameters =
          options.getSslParameters() != null ? options.getSslParameters() : tls.getSSLParameters();
      parameters.setEndpointIdentificationAlgorithm("HTTPS");
      tls.setSSLParameters(parameters);
      // only now: making the TLS context can take a good part of a second in a fresh JVM
      tls.setSoTimeout(remainingMillis());
      tls.startHandshake();
      tls.setSoTimeout(remainingMillis());
      return tls;
    } catch (IOException | GeneralSecurityException | RuntimeException e) {
      closeQuietly(plain);
      throw e instanceof JedisConnectionException
          ? (JedisConnectionException) e
          : new JedisConnectionException(e);
    }
  }

  /** Tries each address of the host in turn, each within the time left. */
  private Socket connect() throws IOException {
    IOException failed = null;
    for (InetAddress address : InetAddress.getAllByName(settings.host)) {
      Socket s = new Socket();
      try {
        s.setTcpNoDelay(true);
        s.setKeepAlive(true);
        s.connect(new InetSocketAddress(address, settings.port), remainingMillis());
        return s;
      } catch (IOException | RuntimeException e) {
        closeQuietly(s);
        if (e instanceof RuntimeException) {
          throw (RuntimeException) e;
        }
        if (failed == null) {
          failed = (IOException) e;
        } else {
          failed.addSuppressed(e);
        }
      }
    }
    throw failed != null ? failed : new IOException("no address for host '" + settings.host + "'");
  }

  private static void closeQuietly(Socket s) {
    if (s != null) {
      try {
        s.close();
      } catch (IOException e) {
        // closing a socket that failed: nothing more to do
      }
    }
  }
}
