package dev.locksmith.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import dev.locksmith.tck.ServerProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** etcd serving TLS with a certificate from a throw-away CA that openssl makes for the test. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EtcdTlsIT {
  private static Path certs;

  @RegisterExtension
  static final EtcdServerExtension ETCD =
      EtcdServerExtension.oneMember("tls").https(EtcdTlsIT::makeCertificates);

  /**
   * @return etcd's flags for the server certificate and key that a throw-away CA signed
   */
  private static String[] makeCertificates() throws Exception {
    Path openssl = ServerProcess.requireBinary("openssl", "apt-get install openssl");
    certs = Files.createTempDirectory("locksmith-etcd-tls-");
    Files.writeString(
        certs.resolve("san.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
        StandardCharsets.US_ASCII);
    run(
        openssl,
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "1",
        "-subj",
        "/CN=locksmith-test-ca");
    run(
        openssl,
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost");
    run(
        openssl,
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "1",
        "-extfile",
        "san.ext");
    return new String[] {
      "--cert-file",
      certs.resolve("server.pem").toString(),
      "--key-file",
      certs.resolve("server.key").toString()
    };
  }

  private static void run(Path openssl, String... args) throws IOException, InterruptedException {
    List<String> cmd = new java.util.ArrayList<>(List.of(openssl.toString()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).directory(certs.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IllegalStateException("openssl " + String.join(" ", args) + " failed:\n" + out);
    }
  }

  @AfterAll
  static void stopTlsEtcd() throws Exception {
    if (certs != null) {
      try (Stream<Path> files = Files.walk(certs)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  @Test
  void tlsWithTheServersCaWorks() {
    try (LockClient client =
        Locks.connect(
            "etcd://"
                + ETCD.hosts()
                + "?tls-ca="
                + certs.resolve("ca.pem")
                + "&connect-timeout=10s")) {
      Lease lease = client.lock("over-tls").acquire(Duration.ofSeconds(10));
      assertThat(lease.fencingToken()).isPositive();
      assertThat(lease.release()).isTrue();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void plainTextAgainstATlsServerFailsClearly() {
    assertTimeoutPreemptively(
        Duration.ofSeconds(20),
        () ->
            assertThatThrownBy(
                    () -> Locks.connect("etcd://" + ETCD.hosts() + "?connect-timeout=1s"))
                .isInstanceOf(BackendUnavailableException.class)
                .hasMessageContaining(ETCD.hosts())
                .hasMessageContaining("`tls` (false)"));
  }

  @Test
  void tlsWithoutTrustingTheServersCaFailsClearly() {
    assertTimeoutPreemptively(
        Duration.ofSeconds(20),
        () ->
            assertThatThrownBy(
                    () -> Locks.connect("etcd://" + ETCD.hosts() + "?tls=true&connect-timeout=1s"))
                .isInstanceOf(BackendUnavailableException.class)
                .hasMessageContaining(ETCD.hosts()));
  }

  @Test
  void aFileThatIsNotPemIsAConfigurationProblem() {
    assertThatThrownBy(
            () -> Locks.connect("etcd://" + ETCD.hosts() + "?tls-ca=" + certs.resolve("san.ext")))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("tls-ca");
  }
}
