package dev.locksmith.etcd;

import dev.locksmith.tck.ServerProcess;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.maintenance.StatusResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Real etcd members on free loopback ports, for tests: one member, or a cluster of three. Data
 * lives in a temporary directory on tmpfs when there is one (fsync there costs nothing), so the
 * kit's thousands of writes run fast; a restart keeps the data, as on disk.
 */
final class EtcdCluster implements AutoCloseable {
  static final String INSTALL_HINT = "apt-get install etcd-server";

  /** One member. */
  static final class Member {
    final String name;
    final int clientPort;
    final ServerProcess process;

    Member(String name, int clientPort, ServerProcess process) {
      this.name = name;
      this.clientPort = clientPort;
      this.process = process;
    }

    String endpoint() {
      return "http://127.0.0.1:" + clientPort;
    }
  }

  final List<Member> members;
  private final Path dir;

  private EtcdCluster(List<Member> members, Path dir) {
    this.members = members;
    this.dir = dir;
  }

  /**
   * @param size 1 or 3
   * @param tag a word for directory and process names
   */
  static EtcdCluster start(int size, String tag) throws IOException, InterruptedException {
    return start(size, tag, "http");
  }

  /**
   * @param size 1 or 3
   * @param tag a word for directory and process names
   * @param clientScheme {@code http}, or {@code https} when {@code extraArgs} give --cert-file and
   *     --key-file
   * @param extraArgs more etcd flags for every member
   */
  static EtcdCluster start(int size, String tag, String clientScheme, String... extraArgs)
      throws IOException, InterruptedException {
    Path etcd = ServerProcess.requireBinary("etcd", INSTALL_HINT);
    Path shm = Path.of("/dev/shm");
    Path base =
        Files.isDirectory(shm) && Files.isWritable(shm)
            ? shm
            : Path.of(System.getProperty("java.io.tmpdir"));
    Path dir = Files.createTempDirectory(base, "locksmith-etcd-" + tag + "-");
    int[] clientPorts = new int[size];
    int[] peerPorts = new int[size];
    for (int i = 0; i < size; i++) {
      clientPorts[i] = ServerProcess.freePort();
      peerPorts[i] = ServerProcess.freePort();
    }
    String initialCluster = "";
    for (int i = 0; i < size; i++) {
      initialCluster += (i == 0 ? "" : ",") + "m" + i + "=http://127.0.0.1:" + peerPorts[i];
    }
    List<Member> members = new ArrayList<>();
    try {
      for (int i = 0; i < size; i++) {
        String name = "m" + i;
        List<String> cmd =
            new ArrayList<>(
                List.of(
                    etcd.toString(),
                    "--name",
                    name,
                    "--data-dir",
                    dir.resolve(name + ".etcd").toString(),
                    "--listen-client-urls",
                    clientScheme + "://127.0.0.1:" + clientPorts[i],
                    "--advertise-client-urls",
                    clientScheme + "://127.0.0.1:" + clientPorts[i],
                    "--listen-peer-urls",
                    "http://127.0.0.1:" + peerPorts[i],
                    "--initial-advertise-peer-urls",
                    "http://127.0.0.1:" + peerPorts[i],
                    "--initial-cluster",
                    initialCluster,
                    "--initial-cluster-state",
                    "new",
                    "--initial-cluster-token",
                    "locksmith-" + tag,
                    // Also sets etcd's minimum lease TTL (1.5 election timeouts, rounded up to
                    // seconds): 1 s
                    // here, 2 s with etcd's defaults, so a 1 s lease of its own is not raised to 2
                    // s.
                    "--heartbeat-interval",
                    "50",
                    "--election-timeout",
                    "500",
                    "--logger",
                    "zap",
                    "--log-level",
                    "warn"));
        cmd.addAll(List.of(extraArgs));
        // A member of a cluster cannot be healthy before a quorum runs: wait for its port here, for
        // health below.
        int port = clientPorts[i];
        members.add(
            new Member(
                name,
                port,
                ServerProcess.start(
                    "etcd-" + tag + "-" + name,
                    cmd,
                    dir,
                    Map.of(),
                    Duration.ofSeconds(30),
                    ServerProcess.portOpen(port))));
      }
      EtcdCluster cluster = new EtcdCluster(members, dir);
      if (clientScheme.equals("http")) {
        cluster.awaitHealthy(Duration.ofSeconds(30));
      }
      return cluster;
    } catch (RuntimeException | InterruptedException e) {
      members.forEach(m -> m.process.close());
      throw e;
    }
  }

  /** Waits until every running member answers /health with true. */
  void awaitHealthy(Duration within) throws InterruptedException {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(500)).build();
    long deadline = System.nanoTime() + within.toNanos();
    for (Member m : members) {
      if (!m.process.isAlive()) {
        continue;
      }
      while (!healthy(http, m)) {
        if (System.nanoTime() - deadline > 0) {
          throw new IllegalStateException(
              "etcd member "
                  + m.name
                  + " was not healthy within "
                  + within.toMillis()
                  + " ms; its log ends:\n"
                  + m.process.tail());
        }
        Thread.sleep(20);
      }
    }
  }

  private static boolean healthy(HttpClient http, Member m) throws InterruptedException {
    try {
      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(URI.create(m.endpoint() + "/health"))
                  .timeout(Duration.ofMillis(1000))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      return r.statusCode() == 200 && r.body().contains("\"true\"");
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * @return {@code 127.0.0.1:p1,127.0.0.1:p2,...} for an etcd:// URI
   */
  String hosts() {
    return members.stream().map(m -> "127.0.0.1:" + m.clientPort).collect(Collectors.joining(","));
  }

  /**
   * Adds the user root with this password, gives it the root role and turns authentication on: from
   * then on every client must log in.
   */
  void enableRootAuth(String password) throws Exception {
    try (Client root = Client.builder().endpoints(endpoints()).build()) {
      ByteSequence rootName = KeyNames.bytes("root");
      root.getAuthClient().userAdd(rootName, KeyNames.bytes(password)).get(10, TimeUnit.SECONDS);
      try {
        root.getAuthClient().roleAdd(rootName).get(10, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        // the root role may exist already
      }
      root.getAuthClient().userGrantRole(rootName, rootName).get(10, TimeUnit.SECONDS);
      root.getAuthClient().authEnable().get(10, TimeUnit.SECONDS);
    }
  }

  String[] endpoints() {
    return members.stream().map(Member::endpoint).toArray(String[]::new);
  }

  Member single() {
    return members.get(0);
  }

  /**
   * @return the member that is the Raft leader, asked of the running members
   */
  Member leader(Client admin) throws Exception {
    for (Member m : members) {
      if (!m.process.isAlive()) {
        continue;
      }
      StatusResponse s =
          admin.getMaintenanceClient().statusMember(m.endpoint()).get(5, TimeUnit.SECONDS);
      for (Member candidate : members) {
        StatusResponse c =
            admin
                .getMaintenanceClient()
                .statusMember(candidate.endpoint())
                .get(5, TimeUnit.SECONDS);
        if (c.getHeader().getMemberId() == s.getLeader()) {
          return candidate;
        }
      }
    }
    throw new IllegalStateException("no etcd member knows a leader");
  }

  @Override
  public void close() throws IOException {
    for (Member m : members) {
      m.process.close();
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
