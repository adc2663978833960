package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The real runnable jar, run as a user would: a separate JVM whose exit status, stdout and stderr
 * the tests read, and to which they can send signals.
 */
final class Lockctl {
  static final Path JAR = Path.of("target", "lockctl.jar");

  private final Process process;
  private final Path out;
  private final Path err;
  private final String line;

  private Lockctl(Process process, Path out, Path err, String line) {
    this.process = process;
    this.out = out;
    this.err = err;
    this.line = line;
  }

  /**
   * Starts {@code lockctl args...}. SIGINT, SIGTERM and SIGHUP are reset to their defaults first
   * ({@code env --default-signal}): a build started in the background may hand its children an
   * ignored SIGINT, which the JVM would keep ignoring.
   */
  static Lockctl start(String... args) throws IOException {
    return start(null, null, Map.of(), args);
  }

  /**
   * Starts {@code lockctl args...} as {@link #start(String...)} does, and also
   *
   * @param workDir its working directory, or null for this one
   * @param tmpDir its {@code java.io.tmpdir}, or null for the default
   * @param env variables to add to its environment ({@code LOCKSMITH_URI} is removed otherwise)
   */
  static Lockctl start(Path workDir, Path tmpDir, Map<String, String> env, String... args)
      throws IOException {
    assertThat(JAR).as("the runnable jar built by mvn package").exists();
    List<String> cmd =
        new ArrayList<>(
            List.of(
                "env",
                "--default-signal=INT,TERM,HUP",
                System.getProperty("java.home")
                    + File.separator
                    + "bin"
                    + File.separator
                    + "java"));
    if (tmpDir != null) {
      cmd.add("-Djava.io.tmpdir=" + tmpDir);
    }
    cmd.addAll(List.of("-jar", JAR.toAbsolutePath().toString()));
    cmd.addAll(List.of(args));
    Path out = Files.createTempFile("lockctl", ".out");
    Path err = Files.createTempFile("lockctl", ".err");
    ProcessBuilder pb =
        new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
    if (workDir != null) {
      pb.directory(workDir.toFile());
    }
    pb.environment().remove("LOCKSMITH_URI");
    pb.environment().putAll(env);
    return new Lockctl(pb.start(), out, err, "lockctl " + String.join(" ", args));
  }

  /** Runs {@code lockctl args...} to its end. */
  static Result run(String... args) throws Exception {
    return start(args).finish(Duration.ofSeconds(60));
  }

  /** Runs {@code lockctl args...} to its end with {@code input} on its standard input, then EOF. */
  static Result runWithInput(String input, String... args) throws Exception {
    Lockctl l = start(args);
    try (var stdin = l.process.getOutputStream()) {
      stdin.write(input.getBytes(StandardCharsets.UTF_8));
    }
    return l.finish(Duration.ofSeconds(60));
  }

  long pid() {
    return process.pid();
  }

  boolean isAlive() {
    return process.isAlive();
  }

  /** Sends a signal (such as INT or TERM) to the lockctl JVM only, as {@code kill -s} would. */
  void signal(String name) throws Exception {
    Process kill =
        new ProcessBuilder("kill", "-s", name, Long.toString(process.pid())).inheritIO().start();
    assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(kill.exitValue()).as("kill -s %s %d", name, process.pid()).isZero();
  }

  /**
   * @return what lockctl has written to stdout so far
   */
  String stdoutSoFar() {
    try {
      return Files.readString(out, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /**
   * @return what lockctl has written to stderr so far
   */
  String stderrSoFar() {
    try {
      return Files.readString(err, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  Result finish(Duration timeout) throws Exception {
    boolean done = process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    if (!done) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
    Result r =
        new Result(
            process.exitValue(),
            Files.readString(out, StandardCharsets.UTF_8),
            Files.readString(err, StandardCharsets.UTF_8));
    Files.deleteIfExists(out);
    Files.deleteIfExists(err);
    assertThat(done)
        .as("%s finished within %s; stdout: %s; stderr: %s", line, timeout, r.out, r.err)
        .isTrue();
    return r;
  }

  /** Waits, with a deadline, until {@code condition} holds; polls it every 20 ms. */
  static void await(String what, Duration timeout, BooleanSupplier condition)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("timed out after " + timeout + " waiting until " + what);
      }
      TimeUnit.MILLISECONDS.sleep(20);
    }
  }

  /**
   * @return the names of the files in a directory
   */
  static List<String> filesIn(Path dir) throws IOException {
    try (java.util.stream.Stream<Path> files = Files.list(dir)) {
      List<String> names = new ArrayList<>();
      files.forEach(f -> names.add(f.getFileName().toString()));
      return names;
    }
  }

  /** What a finished lockctl left behind. */
  static final class Result {
    final int exit;
    final String out;
    final String err;

    Result(int exit, String out, String err) {
      this.exit = exit;
      this.out = out;
      this.err = err;
    }

    @Override
    public String toString() {
      return "exit " + exit + "\n--- stdout\n" + out + "--- stderr\n" + err;
    }
  }
}
