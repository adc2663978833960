package dev.locksmith.shedlock;

import org.junit.jupiter.api.DisplayName;

/** ShedLock's provider kit and this adapter's rules on MariaDB (jdbc:mariadb:). */
@DisplayName("ShedLock over MariaDB (jdbc:mariadb:)")
class MariaDbShedLockIT extends ShedLockContract {
  @Override
  protected String uri() throws Exception {
    return dev.locksmith.jdbc.AdapterDatabases.mariadb();
  }
}
