package dev.locksmith.shedlock;

import dev.locksmith.jdbc.DatabaseExtension;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.extension.RegisterExtension;

/** ShedLock's provider kit and this adapter's rules on PostgreSQL. */
@DisplayName("ShedLock over PostgreSQL")
class PostgresShedLockIT extends ShedLockContract {
  @RegisterExtension static final DatabaseExtension DATABASE = DatabaseExtension.postgres();

  @Override
  protected String uri() throws Exception {
    return DATABASE.uri();
  }
}
