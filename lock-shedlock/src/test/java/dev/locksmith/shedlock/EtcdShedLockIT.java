package dev.locksmith.shedlock;

import java.time.Duration;
import org.junit.jupiter.api.DisplayName;

/** ShedLock's provider kit and this adapter's rules on etcd. */
@DisplayName("ShedLock over etcd")
class EtcdShedLockIT extends ShedLockContract {
  @Override
  protected String uri() throws Exception {
    return dev.locksmith.etcd.AdapterEtcd.uri();
  }

  @Override
  protected Duration expirySlack() {
    return Duration.ofSeconds(
        2); // rule 17.9: a session backend frees an unrenewed lease within 2 s of its expiry
  }
}
