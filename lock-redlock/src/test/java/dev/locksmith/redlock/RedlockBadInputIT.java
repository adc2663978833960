package dev.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.redis.RedisServer;
import dev.locksmith.tck.ServerProcess;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Servers that cannot be used fail {@code Locks.connect} with a {@link BackendUnavailableException}
 * naming each of them, password redacted, within the connect timeout.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedlockBadInputIT {
  private static final String SECRET = "s3cr3t-pw";

  @Test
  void nothingListeningAnywhere() {
    List<Integer> ports = List.of(ServerProcess.freePort(), ServerProcess.freePort(), ServerProcess.freePort());
    String uri = "redlock://:" + SECRET + "@" + ports.stream().map(p -> "127.0.0.1:" + p).collect(Collectors.joining(","))
        + "?connect-timeout=1s";
    long start = System.nanoTime();
    assertThatThrownBy(() -> Locks.connect(uri).close())
        .isInstanceOf(BackendUnavailableException.class)
        .hasMessageContaining("only 0 of the 3 Redis servers")
        .hasMessageContaining("127.0.0.1:" + ports.get(0)).hasMessageContaining("127.0.0.1:" + ports.get(1))
        .hasMessageContaining("127.0.0.1:" + ports.get(2)).hasMessageContaining("refused")
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain(SECRET).contains("****"));
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("ms to fail").isLessThan(2500);
  }

  @Test
  void wrongPasswordOnEveryServerAndTheRightOne() {
    List<RedisServer> guarded = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        guarded.add(RedisServer.start("guarded-" + i, SECRET));
      }
      String hosts = guarded.stream().map(s -> "127.0.0.1:" + s.port()).collect(Collectors.joining(","));
      assertThatThrownBy(() -> Locks.connect("redlock://default:wrong-pw@" + hosts + "?connect-timeout=1s").close())
          .isInstanceOf(BackendUnavailableException.class)
          .hasMessageContaining("credentials")
          .hasMessageContaining("127.0.0.1:" + guarded.get(0).port()).hasMessageContaining("127.0.0.1:" + guarded.get(2).port())
          .satisfies(e -> assertThat(e.getMessage()).doesNotContain("wrong-pw").doesNotContain(SECRET));
      try (LockClient client = Locks.connect("redlock://default:" + SECRET + "@" + hosts)) {
        assertThat(client.lock("guarded").tryAcquire()).isPresent();
      }
    } finally {
      guarded.forEach(RedisServer::close);
    }
  }
}
