package dev.locksmith.redis;

import dev.locksmith.tck.ServerProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * A real 6-node Redis Cluster on free loopback ports: three primaries and three replicas ({@code
 * cluster-enabled yes}, joined with {@code redis-cli --cluster create ... --cluster-replicas 1}),
 * nothing persisted. A test can pause or kill the primary of a key's slot; its replica is promoted
 * once the primary has been unreachable for the node timeout. Shipped in the test-jar.
 */
public final class RedisClusterSet implements AutoCloseable {
  private final List<ServerProcess> nodes = new ArrayList<>();
  private final List<Integer> ports = new ArrayList<>();

  private RedisClusterSet() {}

  /**
   * Starts six nodes, joins them and waits until every node reports {@code cluster_state:ok} and
   * every replica is in sync.
   *
   * @param name a short name for log files and work directories
   * @param nodeTimeout {@code cluster-node-timeout}: how long a primary must be unreachable before
   *     its replica takes over
   * @return the running Cluster
   */
  public static RedisClusterSet start(String name, Duration nodeTimeout) {
    Path binary = ServerProcess.requireBinary("redis-server", "apt-get install redis-server");
    Path cli = ServerProcess.requireBinary("redis-cli", "apt-get install redis-tools");
    RedisClusterSet set = new RedisClusterSet();
    try {
      for (int i = 0; i < 6; i++) {
        int port;
        do {
          port = ServerProcess.freePort();
        } while (port + 10000 > 65535 || !free(port + 10000)); // the bus listens on port + 10000
        Path dir = Path.of("target", "redis-servers", name + "-cluster-" + port).toAbsolutePath();
        // a new node: an earlier cluster's node on the same port (the same build, or an earlier
        // one) left its nodes.conf and data here, with which the node would start as a member of
        // that cluster and refuse to join this one ("is not empty")
        for (String old : List.of("nodes.conf", "dump.rdb", "appendonly.aof")) {
          java.nio.file.Files.deleteIfExists(dir.resolve(old));
        }
        deleteTree(dir.resolve("appendonlydir"));
        List<String> command =
            RedisNodes.command(
                binary,
                port,
                List.of(
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    dir.resolve("nodes.conf").toString(),
                    "--cluster-node-timeout",
                    Long.toString(nodeTimeout.toMillis()),
                    "--cluster-announce-ip",
                    "127.0.0.1"),
                dir);
        set.nodes.add(RedisNodes.start("redis-" + name + "-" + i, command, dir, port));
        set.ports.add(port);
      }
      List<String> create = new ArrayList<>(List.of(cli.toString(), "--cluster", "create"));
      for (int port : set.ports) {
        create.add("127.0.0.1:" + port);
      }
      create.addAll(List.of("--cluster-replicas", "1", "--cluster-yes"));
      Process p = new ProcessBuilder(create).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("redis-cli --cluster create failed: " + out);
      }
      set.awaitHealthy(Duration.ofSeconds(30));
      return set;
    } catch (IOException | RuntimeException e) {
      set.close();
      throw e instanceof RuntimeException ? (RuntimeException) e : new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      set.close();
      throw new IllegalStateException("interrupted while starting the Cluster", e);
    }
  }

  /**
   * Waits until every live node reports {@code cluster_state:ok}, sees three primaries with all
   * slots, and every live replica's link to its primary is up.
   *
   * @param limit how long to wait
   */
  public void awaitHealthy(Duration limit) {
    long end = System.nanoTime() + limit.toNanos();
    String last = "";
    while (System.nanoTime() < end) {
      boolean ok = true;
      for (int i = 0; i < ports.size() && ok; i++) {
        if (!nodes.get(i).isAlive()) {
          continue;
        }
        try (Jedis j = RedisSentinelSet.connect(ports.get(i))) {
          String info = j.clusterInfo();
          String repl = j.info("replication");
          ok =
              info.contains("cluster_state:ok")
                  && info.contains("cluster_slots_ok:16384")
                  && (repl.contains("role:master") || repl.contains("master_link_status:up"));
          last = ports.get(i) + ": " + info.lines().limit(3).reduce("", (a, b) -> a + " " + b);
        } catch (RuntimeException e) {
          ok = false;
          last = e.toString();
        }
      }
      if (ok) {
        return;
      }
      RedisSentinelSet.sleep(100);
    }
    throw new IllegalStateException(
        "the Cluster did not become healthy within " + limit + ": " + last);
  }

  /**
   * @return {@code redis-cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3} (three seeds; the rest
   *     is discovered)
   */
  public String uri() {
    return "redis-cluster://127.0.0.1:"
        + ports.get(0)
        + ",127.0.0.1:"
        + ports.get(1)
        + ",127.0.0.1:"
        + ports.get(2);
  }

  /**
   * @return the ports of the six nodes
   */
  public List<Integer> ports() {
    return List.copyOf(ports);
  }

  /**
   * @param key a key
   * @return the port of the primary that serves the key's slot now, asked of a live node
   */
  public int primaryOf(String key) {
    int slot = JedisClusterCRC16.getSlot(key);
    RuntimeException last = null;
    for (int i = 0; i < ports.size(); i++) {
      if (!nodes.get(i).isAlive()) {
        continue;
      }
      try (Jedis j = RedisSentinelSet.connect(ports.get(i))) {
        for (Object range : j.clusterSlots()) {
          List<?> r = (List<?>) range;
          if ((Long) r.get(0) <= slot && slot <= (Long) r.get(1)) {
            List<?> primary = (List<?>) r.get(2);
            return ((Long) primary.get(1)).intValue();
          }
        }
      } catch (RuntimeException e) {
        last = e;
      }
    }
    throw new IllegalStateException("no node serves slot " + slot, last);
  }

  /**
   * @return the ports of the nodes that are primaries now
   */
  public List<Integer> primaries() {
    List<Integer> out = new ArrayList<>();
    for (int i = 0; i < ports.size(); i++) {
      if (!nodes.get(i).isAlive()) {
        continue;
      }
      try (Jedis j = RedisSentinelSet.connect(ports.get(i))) {
        if (j.info("replication").contains("role:master")) {
          out.add(ports.get(i));
        }
      } catch (RuntimeException e) {
        // paused or down: not counted
      }
    }
    return out;
  }

  /**
   * @return the ports of the nodes that are replicas now
   */
  public List<Integer> replicas() {
    List<Integer> out = new ArrayList<>(ports);
    out.removeAll(primaries());
    return out;
  }

  /**
   * @param port a node
   * @return a direct connection to it; close it
   */
  public Jedis admin(int port) {
    return RedisSentinelSet.connect(port);
  }

  /**
   * @param port a node to freeze (SIGSTOP)
   */
  public void pause(int port) {
    nodes.get(ports.indexOf(port)).pause();
  }

  /**
   * @param port a node to thaw (SIGCONT)
   */
  public void resume(int port) {
    nodes.get(ports.indexOf(port)).resume();
  }

  /**
   * @param port a node to kill (SIGKILL)
   */
  public void kill(int port) {
    nodes.get(ports.indexOf(port)).kill();
  }

  /**
   * Restarts a killed node on its port, with its node file: it rejoins the Cluster as a replica of
   * the node that took over its slots.
   *
   * @param port the node's port
   */
  public void restart(int port) {
    nodes.get(ports.indexOf(port)).restart();
  }

  /**
   * Waits until a node other than {@code formerPort} serves the key's slot as primary.
   *
   * @param key a key of the slot
   * @param formerPort the primary that was killed
   * @param limit how long to wait
   */
  public void awaitPromoted(String key, int formerPort, Duration limit) {
    long end = System.nanoTime() + limit.toNanos();
    while (System.nanoTime() < end) {
      try {
        int now = primaryOf(key);
        if (now != formerPort) {
          try (Jedis j = RedisSentinelSet.connect(now)) {
            if (j.info("replication").contains("role:master")
                && j.clusterInfo().contains("cluster_state:ok")) {
              return;
            }
          }
        }
      } catch (RuntimeException e) {
        // not yet
      }
      RedisSentinelSet.sleep(50);
    }
    throw new IllegalStateException(
        "no replica took over the slot of '" + key + "' within " + limit);
  }

  /**
   * @return the tails of every node's log
   */
  public String logs() {
    StringBuilder b = new StringBuilder();
    for (ServerProcess p : nodes) {
      b.append(p).append(":\n").append(p.tail()).append('\n');
    }
    return b.toString();
  }

  @Override
  public void close() {
    for (ServerProcess p : nodes) {
      p.close();
    }
  }

  /** Whether a loopback port can be bound now (the cluster bus port of a node about to start). */
  private static boolean free(int port) {
    try (java.net.ServerSocket s = new java.net.ServerSocket()) {
      s.bind(new java.net.InetSocketAddress("127.0.0.1", port));
      return true;
    } catch (java.io.IOException e) {
      return false;
    }
  }

  /** Deletes a folder and everything in it, if it is there. */
  private static void deleteTree(Path dir) throws java.io.IOException {
    if (!java.nio.file.Files.exists(dir)) {
      return;
    }
    try (var paths = java.nio.file.Files.walk(dir)) {
      for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
        java.nio.file.Files.deleteIfExists(p);
      }
    }
  }
}
