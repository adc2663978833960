package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.redis.RedisServer;
import dev.locksmith.redis.RedisServerExtension;
import dev.locksmith.tck.ServerProcess;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real redis-server of the tests' own on a free loopback port, without persistence: lock-redis's
 * {@link RedisServer} fixture, started for a test ({@link #start}) or a class's {@link
 * RedisServerExtension} ({@link #on}), with the redis-cli calls these tests make on it.
 */
final class RedisFixture implements AutoCloseable {
  private final RedisServer server;
  private final Path cli;
  private final boolean owned;
  final int port;

  private RedisFixture(RedisServer server, Path cli, boolean owned) {
    this.server = server;
    this.cli = cli;
    this.owned = owned;
    this.port = server.port();
  }

  static RedisFixture start() {
    Path cli = ServerProcess.requireBinary("redis-cli", "apt-get install redis-tools");
    return new RedisFixture(RedisServer.start("lockctl"), cli, true);
  }

  /**
   * @param extension the class's server, running (from a BeforeAll on)
   * @return the redis-cli calls on it; {@link #close()} leaves the server to the extension
   */
  static RedisFixture on(RedisServerExtension extension) {
    Path cli = ServerProcess.requireBinary("redis-cli", "apt-get install redis-tools");
    return new RedisFixture(extension.server(), cli, false);
  }

  String uri() {
    return server.uri();
  }

  /**
   * Deletes the lock's owner key on the server, as an expiry or an operator would: its holder's
   * lease is lost.
   */
  void revoke(String lockName) throws Exception {
    String reply = redisCli("DEL", "{locksmith:" + lockName + "}:owner");
    assertThat(reply.trim()).as("DEL of the owner key of '%s'", lockName).isEqualTo("1");
  }

  /**
   * @return the keys on the server, sorted
   */
  List<String> keys() throws Exception {
    return redisCli("KEYS", "*").lines().filter(l -> !l.isBlank()).sorted().toList();
  }

  private String redisCli(String... args) throws Exception {
    List<String> cmd =
        new java.util.ArrayList<>(
            List.of(cli.toString(), "-h", "127.0.0.1", "-p", Integer.toString(port)));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
    return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
  }

  @Override
  public void close() {
    if (owned) {
      server.close();
    }
  }
}
