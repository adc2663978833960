package dev.locksmith.reactor;

import dev.locksmith.jdbc.DatabaseExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link ReactiveLocks} on a real PostgreSQL server: the whole contract under BlockHound. */
class PostgresReactiveLocksIT extends ReactiveLocksContract {
  @RegisterExtension static final DatabaseExtension POSTGRES = DatabaseExtension.postgres();

  @Override
  String uri() {
    return POSTGRES.uri();
  }
}
