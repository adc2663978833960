package dev.locksmith.shedlock;

import org.junit.jupiter.api.DisplayName;

/** ShedLock's provider kit and this adapter's rules on local: (in-process). */
@DisplayName("ShedLock over local: (in-process)")
class LocalShedLockIT extends ShedLockContract {
  @Override
  protected String uri() throws Exception {
    return "local:shedlock";
  }
}
