package dev.locksmith.jdbc;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real database for a test class: MariaDB, PostgreSQL (each a server on a free loopback port) or
 * an H2 file database, from {@link TestDatabases}, which starts each once per test JVM with a fresh
 * data directory and stops it when the JVM exits; the first class that registers one starts it.
 * Register it on a static field:
 *
 * <pre>{@code
 * @RegisterExtension static final DatabaseExtension MARIADB = DatabaseExtension.mariadb();
 * }</pre>
 *
 * A missing server binary fails the class with how to install it; it is never skipped.
 */
public final class DatabaseExtension implements BeforeAllCallback {
  /** Starts or finds a database of the test JVM. */
  private interface Starter {
    TestDatabases.Db get() throws Exception;
  }

  private final Starter starter;
  private volatile TestDatabases.Db db;

  private DatabaseExtension(Starter starter) {
    this.starter = starter;
  }

  /**
   * @return MariaDB (mariadbd), database {@code locks}, user root without a password
   */
  public static DatabaseExtension mariadb() {
    return new DatabaseExtension(TestDatabases::mariadb);
  }

  /**
   * @return a MariaDB server of its own whose clock the test can move forward ({@link
   *     TestDatabases.Db#jumpClock})
   */
  public static DatabaseExtension mariadbWithFakeClock() {
    return new DatabaseExtension(TestDatabases::mariadbWithFakeClock);
  }

  /**
   * @return PostgreSQL, database {@code postgres}, user postgres without a password
   */
  public static DatabaseExtension postgres() {
    return new DatabaseExtension(TestDatabases::postgres);
  }

  /**
   * @return an H2 file database served to other processes (AUTO_SERVER), user sa
   */
  public static DatabaseExtension h2() {
    return new DatabaseExtension(TestDatabases::h2);
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    db = starter.get();
  }

  /**
   * @return the lock URI, with the user but no other option: {@code jdbc:mariadb://…?user=root},
   *     {@code jdbc:postgresql://…?user=postgres} or {@code jdbc:h2:…?user=sa}
   */
  public String uri() {
    return db().uri;
  }

  /**
   * @return a JDBC URL for the test's own connections (MariaDB's through {@code jdbc:mysql:})
   */
  public String jdbcUrl() {
    return db().adminUrl;
  }

  /**
   * @return the user of {@link #jdbcUrl()}, whose password is empty
   */
  public String user() {
    return db().user;
  }

  /**
   * @return the database, for hurting and inspecting it
   */
  TestDatabases.Db db() {
    TestDatabases.Db started = db;
    if (started == null) {
      throw new IllegalStateException("the database starts in the class's BeforeAll");
    }
    return started;
  }
}
