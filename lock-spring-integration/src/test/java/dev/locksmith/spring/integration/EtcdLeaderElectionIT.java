package dev.locksmith.spring.integration;

import dev.locksmith.etcd.EtcdServerExtension;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Leader election over etcd: the client's etcd lease (TTL 2 s) carries its locks, kept alive while
 * it lives.
 */
@DisplayName("Spring Integration leader election over etcd")
class EtcdLeaderElectionIT extends LeaderElectionContract {
  @RegisterExtension
  static final EtcdServerExtension ETCD = EtcdServerExtension.sharedOneMember("adapters");

  @Override
  protected String uri() throws Exception {
    return ETCD.uri()
        + "?ttl=2s&request-timeout=2s"; // a silent client's locks go 2 s after its last keep-alive
  }

  @Override
  protected Duration expirySlack() {
    return Duration.ofSeconds(3); // the client's 2 s etcd lease TTL, counted in whole seconds
  }
}
