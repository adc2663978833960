package dev.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Locks;
import dev.locksmith.tck.ServerProcess;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Servers that cannot be used: each fails at connect with a {@link BackendUnavailableException}
 * naming host:port, with the password redacted, within the connect timeout, leaving nothing open.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedisBadInputIT {
  private static final String SECRET = "s3cr3t-pw";
  private static RedisServer guarded;

  @BeforeAll
  static void startServer() {
    guarded = RedisServer.start("guarded", SECRET);
  }

  @AfterAll
  static void stopServer() {
    guarded.close();
  }

  private static long connectFailing(String uri, String... expected) {
    long start = System.nanoTime();
    assertThatThrownBy(() -> Locks.connect(uri).close())
        .isInstanceOf(BackendUnavailableException.class)
        .satisfies(e -> {
          for (String s : expected) {
            assertThat(e.getMessage()).contains(s);
          }
          assertThat(e.getMessage()).doesNotContain(SECRET).doesNotContain("wrong-pw");
        });
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
  }

  @Test
  void wrongPassword() {
    long ms = connectFailing("redis://default:wrong-pw@127.0.0.1:" + guarded.port() + "?connect-timeout=1s",
        "127.0.0.1:" + guarded.port(), "credentials", "****");
    assertThat(ms).isLessThan(1500);
  }

  @Test
  void missingPassword() {
    connectFailing("redis://127.0.0.1:" + guarded.port(), "127.0.0.1:" + guarded.port());
  }

  @Test
  void rightPasswordConnects() {
    Locks.connect(guarded.uri()).close();
  }

  @Test
  void tlsToAPlainPort() {
    long ms = connectFailing("rediss://default:" + SECRET + "@127.0.0.1:" + guarded.port() + "?connect-timeout=1s",
        "127.0.0.1:" + guarded.port(), "TLS");
    // the TCP connect, the TLS handshake and the PING are each bounded by the connect timeout
    assertThat(ms).isLessThan(3500);
  }

  @Test
  void nothingListening() {
    int port = ServerProcess.freePort();
    long ms = connectFailing("redis://127.0.0.1:" + port + "?connect-timeout=1s", "127.0.0.1:" + port, "refused");
    assertThat(ms).isLessThan(1500);
  }

  @Test
  void unknownHost() {
    connectFailing("redis://no-such-host.invalid:6379?connect-timeout=1s", "no-such-host.invalid:6379");
  }

  @Test
  void aServerThatWritesGarbage() throws Exception {
    try (ServerSocket fake = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      CompletableFuture<Boolean> closedByClient = serve(fake, "HTTP/1.1 400 Bad Request\r\n\r\n");
      long ms = connectFailing("redis://:" + SECRET + "@127.0.0.1:" + fake.getLocalPort() + "?connect-timeout=1s",
          "127.0.0.1:" + fake.getLocalPort(), "Redis");
      assertThat(ms).isLessThan(1500);
      assertThat(closedByClient.get(5, TimeUnit.SECONDS)).as("the client closed its connection").isTrue();
    }
  }

  @Test
  void aServerThatNeverAnswers() throws Exception {
    try (ServerSocket fake = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      CompletableFuture<Boolean> closedByClient = serve(fake, "");
      long ms = connectFailing("redis://127.0.0.1:" + fake.getLocalPort() + "?connect-timeout=500ms&command-timeout=30s",
          "127.0.0.1:" + fake.getLocalPort(), "did not answer within 500ms");
      assertThat(ms).as("failed within the connect timeout, not the command timeout").isLessThan(1500);
      assertThat(closedByClient.get(5, TimeUnit.SECONDS)).as("the client closed its connection").isTrue();
    }
  }

  /** Accepts one connection, writes {@code reply}, and completes true when the client closes it. */
  private static CompletableFuture<Boolean> serve(ServerSocket fake, String reply) {
    return CompletableFuture.supplyAsync(() -> {
      try (Socket s = fake.accept()) {
        OutputStream out = s.getOutputStream();
        out.write(reply.getBytes(StandardCharsets.US_ASCII));
        out.flush();
        InputStream in = s.getInputStream();
        byte[] buf = new byte[4096];
        while (in.read(buf) >= 0) {
          // drain what the client sends until it closes
        }
        return true;
      } catch (IOException e) {
        return true; // reset by the client: closed as well
      }
    });
  }
}
