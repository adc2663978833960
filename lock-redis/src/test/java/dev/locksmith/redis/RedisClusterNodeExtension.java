package dev.locksmith.redis;

import dev.locksmith.tck.ServerProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import redis.clients.jedis.Jedis;

/**
 * One cluster-enabled redis-server for a test class, alone and without slots, on a free loopback
 * port: it runs every script as a cluster would, refusing cross-slot ones, and is reached with a
 * plain {@code redis://} URI. Started before the class's tests and stopped after them. Register it
 * on a static field:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final RedisClusterNodeExtension CLUSTER_NODE = new RedisClusterNodeExtension("fence");
 * }</pre>
 *
 * Without redis-server the class fails; it is never skipped.
 */
public final class RedisClusterNodeExtension implements BeforeAllCallback, AfterAllCallback {
  private final String name;
  private ServerProcess process;
  private int port;

  /**
   * @param name a short name for its process and work directory
   */
  public RedisClusterNodeExtension(String name) {
    this.name = name;
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    Path binary = ServerProcess.requireBinary("redis-server", "apt-get install redis-server");
    int chosen = ServerProcess.freePort();
    Path workDir = Path.of("target", "redis-servers", name + "-" + chosen).toAbsolutePath();
    List<String> command =
        List.of(
            binary.toString(),
            "--port",
            Integer.toString(chosen),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "no",
            "--daemonize",
            "no",
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            workDir.resolve("nodes.conf").toString(),
            "--dir",
            workDir.toString());
    port = chosen;
    process =
        ServerProcess.start(
            "redis-" + name,
            command,
            workDir,
            Map.of(),
            Duration.ofSeconds(20),
            () -> {
              if (!ServerProcess.portOpen(chosen).getAsBoolean()) {
                return false;
              }
              try (Jedis j = admin()) {
                return "PONG".equals(j.ping());
              } catch (RuntimeException e) {
                return false;
              }
            });
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (process != null) {
      process.close();
      process = null;
    }
  }

  /**
   * @return the node's port
   */
  public int port() {
    return port;
  }

  /**
   * @return {@code redis://127.0.0.1:PORT}
   */
  public String uri() {
    return "redis://127.0.0.1:" + port;
  }

  /**
   * @return a new connection to the node, 5 s timeout; the caller closes it
   */
  public Jedis admin() {
    return new Jedis("127.0.0.1", port, 5000);
  }
}
