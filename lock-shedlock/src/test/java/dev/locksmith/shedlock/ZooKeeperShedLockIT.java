package dev.locksmith.shedlock;

import dev.locksmith.zookeeper.ZooKeeperServerExtension;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.extension.RegisterExtension;

/** ShedLock's provider kit and this adapter's rules on ZooKeeper. */
@DisplayName("ShedLock over ZooKeeper")
class ZooKeeperShedLockIT extends ShedLockContract {
  @RegisterExtension
  static final ZooKeeperServerExtension ZK =
      ZooKeeperServerExtension.sharedOwnJvm("adapters-zookeeper");

  @Override
  protected String uri() throws Exception {
    return ZK.uri() + "?session-timeout=2000ms&connection-timeout=2s";
  }

  @Override
  protected Duration expirySlack() {
    return Duration.ofSeconds(
        2); // rule 17.9: a session backend frees an unrenewed lease within 2 s of its expiry
  }
}
