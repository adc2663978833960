package dev.locksmith.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import dev.locksmith.tck.ServerProcess;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Options, messages and connection failures, without an etcd server. */
class EtcdLockProviderTest {

  @Test
  void everyBadOptionIsReportedAtOnceBeforeConnecting() {
    // Port 1 would refuse the connection: the config errors must come first.
    String uri =
        "etcd://someone@127.0.0.1:1?ttl=1500ms&connect-timeout=0s&request-timeout=soon&tls=maybe"
            + "&tls-ca=/no/such/ca.pem&tls-cert=/no/such/cert.pem";
    assertThatThrownBy(() -> Locks.connect(uri))
        .isInstanceOf(LockConfigurationException.class)
        .satisfies(
            e -> {
              List<String> problems = ((LockConfigurationException) e).problems();
              assertThat(String.join("\n", problems))
                  .contains("`ttl` was '1500ms' but it must be whole seconds")
                  .contains("`connect-timeout` was '0s' but it must be a duration from 100ms to 5m")
                  .contains("`request-timeout` was 'soon'")
                  .contains("`tls` was 'maybe' but it must be true or false")
                  .contains(
                      "`tls-ca` was '/no/such/ca.pem' but it must be the path of a readable PEM"
                          + " file")
                  .contains("`tls-cert` was '/no/such/cert.pem'")
                  .contains("`tls-key` is missing")
                  .contains("user 'someone' has no password");
            });
  }

  @Test
  void aUriWithoutEndpointsIsRejected() {
    assertThatThrownBy(() -> Locks.connect("etcd:"))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("`uri` was 'etcd:'")
        .hasMessageContaining("etcd://localhost:2379");
  }

  @Test
  void unknownOptionsAreNamed() {
    assertThatThrownBy(() -> Locks.connect("etcd://127.0.0.1:1?tll=5s"))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("tll");
  }

  @Test
  void anUnreachableServerFailsWithinTheConnectTimeoutNamingItAndHidingThePassword() {
    int port = ServerProcess.freePort(); // nothing listens there
    String uri = "etcd://root:s3cret-pw@127.0.0.1:" + port + "?connect-timeout=1s";
    assertTimeoutPreemptively(
        Duration.ofSeconds(20),
        () ->
            assertThatThrownBy(() -> Locks.connect(uri))
                .isInstanceOf(BackendUnavailableException.class)
                .hasMessageContaining("127.0.0.1:" + port)
                .hasMessageContaining("user 'root'")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("s3cret-pw")));
  }

  @Test
  void aNonServerOnThePortFailsClearly() throws Exception {
    try (ServerSocket junk = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Thread answerer =
          new Thread(
              () -> {
                while (!junk.isClosed()) {
                  try (Socket s = junk.accept();
                      OutputStream out = s.getOutputStream()) {
                    out.write("HTTP/1.0 400 not etcd\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                  } catch (Exception e) {
                    return;
                  }
                }
              });
      answerer.setDaemon(true);
      answerer.start();
      String uri = "etcd://127.0.0.1:" + junk.getLocalPort() + "?connect-timeout=1s";
      assertTimeoutPreemptively(
          Duration.ofSeconds(20),
          () ->
              assertThatThrownBy(() -> Locks.connect(uri))
                  .isInstanceOf(BackendUnavailableException.class)
                  .hasMessageContaining("127.0.0.1:" + junk.getLocalPort()));
    }
  }

  @Test
  void lockNamesEncodeToDistinctSingleSegments() {
    List<String> names =
        List.of("a/b", "a%2Fb", "a b", "ключ 鍵 🔒", "a", "a/", "*?[]{}", "x".repeat(255));
    Set<String> encoded = new HashSet<>();
    for (String n : names) {
      String e = KeyNames.encode(n);
      assertThat(e).doesNotContain("/");
      encoded.add(e);
    }
    assertThat(encoded).hasSameSizeAs(names);
    assertThat(KeyNames.lockPrefix("/locksmith", "a/b c")).isEqualTo("/locksmith/a%2Fb%20c/");
  }

  @Test
  void guaranteesMatchFaultsMdColumnEtcd() {
    var g = EtcdBackend.GUARANTEES;
    assertThat(g.features())
        .contains(
            Feature.FENCING,
            Feature.FIFO_FAIRNESS,
            Feature.RENEWAL,
            Feature.LOSS_DETECTION,
            Feature.NOTIFIED_WAKEUP,
            Feature.REENTRANCY,
            Feature.SHARED_ACROSS_PROCESSES);
    for (Fault f : Fault.values()) {
      assertThat(g.note(f)).as("note for %s", f).isNotBlank();
    }
  }
}
