package dev.locksmith.shedlock;

import org.junit.jupiter.api.DisplayName;

/** ShedLock's provider kit and this adapter's rules on PostgreSQL. */
@DisplayName("ShedLock over PostgreSQL")
class PostgresShedLockIT extends ShedLockContract {
  @Override
  protected String uri() throws Exception {
    return dev.locksmith.jdbc.AdapterDatabases.postgres();
  }
}
