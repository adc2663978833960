package dev.locksmith.spring.integration;

import dev.locksmith.zookeeper.ZooKeeperServerExtension;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Leader election over ZooKeeper (2 s sessions): an auto-renewed lock lives as long as its holder's
 * session.
 */
@DisplayName("Spring Integration leader election over ZooKeeper")
class ZooKeeperLeaderElectionIT extends LeaderElectionContract {
  @RegisterExtension
  static final ZooKeeperServerExtension ZK =
      ZooKeeperServerExtension.sharedOwnJvm("adapters-zookeeper");

  @Override
  protected String uri() {
    return ZK.uri() + "?session-timeout=2000ms&connection-timeout=2s";
  }

  @Override
  protected Duration expirySlack() {
    return Duration.ofSeconds(3); // the 2 s session timeout, and the server's session tick
  }
}
