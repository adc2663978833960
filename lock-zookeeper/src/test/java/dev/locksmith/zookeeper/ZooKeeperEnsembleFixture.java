package dev.locksmith.zookeeper;

import dev.locksmith.tck.ServerProcess;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * A real ZooKeeper ensemble of three servers ({@code QuorumPeerMain}), each in a JVM of its own on
 * free loopback ports, so that one server (the leader) can be killed with SIGKILL while the other
 * two keep a quorum, and a majority can be killed and started again. The leader is found with the
 * {@code srvr} four-letter word. Ticks of 200 ms, as in {@link ZooKeeperServerFixture}.
 */
final class ZooKeeperEnsembleFixture implements AutoCloseable {
  private static final int SIZE = 3;

  /** One server: its client port and process. */
  static final class Member {
    final int id;
    final int clientPort;
    final ServerProcess process;

    Member(int id, int clientPort, ServerProcess process) {
      this.id = id;
      this.clientPort = clientPort;
      this.process = process;
    }

    @Override
    public String toString() {
      return "server." + id + " on 127.0.0.1:" + clientPort;
    }
  }

  private final List<Member> members;
  private final Path dir;

  private ZooKeeperEnsembleFixture(List<Member> members, Path dir) {
    this.members = members;
    this.dir = dir;
  }

  static ZooKeeperEnsembleFixture start(String name) {
    Path dir;
    try {
      dir = Files.createTempDirectory("locksmith-" + name + "-");
    } catch (IOException e) {
      throw new IllegalStateException("cannot make a directory for a ZooKeeper ensemble: " + e, e);
    }
    // nine ports, none twice: a free port stays free until bound, so two picks can coincide
    java.util.Set<Integer> ports = new java.util.LinkedHashSet<>();
    while (ports.size() < 3 * SIZE) {
      ports.add(ServerProcess.freePort());
    }
    java.util.Iterator<Integer> next = ports.iterator();
    int[] client = new int[SIZE];
    List<String> servers = new ArrayList<>();
    for (int i = 0; i < SIZE; i++) {
      client[i] = next.next();
      servers.add("server." + (i + 1) + "=127.0.0.1:" + next.next() + ":" + next.next());
    }
    List<Member> members = new ArrayList<>();
    try {
      for (int i = 0; i < SIZE; i++) {
        Path home = dir.resolve("server" + (i + 1));
        Files.createDirectories(home.resolve("data"));
        Files.writeString(
            home.resolve("data").resolve("myid"), Integer.toString(i + 1), StandardCharsets.UTF_8);
        Path cfg = home.resolve("zoo.cfg");
        List<String> lines =
            new ArrayList<>(
                List.of(
                    "tickTime=" + ZooKeeperServerFixture.TICK_MILLIS,
                    "initLimit=25",
                    "syncLimit=10",
                    "dataDir=" + home.resolve("data"),
                    "clientPort=" + client[i],
                    "clientPortAddress=127.0.0.1",
                    "minSessionTimeout=" + 2 * ZooKeeperServerFixture.TICK_MILLIS,
                    "maxSessionTimeout=60000",
                    "maxClientCnxns=0",
                    "admin.enableServer=false",
                    // a SIGKILL keeps what reached the OS, so skipping fsync loses nothing in these
                    // tests
                    "forceSync=no",
                    "4lw.commands.whitelist=*"));
        lines.addAll(servers);
        Files.writeString(cfg, String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
        String java =
            System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        List<String> command =
            List.of(
                java,
                "-Xmx192m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Dzookeeper.admin.enableServer=false",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                System.getProperty("java.class.path"),
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                cfg.toString());
        ServerProcess process =
            ServerProcess.start(
                name + "-" + (i + 1),
                command,
                home,
                Map.of(),
                Duration.ofSeconds(60),
                ServerProcess.portOpen(client[i]));
        members.add(new Member(i + 1, client[i], process));
      }
      ZooKeeperEnsembleFixture ensemble = new ZooKeeperEnsembleFixture(members, dir);
      ensemble.awaitQuorum(Duration.ofSeconds(60));
      return ensemble;
    } catch (IOException | RuntimeException e) {
      members.forEach(m -> m.process.close());
      if (e instanceof RuntimeException) {
        throw (RuntimeException) e;
      }
      throw new IllegalStateException(
          "cannot prepare a ZooKeeper ensemble in " + dir + ": " + e, e);
    }
  }

  /**
   * @return {@code 127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3}
   */
  String connectString() {
    return members.stream().map(m -> "127.0.0.1:" + m.clientPort).collect(Collectors.joining(","));
  }

  /**
   * @return the answer of the server at {@code port} to the {@code srvr} four-letter word
   */
  private static String srvr(int port) throws IOException {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
      s.setSoTimeout(2000);
      OutputStream out = s.getOutputStream();
      out.write("srvr".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /**
   * @return the value of the {@code srvr} line that starts with {@code key}, or null
   */
  private static String srvrLine(String reply, String key) {
    for (String line : reply.split("\n")) {
      if (line.startsWith(key)) {
        return line.substring(key.length()).trim();
      }
    }
    return null;
  }

  /**
   * @param port a server's client port
   * @return the requests the server has received from clients ({@code Received} of {@code srvr}),
   *     pings included
   */
  static long received(int port) throws IOException {
    String reply = srvr(port);
    String value = srvrLine(reply, "Received: ");
    if (value == null) {
      throw new IOException(
          "no Received line in the srvr answer: " + reply.trim().replace('\n', ' '));
    }
    return Long.parseLong(value);
  }

  /**
   * @param port a server's client port
   * @return what the server says its mode is ({@code leader}, {@code follower}, ...), or why it
   *     said nothing
   */
  static String mode(int port) {
    try {
      String reply = srvr(port);
      String value = srvrLine(reply, "Mode: ");
      return value != null ? value : "no mode in: " + reply.trim().replace('\n', ' ');
    } catch (IOException e) {
      return "no answer: " + e;
    }
  }

  /** Waits until the running servers have one leader and the others follow it. */
  void awaitQuorum(Duration within) {
    long deadline = System.nanoTime() + within.toNanos();
    while (true) {
      List<String> modes =
          members.stream()
              .filter(m -> m.process.isAlive())
              .map(m -> mode(m.clientPort))
              .collect(Collectors.toList());
      long leaders = modes.stream().filter("leader"::equals).count();
      long followers = modes.stream().filter("follower"::equals).count();
      if (leaders == 1 && leaders + followers == modes.size()) {
        return;
      }
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException(
            "the ZooKeeper ensemble had no leader with every running server following it within "
                + within.toMillis()
                + " ms; modes "
                + modes
                + "; "
                + members.get(0).process
                + " log ends:\n"
                + members.get(0).process.tail());
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for a ZooKeeper quorum", e);
      }
    }
  }

  /**
   * @return the running server that says it leads
   */
  Member leader() {
    for (Member m : members) {
      if (m.process.isAlive() && "leader".equals(mode(m.clientPort))) {
        return m;
      }
    }
    throw new IllegalStateException(
        "no running server of the ensemble says it leads: "
            + members.stream()
                .map(m -> m + " " + (m.process.isAlive() ? mode(m.clientPort) : "killed"))
                .collect(Collectors.joining("; ")));
  }

  /** Kills the leader with SIGKILL; the other two keep a quorum and elect another. */
  Member killLeader() {
    Member leader = leader();
    leader.process.kill();
    return leader;
  }

  /** Kills running servers until only one runs: no quorum. */
  void killMajority() {
    List<Member> running =
        members.stream().filter(m -> m.process.isAlive()).collect(Collectors.toList());
    for (int i = 0; i < running.size() - 1; i++) {
      running.get(i).process.kill();
    }
  }

  /** Starts every killed server again, and waits for a quorum with all of them. */
  void restartKilled() {
    for (Member m : members) {
      if (!m.process.isAlive()) {
        m.process.restart();
      }
    }
    awaitQuorum(Duration.ofSeconds(60));
  }

  @Override
  public void close() {
    members.forEach(m -> m.process.close());
  }

  @Override
  public String toString() {
    return "ZooKeeper ensemble " + members + " in " + dir;
  }
}
