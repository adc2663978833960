package dev.locksmith.redis;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real redis-server ({@link RedisServer}) for a test class on a free loopback port, started
 * before the class's tests and stopped after them, or started once and shared by every class of the
 * test JVM ({@link #shared}, stopped when the JVM exits). Register it on a static field:
 *
 * <pre>{@code
 * @RegisterExtension static final RedisServerExtension REDIS = RedisServerExtension.single("kit");
 * }</pre>
 *
 * Registered on a class with {@code @Nested} classes, it is started once for the outer class and
 * serves the nested ones too (JUnit calls it again for each nested class; those calls find it
 * running and leave it). Without redis-server the class fails; it is never skipped.
 */
public final class RedisServerExtension implements BeforeAllCallback, AfterAllCallback {
  /** The servers shared by the test JVM, by name; each stopped when the JVM exits. */
  private static final Map<String, RedisServer> SHARED = new ConcurrentHashMap<>();

  private final String name;
  private final String password;
  private final boolean perJvm;
  private RedisServer server;

  /**
   * The unique id of the class context that started {@link #server}: only its AfterAll stops it.
   */
  private String startedBy;

  private RedisServerExtension(String name, String password, boolean perJvm) {
    this.name = name;
    this.password = password;
    this.perJvm = perJvm;
  }

  /**
   * @param name a short name for its log file and work directory
   * @return a server for the class that registers it
   */
  public static RedisServerExtension single(String name) {
    return new RedisServerExtension(name, null, false);
  }

  /**
   * @param name a short name for its log file and work directory
   * @param password the default user's password ({@code --requirepass})
   * @return a server that asks for a password, for the class that registers it
   */
  public static RedisServerExtension single(String name, String password) {
    return new RedisServerExtension(name, password, false);
  }

  /**
   * @param name a short name for its log file and work directory; classes that give the same name
   *     share one server, started by the first of them and stopped when the test JVM exits
   * @return a server shared by the test JVM
   */
  public static RedisServerExtension shared(String name) {
    return new RedisServerExtension(name, null, true);
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    if (server != null) {
      return; // a @Nested class of the class that started it
    }
    startedBy = context.getUniqueId();
    server =
        perJvm
            ? SHARED.computeIfAbsent(name, RedisServerExtension::startShared)
            : RedisServer.start(name, password);
  }

  private static RedisServer startShared(String name) {
    RedisServer started = RedisServer.start(name);
    Runtime.getRuntime().addShutdownHook(new Thread(started::close));
    return started;
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (!context.getUniqueId().equals(startedBy)) {
      return; // a @Nested class's end: the outer class still runs
    }
    try {
      if (server != null && !perJvm) {
        server.close();
      }
    } finally {
      server = null;
      startedBy = null;
    }
  }

  /**
   * @return {@code redis://127.0.0.1:PORT}
   */
  public String uri() {
    return server().uri();
  }

  /**
   * @return the server, for its admin connection and for pausing, killing and restarting it
   */
  public RedisServer server() {
    if (server == null) {
      throw new IllegalStateException(
          "redis-server " + name + " runs only between the class's BeforeAll and AfterAll");
    }
    return server;
  }
}
