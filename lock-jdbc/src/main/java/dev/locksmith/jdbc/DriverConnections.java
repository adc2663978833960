package dev.locksmith.jdbc;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Properties;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * Connections straight from the driver, for the pool. The pool is handed this instead of the URL
 * and credentials, so that it never logs them (its configuration dump prints the URL and the driver
 * properties), and every failure it sees, keeps as a cause or logs has had the URL's secrets
 * scrubbed from its messages.
 */
final class DriverConnections implements DataSource {
  private final Driver driver;
  private final String url;
  private final Properties properties;
  private final Secrets secrets;
  private final String endpoint;
  private volatile int loginTimeoutSeconds;

  DriverConnections(
      Driver driver, String url, Properties properties, Secrets secrets, String endpoint) {
    this.driver = driver;
    this.url = url;
    this.properties = properties;
    this.secrets = secrets;
    this.endpoint = endpoint;
  }

  @Override
  public Connection getConnection() throws SQLException {
    Connection c;
    try {
      c = driver.connect(url, properties);
    } catch (SQLException e) {
      throw secrets.scrubbed(e);
    } catch (RuntimeException e) {
      throw secrets.scrubbed(new SQLException(e.toString(), "08001", e));
    }
    if (c == null) {
      throw new SQLException(
          "the driver " + driver.getClass().getName() + " does not accept the URL for " + endpoint,
          "08001");
    }
    return c;
  }

  /** Credentials come from the lock URI only; the pool never passes its own. */
  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    throw new SQLFeatureNotSupportedException("credentials are taken from the lock URI");
  }

  @Override
  public PrintWriter getLogWriter() {
    return null;
  }

  @Override
  public void setLogWriter(PrintWriter out) {
    // the driver's own timeouts and our logging apply
  }

  /**
   * Recorded only: the driver properties we pass bound the login (connectTimeout, loginTimeout,
   * socketTimeout).
   */
  @Override
  public void setLoginTimeout(int seconds) {
    loginTimeoutSeconds = seconds;
  }

  @Override
  public int getLoginTimeout() {
    return loginTimeoutSeconds;
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    throw new SQLFeatureNotSupportedException("no java.util.logging here");
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    if (iface.isInstance(this)) {
      return iface.cast(this);
    }
    throw new SQLException("not a wrapper of " + iface.getName());
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) {
    return iface.isInstance(this);
  }

  @Override
  public String toString() {
    return "connections from " + driver.getClass().getName() + " to " + endpoint;
  }
}
