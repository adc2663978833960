package dev.locksmith.spring.integration;

import dev.locksmith.zookeeper.AdapterZooKeeper;
import java.time.Duration;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** Leader election over ZooKeeper (2 s sessions): an auto-renewed lock lives as long as its holder's session. */
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

  @Override
  @Test
  @Disabled("lock-zookeeper defect, reported: with the server unreachable, a tryAcquire(200 ms) that fails withdraws its "
      + "attempt through ZooKeeperBackend$Attempt.abandon, a foreground getChildren in Curator's retry loop that blocks the "
      + "caller for many seconds, so the cut-off leader's initiator hangs in tryLock and is not revoked; the new leader "
      + "does take over with a higher token (etcd and Redis pass this test)")
  void pausedLeaderLosesLeadership() throws Exception {
    super.pausedLeaderLosesLeadership();
  }
}
