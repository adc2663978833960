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
    List<String> cmd = new ArrayList<>(List.of(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java",
        "-jar", JAR.toString()));
    cmd.addAll(List.of(args));
    Path out = Files.createTempFile("lockctl", ".out");
    Path err = Files.createTempFile("lockctl", ".err");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
    pb.environment().remove("LOCKSMITH_URI");
    Process p = pb.start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("lockctl %s finished within 60 s", String.join(" ", args)).isTrue();
    return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
  }

  @Test
  void demoShowsTheFenceRefusingTheFrozenWorkersWrite() throws Exception {
    Result r = lockctl("demo");
    assertThat(r.exit).as("exit status; stderr: %s", r.err).isZero();
    assertThat(r.out).contains("worker-2", "freezes for 2s", "REFUSED", "lease lost (EXPIRED)",
        "stale writes refused by the fence: 1", "no update lost: yes", "fencing tokens increased with every new holder: yes");
    assertThat(r.err).isEmpty();
  }

  @Test
  void badArgumentsPrintOneLineAndTheUsageWithStatus2() throws Exception {
    Result r = lockctl("demo", "--workers", "zero");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.err).startsWith("lockctl demo: --workers was 'zero' but it must be a whole number from 2 to 16")
        .contains("usage: lockctl demo");
    Result unknown = lockctl("frobnicate");
    assertThat(unknown.exit).isEqualTo(2);
    assertThat(unknown.err).contains("unknown command 'frobnicate'");
    Result badUri = lockctl("demo", "--backend", "nosuch://u:secret@h:1");
    assertThat(badUri.exit).isEqualTo(1);
    assertThat(badUri.err).contains("no lock provider serves scheme 'nosuch'").doesNotContain("secret");
  }

  @Test
  void helpIsThere() throws Exception {
    assertThat(lockctl("--help").out).contains("usage: lockctl <command>");
    assertThat(lockctl("demo", "--help").out).contains("usage: lockctl demo");
    assertThat(lockctl().exit).isEqualTo(2);
  }
}
