package dev.locksmith.shedlock;

import dev.locksmith.jdbc.DatabaseExtension;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.extension.RegisterExtension;

/** ShedLock's provider kit and this adapter's rules on MariaDB (jdbc:mariadb:). */
@DisplayName("ShedLock over MariaDB (jdbc:mariadb:)")
class MariaDbShedLockIT extends ShedLockContract {
  @RegisterExtension static final DatabaseExtension DATABASE = DatabaseExtension.mariadb();

  @Override
  protected String uri() throws Exception {
    return DATABASE.uri();
  }
}
