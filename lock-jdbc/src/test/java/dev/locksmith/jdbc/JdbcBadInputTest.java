package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Bad configuration and unreachable databases: clear errors, secrets redacted, nothing left open.
 */
class JdbcBadInputTest {
  private static String h2() {
    return "jdbc:h2:mem:bad-input-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
  }

  @Test
  void tableNameThatIsNotAnIdentifierIsRefused() {
    for (String bad :
        List.of("locks; DROP TABLE users", "1locks", "lo cks", "a.b.c", "\"locks\"", "")) {
      assertThatThrownBy(
              () ->
                  Locks.connect(
                      h2()
                          + "?table="
                          + java.net.URLEncoder.encode(bad, java.nio.charset.StandardCharsets.UTF_8)
                              .replace("+", "%20")))
          .isInstanceOf(LockConfigurationException.class)
          .hasMessageContaining("`table`")
          .hasMessageContaining("'" + bad + "'")
          .hasMessageContaining("plain identifier");
    }
  }

  @Test
  void everyProblemIsReportedAtOnce() {
    assertThatThrownBy(
            () ->
                Locks.connect(
                    h2() + "?table=x-y&pool-size=0&io-timeout=soon&create-table=maybe&Pool_Size=3"))
        .isInstanceOfSatisfying(
            LockConfigurationException.class, e -> assertThat(e.problems()).hasSize(5))
        .hasMessageContaining("`table` was 'x-y'")
        .hasMessageContaining("`pool-size` was '0' but it must be a whole number from 1 to 200")
        .hasMessageContaining("`io-timeout` was 'soon'")
        .hasMessageContaining("`create-table` was 'maybe' but it must be true or false")
        .hasMessageContaining("did you mean `pool-size`");
  }

  @Test
  void missingTableWithoutCreateShowsTheDdlToRun() {
    assertThatThrownBy(() -> Locks.connect(h2() + "?table=app_locks&create-table=false"))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("`table` was 'app_locks'")
        .hasMessageContaining("CREATE TABLE IF NOT EXISTS app_locks")
        .hasMessageContaining("fence")
        .hasMessageContaining("expires_at");
  }

  @Test
  void tableIsCreatedOnFirstUseAndNamesAreData() throws Exception {
    String url = h2();
    try (Connection keep = DriverManager.getConnection(url, "sa", "");
        LockClient client = Locks.connect(url + "?user=sa&table=app_locks&lease=5s")) {
      String evil = "x'); DELETE FROM app_locks; --";
      try (Lease lease = client.lock(evil).acquire(Duration.ofSeconds(5))) {
        try (ResultSet rs =
            keep.createStatement()
                .executeQuery("SELECT name, owner, fence FROM app_locks WHERE owner IS NOT NULL")) {
          // the one held row; the table also has the purge's floor row, whose owner is NULL
          assertThat(rs.next()).isTrue();
          assertThat(rs.getString(1)).isEqualTo(evil);
          assertThat(rs.getString(2)).isNotBlank();
          assertThat(rs.getLong(3)).isEqualTo(lease.fencingToken());
          assertThat(rs.next()).isFalse();
        }
      }
    }
  }

  @Test
  void driverPropertiesArePassedThroughButOurOptionsAreChecked() {
    assertThatThrownBy(() -> Locks.connect(h2() + "?bad%20key=1"))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("`bad key`");
  }

  @Test
  void uriWithoutDatabaseIsRefused() {
    assertThatThrownBy(() -> Locks.connect("jdbc:postgresql:"))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("names no database")
        .hasMessageContaining("jdbc:postgresql://localhost:5432/app");
  }

  @Test
  void refusedPortFailsNamingHostAndPortWithPasswordRedacted() {
    int port = freePort();
    long start = System.nanoTime();
    assertThatThrownBy(
            () ->
                Locks.connect(
                    "jdbc:postgresql://127.0.0.1:"
                        + port
                        + "/app?user=app&password=hunter2&connect-timeout=1s"))
        .isInstanceOf(BackendUnavailableException.class)
        .hasMessageContaining("127.0.0.1:" + port)
        .hasMessageContaining("as user 'app'")
        .hasMessageNotContaining("hunter2");
    assertThatThrownBy(
            () ->
                Locks.connect(
                    "jdbc:mysql://root:hunter2@127.0.0.1:" + port + "/app?connect-timeout=1s"))
        .isInstanceOf(BackendUnavailableException.class)
        .hasMessageContaining("127.0.0.1:" + port)
        .hasMessageNotContaining("hunter2");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
  }

  @Test
  void aPortThatAcceptsButNeverAnswersFailsWithinTheConnectTimeout() throws Exception {
    try (ServerSocket silent = new ServerSocket()) {
      silent.bind(new InetSocketAddress("127.0.0.1", 0));
      List<Socket> accepted = new ArrayList<>();
      Thread acceptor =
          new Thread(
              () -> {
                try {
                  while (true) {
                    accepted.add(
                        silent.accept()); // accept and say nothing, like a wrong service would
                  }
                } catch (IOException e) {
                  // closed at the end of the test
                }
              });
      acceptor.setDaemon(true);
      acceptor.start();
      int port = silent.getLocalPort();
      for (String scheme : List.of("jdbc:postgresql", "jdbc:mysql")) {
        long start = System.nanoTime();
        assertThatThrownBy(
                () ->
                    Locks.connect(
                        scheme
                            + "://127.0.0.1:"
                            + port
                            + "/app?user=u&password=hunter2&connect-timeout=1s"))
            .isInstanceOf(BackendUnavailableException.class)
            .hasMessageContaining("127.0.0.1:" + port)
            .hasMessageContaining("within 1s")
            .hasMessageNotContaining("hunter2");
        // a bound, not a benchmark: about the connect timeout (1s), never the 5s default
        assertThat(Duration.ofNanos(System.nanoTime() - start))
            .as(scheme)
            .isLessThan(Duration.ofMillis(3000));
      }
      for (Socket s : accepted) {
        s.close();
      }
    }
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
