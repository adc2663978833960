package dev.locksmith.shedlock;

import dev.locksmith.jdbc.DatabaseExtension;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.extension.RegisterExtension;

/** ShedLock's provider kit and this adapter's rules on MariaDB as MySQL (jdbc:mysql:). */
@DisplayName("ShedLock over MariaDB as MySQL (jdbc:mysql:)")
class MySqlShedLockIT extends ShedLockContract {
  @RegisterExtension static final DatabaseExtension DATABASE = DatabaseExtension.mariadb();

  @Override
  protected String uri() throws Exception {
    return DATABASE.uri().replace("jdbc:mariadb:", "jdbc:mysql:");
  }
}
