package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Runs the real runnable jar as a user would, and reads its exit status and output. */
class LockctlDemoIT {
  static final Path JAR = Path.of("target", "lockctl.jar");

  static final class Result {
    final int exit;
    final String out;
    final String err;

    Result(int exit, String out, String err) {
      this.exit = exit;
      this.out = out;
      this.err = err;
    }
  }

  static Result lockctl(String... args) throws Exception {
    assertThat(JAR).as("the runnable jar built by mvn package").exists();
    List<String> cmd =
        new ArrayList<>(
            List.of(
                System.getProperty("java.home") + File.separator + "bin" + File.separator + "java",
                "-jar",
                JAR.toString()));
    cmd.addAll(List.of(args));
    Path out = Files.createTempFile("lockctl", ".out");
    Path err = Files.createTempFile("lockctl", ".err");
    ProcessBuilder pb =
        new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
    pb.environment().remove("LOCKSMITH_URI");
    Process p = pb.start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS))
        .as("lockctl %s finished within 60 s", String.join(" ", args))
        .isTrue();
    return new Result(
        p.exitValue(),
        Files.readString(out, StandardCharsets.UTF_8),
        Files.readString(err, StandardCharsets.UTF_8));
  }

  @Test
  void demoShowsTheFenceRefusingTheFrozenWorkersWrite() throws Exception {
    Result r = lockctl("demo");
    assertThat(r.exit).as("exit status; stdout: %s%nstderr: %s", r.out, r.err).isZero();
    assertThat(r.out)
        .contains(
            "on jdbc:h2:file:",
            "3 worker processes",
            "is frozen (SIGSTOP) for 2.500s",
            "is let go (SIGCONT)",
            "REFUSED",
            "stale writes refused by the fence: 1",
            "no update lost: yes",
            "turns: 9 of 9",
            "fencing tokens increased with every new holder: yes");
    assertThat(r.out).containsPattern("worker-2 +is frozen \\(SIGSTOP\\)");
    assertThat(r.out)
        .as("the frozen worker is told its lease is lost")
        .containsPattern("worker-2 +lease lost \\((RENEWAL_FAILED|TAKEN|EXPIRED)\\)");
    assertThat(r.out)
        .as("the frozen worker's pid was a process of its own, so SIGSTOP froze only it")
        .doesNotContain("printed:");
    assertThat(r.out)
        .as("the time column lines up under its heading")
        .contains("\n     time  worker     event\n")
        .containsPattern("(?m)^ {0,5}\\d{1,6} ms  worker-1   acquired the lock");
    assertThat(r.out)
        .as("the overlaps are said to be with the frozen holder")
        .containsPattern(
            "overlaps: [1-9]\\d*(, all)? with the frozen worker-2, whose lease had expired")
        .doesNotContain("pairs of turns that overlapped");
    assertThat(r.err).isEmpty();
  }

  @Test
  void demoRunsTheSameOnARealServer() throws Exception {
    try (RedisFixture redis = RedisFixture.start()) {
      Result r = lockctl("demo", "--backend", redis.uri(), "--workers", "2", "--rounds", "2");
      assertThat(r.exit).as("exit status; stdout: %s%nstderr: %s", r.out, r.err).isZero();
      assertThat(r.out)
          .contains(
              "on " + redis.uri(),
              "2 worker processes",
              "REFUSED",
              "stale writes refused by the fence: 1",
              "no update lost: yes",
              "turns: 4 of 4");
    }
  }

  @Test
  void anInProcessBackendIsRefusedWithTheReason() throws Exception {
    Result r = lockctl("demo", "--backend", "local:demo");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.err)
        .contains("keeps its locks inside one process")
        .contains("usage: lockctl demo");
  }

  @Test
  void anUnreachableBackendIs69AndNamesTheEndpoint() throws Exception {
    // The demo's own client connects first, so an unreachable server is reported before any worker
    // starts.
    Result r = lockctl("demo", "--backend", "redis://127.0.0.1:1");
    assertThat(r.exit).isEqualTo(69);
    assertThat(r.err).contains("127.0.0.1:1");
  }

  @Test
  void badArgumentsAre2AndABadBackendIs78() throws Exception {
    Result r = lockctl("demo", "--workers", "zero");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.err)
        .startsWith("lockctl demo: --workers was 'zero' but it must be a whole number from 2 to 8")
        .contains("usage: lockctl demo");
    Result unknown = lockctl("frobnicate");
    assertThat(unknown.exit).isEqualTo(2);
    assertThat(unknown.err)
        .contains("unknown command 'frobnicate'", "run 'lockctl help'")
        .doesNotContain("usage:");
    Result badUri = lockctl("demo", "--backend", "nosuch://u:secret@h:1");
    assertThat(badUri.exit).isEqualTo(78);
    assertThat(badUri.err)
        .contains("no lock provider serves scheme 'nosuch'")
        .doesNotContain("secret");
  }

  @Test
  void helpIsThere() throws Exception {
    assertThat(lockctl("--help").out).contains("usage: lockctl <command>");
    assertThat(lockctl("demo", "--help").out).contains("usage: lockctl demo");
    assertThat(lockctl("help", "exec").out)
        .as("lockctl help exec: exec's own help")
        .contains("usage: lockctl exec", "--name NAME [--name NAME ...]");
    assertThat(lockctl().exit).isEqualTo(2);
  }
}
