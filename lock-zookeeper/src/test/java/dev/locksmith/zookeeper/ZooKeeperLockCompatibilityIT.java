package dev.locksmith.zookeeper;

import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.LockCompatibilityKit;
import dev.locksmith.tck.TckTimeouts;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.zookeeper.KeeperException;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The whole kit against a real ZooKeeper server in a JVM of its own (so that rule 14.3 can freeze
 * it with SIGSTOP). Sessions of 2 s keep the rules about vanished holders fast; the kit's expiry
 * slack is the session timeout plus a margin for the server's expiry tick.
 */
class ZooKeeperLockCompatibilityIT extends LockCompatibilityKit {
  static final Duration SESSION = Duration.ofSeconds(2);

  @RegisterExtension
  static final ZooKeeperServerExtension ZK =
      ZooKeeperServerExtension.ownJvm("zookeeper-tck")
          .withAdmin(ZooKeeperSettings.DEFAULT_NAMESPACE, 10_000);

  @Override
  protected String uri() {
    return "zookeeper://127.0.0.1:"
        + ZK.port()
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
    return ZooKeeperComparisonTarget.hooks(ZK.server())
        .withRevoke(
            lockName -> {
              String parent = "/" + NodeNames.encode(lockName);
              try {
                List<String> children = new ArrayList<>(ZK.admin().getChildren().forPath(parent));
                children.sort(NodeNames.BY_SEQUENCE);
                if (!children.isEmpty()) {
                  ZK.admin().delete().forPath(parent + "/" + children.get(0)); // the holder's node
                }
              } catch (KeeperException.NoNodeException e) {
                // nothing held
              } catch (Exception e) {
                throw new IllegalStateException(
                    "could not revoke lock '" + lockName + "' on " + ZK.server() + ": " + e, e);
              }
            });
  }
}
