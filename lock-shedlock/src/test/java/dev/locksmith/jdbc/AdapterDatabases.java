package dev.locksmith.jdbc;

/**
 * The databases of lock-jdbc's test fixture (its test-jar), started once per JVM the way that
 * module's own tests start them, as lock URIs for the adapter tests.
 */
public final class AdapterDatabases {
  private AdapterDatabases() {}

  /**
   * @return jdbc:mariadb://… of a MariaDB server of the test run
   */
  public static String mariadb() throws Exception {
    return TestDatabases.mariadb().uri;
  }

  /**
   * @return the same MariaDB server as jdbc:mysql://… (MySQL's driver and dialect name)
   */
  public static String mysql() throws Exception {
    return TestDatabases.mariadb().uri.replace("jdbc:mariadb:", "jdbc:mysql:");
  }

  /**
   * @return jdbc:postgresql://… of a PostgreSQL server of the test run
   */
  public static String postgres() throws Exception {
    return TestDatabases.postgres().uri;
  }

  /**
   * @return jdbc:h2:… of a file database of the test run
   */
  public static String h2() throws Exception {
    return TestDatabases.h2().uri;
  }
}
