package dev.locksmith.redis;

import dev.locksmith.tck.ServerProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

/**
 * A real Sentinel set on free loopback ports: one primary, two replicas and three Sentinels ({@code
 * redis-server --sentinel}) that monitor it as {@value #MASTER} with a quorum of 2. Nothing
 * persists. A test can pause, kill and restart the current primary; the Sentinels then promote a
 * replica once it has been down for {@code downAfter}. Shipped in the test-jar.
 */
public final class RedisSentinelSet implements AutoCloseable {
  /** The master name the Sentinels monitor. */
  public static final String MASTER = "mymaster";

  private final List<ServerProcess> data = new ArrayList<>();
  private final List<Integer> dataPorts = new ArrayList<>();
  private final List<ServerProcess> sentinels = new ArrayList<>();
  private final List<Integer> sentinelPorts = new ArrayList<>();

  private RedisSentinelSet() {}

  /**
   * Starts the set and waits until every Sentinel knows the primary, both replicas and the two
   * other Sentinels (a few seconds: Sentinels find each other by hello messages every 2 s).
   *
   * @param name a short name for log files and work directories
   * @param downAfter how long the primary must be unreachable before the Sentinels fail over
   * @return the running set
   */
  public static RedisSentinelSet start(String name, Duration downAfter) {
    Path binary = ServerProcess.requireBinary("redis-server", "apt-get install redis-server");
    RedisSentinelSet set = new RedisSentinelSet();
    try {
      for (int i = 0; i < 3; i++) {
        int port = ServerProcess.freePort();
        List<String> extra = new ArrayList<>(List.of("--replica-announce-ip", "127.0.0.1"));
        if (i > 0) {
          extra.addAll(List.of("--replicaof", "127.0.0.1", Integer.toString(set.dataPorts.get(0))));
        }
        Path dir = Path.of("target", "redis-servers", name + "-data-" + port).toAbsolutePath();
        List<String> command = RedisNodes.command(binary, port, extra, dir);
        set.data.add(RedisNodes.start("redis-" + name + "-" + i, command, dir, port));
        set.dataPorts.add(port);
      }
      for (int i = 0; i < 3; i++) {
        int port = ServerProcess.freePort();
        Path dir = Path.of("target", "redis-servers", name + "-sentinel-" + port).toAbsolutePath();
        Files.createDirectories(dir);
        Path conf = dir.resolve("sentinel.conf");
        Files.writeString(
            conf,
            String.join(
                "\n",
                "port " + port,
                "bind 127.0.0.1",
                "protected-mode no",
                "daemonize no",
                "dir " + dir,
                "sentinel announce-ip 127.0.0.1",
                "sentinel monitor " + MASTER + " 127.0.0.1 " + set.dataPorts.get(0) + " 2",
                "sentinel down-after-milliseconds " + MASTER + " " + downAfter.toMillis(),
                "sentinel failover-timeout "
                    + MASTER
                    + " "
                    + Math.max(2000, downAfter.toMillis() * 4),
                "sentinel parallel-syncs " + MASTER + " 2",
                ""),
            StandardCharsets.UTF_8);
        set.sentinels.add(
            ServerProcess.start(
                "sentinel-" + name + "-" + i,
                List.of(binary.toString(), conf.toString(), "--sentinel"),
                dir,
                Map.of(),
                Duration.ofSeconds(20),
                pings(port)));
        set.sentinelPorts.add(port);
      }
      set.awaitDiscovered(Duration.ofSeconds(30));
      return set;
    } catch (IOException | RuntimeException e) {
      set.close();
      throw e instanceof RuntimeException ? (RuntimeException) e : new IllegalStateException(e);
    }
  }

  private void awaitDiscovered(Duration limit) {
    long end = System.nanoTime() + limit.toNanos();
    String last = "";
    while (System.nanoTime() < end) {
      boolean all = true;
      for (int port : sentinelPorts) {
        try (Jedis s = connect(port)) {
          Map<String, String> m = s.sentinelMaster(MASTER);
          last =
              "sentinel "
                  + port
                  + ": "
                  + m.get("num-slaves")
                  + " replicas, "
                  + m.get("num-other-sentinels")
                  + " other sentinels";
          all &= "2".equals(m.get("num-slaves")) && "2".equals(m.get("num-other-sentinels"));
        } catch (RuntimeException e) {
          last = e.toString();
          all = false;
        }
      }
      for (int i = 1; i < 3 && all; i++) {
        try (Jedis r = connect(dataPorts.get(i))) {
          all = r.info("replication").contains("master_link_status:up");
        }
      }
      if (all) {
        return;
      }
      sleep(100);
    }
    throw new IllegalStateException(
        "the Sentinel set did not settle within " + limit + ": " + last);
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  static BooleanSupplier pings(int port) {
    BooleanSupplier open = ServerProcess.portOpen(port);
    return () -> {
      if (!open.getAsBoolean()) {
        return false;
      }
      try (Jedis j = connect(port)) {
        return "PONG".equals(j.ping());
      } catch (RuntimeException e) {
        return false;
      }
    };
  }

  static Jedis connect(int port) {
    return new Jedis(
        new HostAndPort("127.0.0.1", port),
        DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis(2000)
            .socketTimeoutMillis(5000)
            .build());
  }

  /**
   * @return {@code redis-sentinel://127.0.0.1:s1,127.0.0.1:s2,127.0.0.1:s3/mymaster}
   */
  public String uri() {
    StringBuilder b = new StringBuilder("redis-sentinel://");
    for (int i = 0; i < sentinelPorts.size(); i++) {
      b.append(i == 0 ? "" : ",").append("127.0.0.1:").append(sentinelPorts.get(i));
    }
    return b.append('/').append(MASTER).toString();
  }

  /**
   * @return the port of the data node the Sentinels name as primary now
   */
  public int primaryPort() {
    RuntimeException last = null;
    for (int port : sentinelPorts) {
      try (Jedis s = connect(port)) {
        HostAndPort hp =
            s.sentinelGetMasterAddrByName(MASTER) == null
                ? null
                : HostAndPort.from(String.join(":", s.sentinelGetMasterAddrByName(MASTER)));
        if (hp != null) {
          return hp.getPort();
        }
      } catch (RuntimeException e) {
        last = e;
      }
    }
    throw new IllegalStateException("no Sentinel names a primary", last);
  }

  /**
   * @return the ports of the three data nodes, the first started as primary
   */
  public List<Integer> dataPorts() {
    return List.copyOf(dataPorts);
  }

  /**
   * @return the ports of the three Sentinels
   */
  public List<Integer> sentinelPorts() {
    return List.copyOf(sentinelPorts);
  }

  /**
   * @return a direct connection to the current primary; close it
   */
  public Jedis primary() {
    return connect(primaryPort());
  }

  /**
   * @return a direct connection to a data node; close it
   */
  public Jedis admin(int port) {
    return connect(port);
  }

  private ServerProcess process(int port) {
    return data.get(dataPorts.indexOf(port));
  }

  /** Freezes the current primary (SIGSTOP). */
  public void pausePrimary() {
    process(primaryPort()).pause();
  }

  /** Thaws every data node (SIGCONT); harmless for a node that is not paused. */
  public void resumeAll() {
    for (ServerProcess p : data) {
      if (p.isAlive()) {
        p.resume();
      }
    }
  }

  /** Freezes both replicas of the current primary (SIGSTOP). */
  public void pauseReplicas() {
    int primary = primaryPort();
    for (int port : dataPorts) {
      if (port != primary) {
        process(port).pause();
      }
    }
  }

  /**
   * @return the port of the primary that was killed (SIGKILL)
   */
  public int killPrimary() {
    int port = primaryPort();
    process(port).kill();
    return port;
  }

  /**
   * Waits until the Sentinels name another primary than {@code formerPort} and it answers as a
   * primary.
   *
   * @param formerPort the primary that was killed
   * @param limit how long to wait
   */
  public void awaitPromoted(int formerPort, Duration limit) {
    long end = System.nanoTime() + limit.toNanos();
    while (System.nanoTime() < end) {
      try {
        int now = primaryPort();
        if (now != formerPort) {
          try (Jedis j = connect(now)) {
            if (j.info("replication").contains("role:master")) {
              return;
            }
          }
        }
      } catch (RuntimeException e) {
        // not yet
      }
      sleep(50);
    }
    throw new IllegalStateException("no replica was promoted within " + limit);
  }

  /**
   * Restarts a killed data node (empty, no persistence); the Sentinels make it a replica of the
   * current primary.
   *
   * @param port its port
   */
  public void restart(int port) {
    process(port).restart();
  }

  /**
   * Waits until the data node on {@code port} is a replica with its link to the primary up, and the
   * Sentinels count it among the primary's replicas again.
   *
   * @param port a restarted node
   * @param limit how long to wait
   */
  public void awaitReplica(int port, Duration limit) {
    long end = System.nanoTime() + limit.toNanos();
    String last = "";
    while (System.nanoTime() < end) {
      try (Jedis j = connect(port)) {
        String repl = j.info("replication");
        last =
            repl.lines()
                .filter(l -> l.startsWith("role") || l.startsWith("master_link"))
                .reduce("", (a, b) -> a + " " + b);
        if (repl.contains("role:slave") && repl.contains("master_link_status:up")) {
          try (Jedis p = connect(primaryPort())) {
            if (p.info("replication").contains("connected_slaves:2")) {
              return;
            }
          }
        }
      } catch (RuntimeException e) {
        last = e.toString();
      }
      sleep(100);
    }
    throw new IllegalStateException(
        "node " + port + " did not rejoin as a replica within " + limit + ":" + last);
  }

  /**
   * @return the tails of every log, for failure messages
   */
  public String logs() {
    StringBuilder b = new StringBuilder();
    for (ServerProcess p : data) {
      b.append(p).append(":\n").append(p.tail()).append('\n');
    }
    for (ServerProcess p : sentinels) {
      b.append(p).append(":\n").append(p.tail()).append('\n');
    }
    return b.toString();
  }

  @Override
  public void close() {
    for (ServerProcess p : sentinels) {
      p.close();
    }
    for (ServerProcess p : data) {
      try {
        p.resume();
      } catch (RuntimeException e) {
        // already gone
      }
      p.close();
    }
  }
}
