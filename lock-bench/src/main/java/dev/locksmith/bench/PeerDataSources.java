package dev.locksmith.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The pooled DataSource and tables that the Spring Integration and ShedLock JDBC locks use in the
 * jdbc-peers section.
 */
final class PeerDataSources {
  private PeerDataSources() {}

  /**
   * @return a small Hikari pool on {@code url} (one per client, as each application would have its
   *     own)
   */
  static HikariDataSource pool(String url) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setMaximumPoolSize(4);
    config.setMinimumIdle(1);
    config.setPoolName("bench-peer");
    return new HikariDataSource(config);
  }

  /**
   * @return whether {@code url} is a PostgreSQL one (else MariaDB/MySQL)
   */
  static boolean postgres(String url) {
    return url.startsWith("jdbc:postgresql:");
  }

  /**
   * Creates Spring Integration's INT_LOCK table from the schema the spring-integration-jdbc jar
   * ships, if missing.
   */
  static void createIntLock(HikariDataSource ds, boolean postgres)
      throws SQLException, IOException {
    String resource =
        "org/springframework/integration/jdbc/schema-"
            + (postgres ? "postgresql" : "mysql")
            + ".sql";
    String schema;
    try (InputStream in = PeerDataSources.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new IOException(
            "spring-integration-jdbc's " + resource + " is not on the class path");
      }
      schema = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    for (String statement : schema.split(";")) {
      String sql = statement.replaceAll("(?m)^--.*$", "").strip();
      if (sql.matches("(?is)CREATE TABLE INT_LOCK\\s*\\(.*")) {
        execute(ds, sql.replaceFirst("(?i)CREATE TABLE", "CREATE TABLE IF NOT EXISTS"));
        return;
      }
    }
    throw new IOException(resource + " has no CREATE TABLE INT_LOCK");
  }

  /** Creates ShedLock's {@code shedlock} table (the layout its README gives), if missing. */
  static void createShedlock(HikariDataSource ds, boolean postgres) throws SQLException {
    String ts = postgres ? "TIMESTAMP" : "TIMESTAMP(3)";
    execute(
        ds,
        "CREATE TABLE IF NOT EXISTS shedlock (name VARCHAR(64) NOT NULL, lock_until "
            + ts
            + " NOT NULL, locked_at "
            + ts
            + " NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))");
  }

  private static void execute(HikariDataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
