package dev.locksmith.zookeeper;

import dev.locksmith.tck.ServerProcess;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * A real ZooKeeper server (ZooKeeper's own {@code ZooKeeperServerMain}) in a JVM of its own on a
 * free loopback port, so tests can pause it with SIGSTOP, kill it and restart it on the same data
 * directory. A short tick lets sessions as short as 400 ms be negotiated.
 */
final class ZooKeeperServerFixture implements AutoCloseable {
  static final int TICK_MILLIS = 200;

  private final int port;
  private final Path dir;
  private final ServerProcess process;

  private ZooKeeperServerFixture(int port, Path dir, ServerProcess process) {
    this.port = port;
    this.dir = dir;
    this.process = process;
  }

  static ZooKeeperServerFixture start(String name) {
    try {
      int port = ServerProcess.freePort();
      Path dir = Files.createTempDirectory("locksmith-" + name + "-");
      Path cfg = dir.resolve("zoo.cfg");
      Files.writeString(
          cfg,
          String.join(
              "\n",
              "tickTime=" + TICK_MILLIS,
              "dataDir=" + dir.resolve("data"),
              "clientPort=" + port,
              "clientPortAddress=127.0.0.1",
              "minSessionTimeout=" + 2 * TICK_MILLIS,
              "maxSessionTimeout=60000",
              "maxClientCnxns=0",
              "admin.enableServer=false",
              // each write still reaches the OS before it is acknowledged; skipping fsync keeps the
              // kit fast
              "forceSync=no",
              "4lw.commands.whitelist=*",
              ""),
          StandardCharsets.UTF_8);
      String java =
          System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
      List<String> command =
          List.of(
              java,
              "-Xmx256m",
              "-XX:+UseSerialGC",
              "-XX:TieredStopAtLevel=1",
              "-Dzookeeper.admin.enableServer=false",
              "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
              "-cp",
              System.getProperty("java.class.path"),
              "org.apache.zookeeper.server.ZooKeeperServerMain",
              cfg.toString());
      ServerProcess process =
          ServerProcess.start(
              name, command, dir, Map.of(), Duration.ofSeconds(60), ServerProcess.portOpen(port));
      return new ZooKeeperServerFixture(port, dir, process);
    } catch (IOException e) {
      throw new IllegalStateException("cannot prepare a ZooKeeper server: " + e, e);
    }
  }

  int port() {
    return port;
  }

  String connectString() {
    return "127.0.0.1:" + port;
  }

  void pause() {
    process.pause();
  }

  void resume() {
    process.resume();
  }

  void kill() {
    process.kill();
  }

  void restart() {
    process.restart();
  }

  @Override
  public void close() {
    process.close();
  }

  @Override
  public String toString() {
    return "ZooKeeper " + process + " on 127.0.0.1:" + port + " in " + dir;
  }
}
