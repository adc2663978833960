package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.tck.ServerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code lockctl compare --quick} against a real redis-server, as a user runs it. */
class LockctlCompareIT {

  @Test
  void quickComparisonOfARedisServerAgreesWithItsDeclaration() throws Exception {
    Path redis = ServerProcess.requireBinary("redis-server", "apt-get install redis-server");
    int port = ServerProcess.freePort();
    Path dir = Files.createTempDirectory("lockctl-compare");
    try (ServerProcess server = ServerProcess.start("redis-compare", List.of(redis.toString(), "--port", Integer.toString(port),
        "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"), dir, Map.of(), Duration.ofSeconds(20),
        ServerProcess.portOpen(port))) {
      LockctlDemoIT.Result r = LockctlDemoIT.lockctl("compare", "--backend", "redis://127.0.0.1:" + port, "--quick",
          "--contenders", "2", "--out", dir.toString());
      assertThat(r.exit).as("exit status; stderr: %s", r.err).isZero();
      assertThat(r.out).contains("| agrees | redis://127.0.0.1:" + port + " | 1 | holder frozen (SIGSTOP) past its lease, then writes",
          "| agrees | redis://127.0.0.1:" + port + " | 2 | holder killed (SIGKILL) while holding",
          "not run: no fault hook 'pauseServer'");
      assertThat(dir.resolve("fault-comparison.html")).exists();
      assertThat(Files.readString(dir.resolve("fault-comparison.html"))).contains("<svg");
    }
  }

  @Test
  void compareNeedsABackend() throws Exception {
    LockctlDemoIT.Result r = LockctlDemoIT.lockctl("compare");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.err).contains("no backend");
  }
}
