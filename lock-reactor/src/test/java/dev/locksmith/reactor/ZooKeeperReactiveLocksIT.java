package dev.locksmith.reactor;

import dev.locksmith.zookeeper.ZooKeeperServerExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link ReactiveLocks} on a real ZooKeeper server (in a JVM of its own), where an acquire queues a
 * node and waits for a watch, and a release deletes it: the whole contract under BlockHound.
 */
class ZooKeeperReactiveLocksIT extends ReactiveLocksContract {
  @RegisterExtension
  static final ZooKeeperServerExtension ZOOKEEPER = ZooKeeperServerExtension.ownJvm("reactor");

  @Override
  String uri() {
    return ZOOKEEPER.uri();
  }
}
