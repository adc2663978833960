package dev.locksmith.shedlock;

import org.junit.jupiter.api.DisplayName;

/** ShedLock's provider kit and this adapter's rules on MariaDB as MySQL (jdbc:mysql:). */
@DisplayName("ShedLock over MariaDB as MySQL (jdbc:mysql:)")
class MySqlShedLockIT extends ShedLockContract {
  @Override
  protected String uri() throws Exception {
    return dev.locksmith.jdbc.AdapterDatabases.mysql();
  }
}
