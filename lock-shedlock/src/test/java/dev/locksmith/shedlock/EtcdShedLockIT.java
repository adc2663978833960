package dev.locksmith.shedlock;

import dev.locksmith.etcd.EtcdServerExtension;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.extension.RegisterExtension;

/** ShedLock's provider kit and this adapter's rules on etcd. */
@DisplayName("ShedLock over etcd")
class EtcdShedLockIT extends ShedLockContract {
  @RegisterExtension
  static final EtcdServerExtension ETCD = EtcdServerExtension.sharedOneMember("adapters");

  @Override
  protected String uri() throws Exception {
    return ETCD.uri();
  }

  /**
   * A cold JVM starting jetcd beside another build once took over the default 5 s to connect (the
   * child exited before reporting): what this test measures starts after it has locked.
   */
  @Override
  protected String childUri() {
    return ETCD.uri() + "?connect-timeout=30s&request-timeout=30s";
  }

  @Override
  protected Duration expirySlack() {
    return Duration.ofSeconds(
        2); // rule 17.9: a session backend frees an unrenewed lease within 2 s of its expiry
  }
}
