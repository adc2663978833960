package dev.locksmith.shedlock;

import org.junit.jupiter.api.DisplayName;

/** ShedLock's provider kit and this adapter's rules on H2. */
@DisplayName("ShedLock over H2")
class H2ShedLockIT extends ShedLockContract {
  @Override
  protected String uri() throws Exception {
    return dev.locksmith.jdbc.AdapterDatabases.h2();
  }
}
