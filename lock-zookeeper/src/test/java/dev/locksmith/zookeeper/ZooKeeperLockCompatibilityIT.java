package dev.locksmith.zookeeper;

import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.LockCompatibilityKit;
import dev.locksmith.tck.TckTimeouts;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.KeeperException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The whole kit against a real ZooKeeper server in a JVM of its own (so that rule 14.3 can freeze
 * it with SIGSTOP). Sessions of 2 s keep the rules about vanished holders fast; the kit's expiry
 * slack is the session timeout plus a margin for the server's expiry tick.
 */
class ZooKeeperLockCompatibilityIT extends LockCompatibilityKit {
  static final Duration SESSION = Duration.ofSeconds(2);

  private static ZooKeeperServerFixture server;
  private static CuratorFramework admin;

  @BeforeAll
  static void startServer() throws InterruptedException {
    server = ZooKeeperServerFixture.start("zookeeper-tck");
    admin =
        CuratorFrameworkFactory.builder()
            .connectString(server.connectString())
            .sessionTimeoutMs(10_000)
            .connectionTimeoutMs(5_000)
            .retryPolicy(new RetryOneTime(100))
            .namespace(ZooKeeperSettings.DEFAULT_NAMESPACE)
            .build();
    admin.start();
    if (!admin.blockUntilConnected(30, java.util.concurrent.TimeUnit.SECONDS)) {
      throw new IllegalStateException("the test's own client could not connect to " + server);
    }
  }

  @AfterAll
  static void stopServer() {
    if (admin != null) {
      admin.close();
    }
    if (server != null) {
      server.close();
    }
  }

  @Override
  protected String uri() {
    return "zookeeper://127.0.0.1:"
        + server.port()
        + "?session-timeout="
        + SESSION.toMillis()
        + "ms&connection-timeout=2s";
  }

  @Override
  protected TckTimeouts timeouts() {
    TckTimeouts t = TckTimeouts.fromEnvironment();
    long slack = Math.round((SESSION.toMillis() + 1000) * t.scale());
    return t.withExpirySlack(Duration.ofMillis(slack));
  }

  @Override
  protected FaultHooks faults() {
    return ZooKeeperComparisonTarget.hooks(server)
        .withRevoke(
            lockName -> {
              String parent = "/" + NodeNames.encode(lockName);
              try {
                List<String> children = new ArrayList<>(admin.getChildren().forPath(parent));
                children.sort(NodeNames.BY_SEQUENCE);
                if (!children.isEmpty()) {
                  admin.delete().forPath(parent + "/" + children.get(0)); // the holder's node
                }
              } catch (KeeperException.NoNodeException e) {
                // nothing held
              } catch (Exception e) {
                throw new IllegalStateException(
                    "could not revoke lock '" + lockName + "' on " + server + ": " + e, e);
              }
            });
  }
}
