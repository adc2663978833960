package dev.locksmith.redis;

import dev.locksmith.tck.ServerProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The node start that {@link RedisClusterSet} and {@link RedisSentinelSet} share: one data node on
 * loopback, nothing persisted, diskless replication, waited for until it answers {@code PING}.
 */
final class RedisNodes {
  private RedisNodes() {}

  /**
   * @param binary {@code redis-server}
   * @param port its port
   * @param extra the options of this kind of node (Cluster or replication), before {@code --dir}
   * @param dir its work directory
   * @return the command line of a data node
   */
  static List<String> command(Path binary, int port, List<String> extra, Path dir) {
    List<String> command =
        new ArrayList<>(
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
                "--daemonize",
                "no"));
    command.addAll(extra);
    command.addAll(List.of("--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"));
    command.addAll(List.of("--dir", dir.toString()));
    return command;
  }

  /**
   * Starts a data node and waits until it answers {@code PING}.
   *
   * @param label the process's name in logs
   * @param command its command line, from {@link #command}
   * @param dir its work directory
   * @param port its port
   * @return the running node
   */
  static ServerProcess start(String label, List<String> command, Path dir, int port) {
    return ServerProcess.start(
        label, command, dir, Map.of(), Duration.ofSeconds(20), RedisSentinelSet.pings(port));
  }
}
