package dev.locksmith.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.Locale;

/**
 * What differs between the databases: the DDL, how to read the database clock as epoch
 * milliseconds, which SQL states mean "no such table" and "duplicate key", and the driver
 * properties that bound connecting and every later socket read.
 */
enum Dialect {
  MYSQL(
      "jdbc:mysql",
      "mysql.sql",
      "com.mysql:mysql-connector-j",
      "CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000 AS SIGNED)",
      " LOCK IN SHARE MODE"),
  MARIADB(
      "jdbc:mariadb",
      "mysql.sql",
      "com.mysql:mysql-connector-j (or org.mariadb.jdbc:mariadb-java-client)",
      "CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000 AS SIGNED)",
      " LOCK IN SHARE MODE"),
  POSTGRESQL(
      "jdbc:postgresql",
      "postgresql.sql",
      "org.postgresql:postgresql",
      "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
      // each statement reads what committed before it (read committed), and at a stricter
      // isolation a row deleted meanwhile fails the transaction instead; a share lock would write
      // the floor row's header at every insert
      ""),
  H2(
      "jdbc:h2",
      "h2.sql",
      "com.h2database:h2",
      "CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000 AS BIGINT)",
      ""); // H2 reads committed rows per statement, and has no shared row lock

  final String scheme;
  private final String ddlResource;
  final String driverArtifact;

  /**
   * The database's clock as milliseconds since the epoch: expiry is judged by it, never by ours.
   */
  final String nowMillis;

  /**
   * Appended to a SELECT that must read the latest committed row and keep a concurrent writer of it
   * waiting until the transaction ends (the fence floor, read by an insert while a purge may raise
   * it).
   */
  final String shareLock;

  Dialect(
      String scheme,
      String ddlResource,
      String driverArtifact,
      String nowMillis,
      String shareLock) {
    this.scheme = scheme;
    this.ddlResource = ddlResource;
    this.driverArtifact = driverArtifact;
    this.nowMillis = nowMillis;
    this.shareLock = shareLock;
  }

  static Dialect forScheme(String scheme) {
    for (Dialect d : values()) {
      if (d.scheme.equalsIgnoreCase(scheme)) {
        return d;
      }
    }
    return null;
  }

  /**
   * @return the dialect of a database, from its product name; null if we have none for it
   */
  static Dialect forProduct(String productName) {
    String p = productName == null ? "" : productName.toLowerCase(Locale.ROOT);
    if (p.contains("mariadb")) {
      return MARIADB;
    }
    if (p.contains("mysql")) {
      return MYSQL;
    }
    if (p.contains("postgresql")) {
      return POSTGRESQL;
    }
    if (p.equals("h2")) {
      return H2;
    }
    return null;
  }

  boolean isMysqlFamily() {
    return this == MYSQL || this == MARIADB;
  }

  /**
   * @param table the checked table name
   * @return the CREATE TABLE statement, as shipped in this module's resources
   */
  String ddl(String table) {
    return ddl(ddlResource, table);
  }

  /**
   * @param queueTable the wait queue's table name ({@link LeaseTable#queueTable})
   * @return the CREATE TABLE statement of the wait queue, as shipped in this module's resources
   */
  String queueDdl(String queueTable) {
    return ddl(ddlResource.replace(".sql", "-queue.sql"), queueTable);
  }

  /**
   * @param part the table's part of the resource name: {@code shared} or {@code shared-leases}
   *     ({@link SharedTable})
   * @param table that table's checked name
   * @return its CREATE TABLE statement, as shipped in this module's resources
   */
  String partDdl(String part, String table) {
    return ddl(ddlResource.replace(".sql", "-" + part + ".sql"), table);
  }

  private static String ddl(String resource, String table) {
    try (InputStream in = Dialect.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("resource " + resource + " is missing from lock-jdbc");
      }
      StringBuilder sql = new StringBuilder();
      for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        if (!line.startsWith("--")) {
          sql.append(line).append('\n');
        }
      }
      return sql.toString().trim().replace("${table}", table);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * @return whether the failure says the table does not exist
   */
  boolean isMissingTable(SQLException e) {
    String state = e.getSQLState();
    if (state == null) {
      return false;
    }
    switch (this) {
      case POSTGRESQL:
        return state.equals("42P01");
      case H2:
        return state.equals("42S02") || state.equals("42S04") || state.equals("42104");
      default:
        return state.equals("42S02") || e.getErrorCode() == 1146;
    }
  }

  /**
   * @return whether the failure is a duplicate key: another acquirer inserted the row first
   */
  static boolean isDuplicateKey(SQLException e) {
    String state = e.getSQLState();
    return state != null
        && (state.equals("23505") || state.equals("23000") || e.getErrorCode() == 1062);
  }

  /**
   * @return whether the transaction was chosen as a deadlock victim or failed to serialize: retry
   */
  static boolean isRetryable(SQLException e) {
    String state = e.getSQLState();
    return state != null
        && (state.equals("40001")
            || state.equals("40P01")
            || e.getErrorCode() == 1213
            || e.getErrorCode() == 1205);
  }
}
