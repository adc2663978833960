package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Locks;
import dev.locksmith.spi.Durations;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * Ports where a backend's server is not, for bad-input tests: one where nothing listens, one that
 * accepts connections and never says a word, and a real {@code redis-server} (the most common wrong
 * port in practice: a lock URI pointed at the cache). Started once per JVM on free loopback ports;
 * a missing {@code redis-server} fails with how to install it.
 */
public final class WrongPorts {
  private static ServerSocket silent;
  private static final List<Socket> ACCEPTED = new CopyOnWriteArrayList<>();
  private static ServerProcess redis;
  private static int redisPort;

  private WrongPorts() {}

  /**
   * @return a loopback port where nothing listens: connections are refused
   */
  public static int closed() {
    return ServerProcess.freePort();
  }

  /**
   * @return a loopback port that accepts connections and never answers, as a paused or foreign
   *     server would
   */
  public static synchronized int silent() {
    if (silent == null) {
      try {
        silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      Thread acceptor =
          new Thread(
              () -> {
                while (!silent.isClosed()) {
                  try {
                    ACCEPTED.add(silent.accept()); // kept open, never answered
                  } catch (IOException e) {
                    return;
                  }
                }
              },
              "wrong-ports-silent-acceptor");
      acceptor.setDaemon(true);
      acceptor.start();
    }
    return silent.getLocalPort();
  }

  /**
   * @return the port of a real redis-server on loopback, started on first use and stopped when the
   *     JVM exits
   */
  public static synchronized int redis() {
    if (redis == null) {
      Path binary = ServerProcess.requireBinary("redis-server", "apt-get install redis-server");
      int port = ServerProcess.freePort();
      Path dir;
      try {
        dir = Files.createTempDirectory("locksmith-wrong-redis-");
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      redis =
          ServerProcess.start(
              "redis-wrong-port",
              List.of(
                  binary.toString(),
                  "--port",
                  Integer.toString(port),
                  "--bind",
                  "127.0.0.1",
                  "--save",
                  "",
                  "--appendonly",
                  "no",
                  "--dir",
                  dir.toString()),
              dir,
              Map.of(),
              Duration.ofSeconds(30),
              ServerProcess.portOpen(port));
      redisPort = port;
      ServerProcess started = redis;
      Runtime.getRuntime().addShutdownHook(new Thread(started::close));
    }
    return redisPort;
  }

  /**
   * Connects to a wrong port and checks that the failure takes what its message states, within 20%.
   * One warm-up connect with a short timeout comes first, so class loading is not counted.
   *
   * @param uri a lock URI naming a wrong port, without a query
   * @param option the backend's connect timeout option, such as {@code connect-timeout}
   * @param timeout its value for the timed connect
   * @return how long the timed connect took, in milliseconds
   */
  public static long assertFailedConnectWithin(String uri, String option, Duration timeout) {
    catchThrowable(
        () ->
            Locks.connect(uri + "?" + option + "=500ms").close()); // 500ms: valid for every backend
    String stated = Durations.format(timeout);
    long start = System.nanoTime();
    Throwable thrown =
        catchThrowable(() -> Locks.connect(uri + "?" + option + "=" + stated).close());
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertThat(thrown).isInstanceOf(BackendUnavailableException.class).hasMessageContaining(stated);
    assertThat(millis)
        .as("%s took %d ms for '%s'", uri, millis, stated)
        .isLessThanOrEqualTo(timeout.toMillis() * 12 / 10);
    return millis;
  }
}
