package dev.locksmith.zookeeper;

import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real ZooKeeper server for a test class, on a free loopback port, started before the class's
 * tests and stopped after them, or started once and shared by every class of the test JVM ({@link
 * #sharedOwnJvm}). Either in a JVM of its own ({@link ZooKeeperServerFixture}: {@link #server()}
 * pauses, kills and restarts it), or in the test's JVM (curator-test's {@link TestingServer}:
 * {@link #testingServer()} stops and restarts it), or a three-member ensemble in the test's JVM
 * ({@link #threeMembersInThisJvm}: curator-test's {@link TestingCluster}, {@link #cluster()} kills
 * and restarts its members). All tick every {@value ZooKeeperServerFixture#TICK_MILLIS} ms.
 * Register it on a static field:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final ZooKeeperServerExtension ZK = ZooKeeperServerExtension.ownJvm("zookeeper-tck");
 * }</pre>
 */
public final class ZooKeeperServerExtension implements BeforeAllCallback, AfterAllCallback {
  /** The servers shared by the test JVM, by tag; each stopped when the JVM exits. */
  private static final Map<String, ZooKeeperServerFixture> SHARED = new ConcurrentHashMap<>();

  private final String tag;
  private final boolean inThisJvm;
  private final boolean perJvm;
  private final boolean threeMembers;
  private final Map<String, Object> settings = new HashMap<>();
  private boolean withAdmin;
  private String adminNamespace;
  private int adminSessionMillis = 30_000;
  private ZooKeeperServerFixture server;
  private TestingServer testingServer;
  private TestingCluster cluster;
  private CuratorFramework admin;

  /** What one BeforeAll started. */
  private record Started(
      ZooKeeperServerFixture server,
      TestingServer testingServer,
      TestingCluster cluster,
      CuratorFramework admin) {}

  /**
   * The servers started for the class and for each of its {@code @Nested} classes (which get
   * BeforeAll/AfterAll calls of their own), innermost first: each is stopped when its class ends,
   * and the enclosing class's is current again. Without it the enclosing class's server was
   * overwritten by the first nested class's and never stopped.
   */
  private final java.util.Deque<Started> stack = new java.util.ArrayDeque<>();

  private ZooKeeperServerExtension(
      String tag, boolean inThisJvm, boolean perJvm, boolean threeMembers) {
    this.tag = tag;
    this.inThisJvm = inThisJvm;
    this.perJvm = perJvm;
    this.threeMembers = threeMembers;
    settings.put("admin.enableServer", "false");
  }

  /**
   * @param tag a word for directory and process names
   * @return a server in a JVM of its own, for the class that registers it
   */
  public static ZooKeeperServerExtension ownJvm(String tag) {
    return new ZooKeeperServerExtension(tag, false, false, false);
  }

  /**
   * @param tag a word for directory and process names; classes that give the same tag share one
   *     server, started by the first of them and stopped when the test JVM exits
   * @return a server in a JVM of its own, shared by the test JVM
   */
  public static ZooKeeperServerExtension sharedOwnJvm(String tag) {
    return new ZooKeeperServerExtension(tag, false, true, false);
  }

  /**
   * @param tag a word for the data directory's name
   * @return a server in the test's JVM (curator-test), for the class that registers it
   */
  public static ZooKeeperServerExtension inThisJvm(String tag) {
    return new ZooKeeperServerExtension(tag, true, false, false);
  }

  /**
   * @param tag a word for the data directories' names
   * @return a three-member ensemble in the test's JVM (curator-test), for the class that registers
   *     it
   */
  public static ZooKeeperServerExtension threeMembersInThisJvm(String tag) {
    return new ZooKeeperServerExtension(tag, true, false, true);
  }

  /**
   * For a server or ensemble in the test's JVM: a zoo.cfg setting more.
   *
   * @return this
   */
  ZooKeeperServerExtension setting(String key, String value) {
    settings.put(key, value);
    return this;
  }

  /**
   * Connects a Curator client of the test's own ({@link #admin()}) once the server runs.
   *
   * @param namespace its namespace, or null for the root
   * @param sessionMillis its session timeout
   * @return this
   */
  ZooKeeperServerExtension withAdmin(String namespace, int sessionMillis) {
    this.withAdmin = true;
    this.adminNamespace = namespace;
    this.adminSessionMillis = sessionMillis;
    return this;
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    if (threeMembers) {
      List<InstanceSpec> specs = new ArrayList<>();
      for (int id = 1; id <= 3; id++) {
        specs.add(
            new InstanceSpec(
                Files.createTempDirectory("locksmith-" + tag + "-" + id).toFile(),
                InstanceSpec.getRandomPort(),
                InstanceSpec.getRandomPort(),
                InstanceSpec.getRandomPort(),
                true,
                id,
                ZooKeeperServerFixture.TICK_MILLIS,
                -1,
                Map.copyOf(settings),
                "127.0.0.1"));
      }
      TestingCluster started = new TestingCluster(specs);
      try {
        started.start();
      } catch (Exception | Error e) {
        started.close();
        throw e;
      }
      cluster = started;
    } else if (inThisJvm) {
      InstanceSpec spec =
          new InstanceSpec(
              Files.createTempDirectory("locksmith-" + tag).toFile(),
              InstanceSpec.getRandomPort(),
              -1,
              -1,
              true,
              -1,
              ZooKeeperServerFixture.TICK_MILLIS,
              -1,
              Map.copyOf(settings),
              "127.0.0.1");
      testingServer = new TestingServer(spec, true);
    } else if (perJvm) {
      server =
          SHARED.computeIfAbsent(
              tag,
              k -> {
                ZooKeeperServerFixture started = ZooKeeperServerFixture.start(tag);
                Runtime.getRuntime().addShutdownHook(new Thread(started::close));
                return started;
              });
    } else {
      server = ZooKeeperServerFixture.start(tag);
    }
    if (withAdmin) {
      CuratorFrameworkFactory.Builder builder =
          CuratorFrameworkFactory.builder()
              .connectString(connectString())
              .sessionTimeoutMs(adminSessionMillis)
              .connectionTimeoutMs(5_000)
              .retryPolicy(new RetryOneTime(100));
      if (adminNamespace != null) {
        builder.namespace(adminNamespace);
      }
      admin = builder.build();
      admin.start();
      if (!admin.blockUntilConnected(30, TimeUnit.SECONDS)) {
        throw new IllegalStateException(
            "the test's own client could not connect to ZooKeeper " + tag);
      }
    }
    stack.push(new Started(server, testingServer, cluster, admin));
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    Started ended = stack.poll();
    Started outer = stack.peek();
    admin = outer == null ? null : outer.admin();
    testingServer = outer == null ? null : outer.testingServer();
    cluster = outer == null ? null : outer.cluster();
    server = outer == null ? null : outer.server();
    if (ended == null) {
      return;
    }
    try {
      if (ended.admin() != null) {
        ended.admin().close();
      }
    } finally {
      if (ended.testingServer() != null) {
        ended.testingServer().close();
      }
      if (ended.cluster() != null) {
        ended.cluster().close();
      }
      if (ended.server() != null && !perJvm) {
        ended.server().close();
      }
    }
  }

  /**
   * @return {@code zookeeper://127.0.0.1:PORT}, without options
   */
  public String uri() {
    return "zookeeper://" + connectString();
  }

  /**
   * @return {@code 127.0.0.1:PORT}, or for an ensemble every member's {@code 127.0.0.1:PORT}
   *     separated by commas
   */
  public String connectString() {
    if (cluster != null) {
      return cluster.getConnectString();
    }
    return "127.0.0.1:" + port();
  }

  /**
   * @return the server's client port (for an ensemble, the first member's)
   */
  public int port() {
    if (cluster != null) {
      return cluster.getInstances().iterator().next().getPort();
    }
    if (testingServer != null) {
      return testingServer.getPort();
    }
    return server().port();
  }

  /**
   * @return the test's own Curator client ({@link #withAdmin})
   */
  CuratorFramework admin() {
    if (admin == null) {
      throw new IllegalStateException("ZooKeeper " + tag + " has no admin client, or not yet");
    }
    return admin;
  }

  /**
   * @return the server in a JVM of its own, for pausing, killing and restarting it
   */
  ZooKeeperServerFixture server() {
    if (server == null) {
      throw new IllegalStateException(
          "ZooKeeper " + tag + " runs in a JVM of its own only between BeforeAll and AfterAll");
    }
    return server;
  }

  /**
   * @return the three-member ensemble in the test's JVM, for killing and restarting its members
   */
  TestingCluster cluster() {
    if (cluster == null) {
      throw new IllegalStateException(
          "ZooKeeper " + tag + " runs as an ensemble only between BeforeAll and AfterAll");
    }
    return cluster;
  }

  /**
   * @return the server in the test's JVM, for stopping and restarting it
   */
  TestingServer testingServer() {
    if (testingServer == null) {
      throw new IllegalStateException(
          "ZooKeeper " + tag + " runs in this JVM only between BeforeAll and AfterAll");
    }
    return testingServer;
  }
}
