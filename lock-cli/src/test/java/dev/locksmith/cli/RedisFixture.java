package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.tck.ServerProcess;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** A real redis-server of the tests' own on a free loopback port, without persistence. */
final class RedisFixture implements AutoCloseable {
  private final ServerProcess server;
  private final Path cli;
  final int port;

  private RedisFixture(ServerProcess server, Path cli, int port) {
    this.server = server;
    this.cli = cli;
    this.port = port;
  }

  static RedisFixture start() {
    Path binary = ServerProcess.requireBinary("redis-server", "apt-get install redis-server");
    Path cli = ServerProcess.requireBinary("redis-cli", "apt-get install redis-tools");
    int port = ServerProcess.freePort();
    Path dir = Path.of("target", "redis-servers", "lockctl-" + port).toAbsolutePath();
    ServerProcess server =
        ServerProcess.start(
            "redis-lockctl",
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
                "--protected-mode",
                "no",
                "--dir",
                dir.toString()),
            dir,
            Map.of(),
            Duration.ofSeconds(20),
            ServerProcess.portOpen(port));
    return new RedisFixture(server, cli, port);
  }

  String uri() {
    return "redis://127.0.0.1:" + port;
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
    server.close();
  }
}
