package dev.locksmith.spring.integration;

import dev.locksmith.zookeeper.AdapterZooKeeper;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;

/**
 * Leader election over ZooKeeper (2 s sessions): an auto-renewed lock lives as long as its holder's
 * session.
 */
@DisplayName("Spring Integration leader election over ZooKeeper")
class ZooKeeperLeaderElectionIT extends LeaderElectionContract {
  @Override
  protected String uri() {
    return AdapterZooKeeper.uri();
  }

  @Override
  protected Duration expirySlack() {
    return Duration.ofSeconds(3); // the 2 s session timeout, and the server's session tick
  }
}
