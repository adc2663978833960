package dev.locksmith.tck;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A server's wall clock moved forward on demand, for the fault comparison's clock jump (FAULTS.md
 * 8): the server is started with the {@link #environment()} this gives and reads its offset from a
 * file, so that {@link #jump} moves that server's wall clock and nothing else's. Monotonic clocks
 * are left alone, as a real clock step leaves them. {@link #in} uses libfaketime ({@code apt-get
 * install faketime}); {@link #shimIn} a small preload library of the kit's own, compiled with the
 * system's C compiler, for servers libfaketime cannot start: redis-server built with jemalloc, and
 * a server started through {@code setpriv} as another user (PostgreSQL), whose libfaketime cannot
 * open the shared-memory semaphore the first, root, process made.
 */
public final class FakeClock {
  private final Path file;
  private final Map<String, String> environment;
  private final ReentrantLock lock = new ReentrantLock();
  private long offsetSeconds;

  private FakeClock(Path file, Map<String, String> environment) {
    this.file = file;
    this.environment = environment;
  }

  /**
   * A clock shifted by libfaketime, which reads the offset file on every call.
   *
   * @param dir the server's work directory, where the offset file is written (at +0)
   * @return a clock at no offset yet
   * @throws IOException if the file cannot be written
   * @throws IllegalStateException if libfaketime is not installed
   */
  public static FakeClock in(Path dir) throws IOException {
    Path file = offsetFile(dir);
    return new FakeClock(
        file,
        Map.of(
            "LD_PRELOAD",
            library().toString(),
            "FAKETIME_TIMESTAMP_FILE",
            file.toString(),
            "FAKETIME_NO_CACHE",
            "1",
            "FAKETIME_DONT_FAKE_MONOTONIC",
            "1"));
  }

  /**
   * A clock shifted by the kit's own preload library ({@code clockshift.c}, compiled into {@code
   * dir} with {@code cc}): it adds the file's offset to every wall-clock read (clock_gettime of
   * CLOCK_REALTIME, gettimeofday, time), reading the file again at most every 10 ms.
   *
   * @param dir the server's work directory, where the library and the offset file are written
   * @return a clock at no offset yet
   * @throws IOException if the files cannot be written
   * @throws IllegalStateException if no C compiler is installed or it fails
   */
  public static FakeClock shimIn(Path dir) throws IOException {
    Path file = offsetFile(dir);
    Path source = dir.resolve("clockshift.c");
    try (java.io.InputStream in = FakeClock.class.getResourceAsStream("clockshift.c")) {
      if (in == null) {
        throw new IllegalStateException("clockshift.c is missing from lock-tck's resources");
      }
      Files.write(source, in.readAllBytes());
    }
    Path library = dir.resolve("libclockshift.so");
    Path cc = ServerProcess.requireBinary("cc", "apt-get install gcc libc6-dev");
    ProcessBuilder pb =
        new ProcessBuilder(
                cc.toString(),
                "-shared",
                "-fPIC",
                "-O2",
                "-o",
                library.toString(),
                source.toString())
            .redirectErrorStream(true);
    try {
      Process p = pb.start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (p.waitFor() != 0) {
        throw new IllegalStateException("cc could not build " + library + ": " + out);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while building " + library, e);
    }
    return new FakeClock(
        file, Map.of("LD_PRELOAD", library.toString(), "CLOCKSHIFT_FILE", file.toString()));
  }

  private static Path offsetFile(Path dir) throws IOException {
    Files.createDirectories(dir);
    Path file = dir.resolve("clock-offset");
    Files.writeString(file, "+0\n", StandardCharsets.US_ASCII);
    return file;
  }

  /**
   * @return the environment to start the server with: the library preloaded, and where it reads the
   *     offset
   */
  public Map<String, String> environment() {
    return environment;
  }

  /**
   * Moves the server's wall clock forward, in whole seconds, rounded up.
   *
   * @param jump how far, more than zero
   * @throws IllegalArgumentException if {@code jump} is not forwards
   */
  public void jump(Duration jump) {
    if (jump.isNegative() || jump.isZero()) {
      throw new IllegalArgumentException(
          "`jump` was " + jump.toMillis() + "ms but it must be forwards (more than 0)");
    }
    lock.lock();
    try {
      offsetSeconds += (jump.toMillis() + 999) / 1000;
      Files.writeString(file, "+" + offsetSeconds + "\n", StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new IllegalStateException("cannot write " + file + " to move a clock: " + e, e);
    } finally {
      lock.unlock();
    }
  }

  private static Path library() {
    for (Path lib : List.of(Path.of("/usr/lib"), Path.of("/usr/lib64"))) {
      if (!Files.isDirectory(lib)) {
        continue;
      }
      try (Stream<Path> dirs = Files.list(lib)) {
        List<Path> found =
            dirs.map(d -> d.resolve("faketime").resolve("libfaketimeMT.so.1"))
                .filter(Files::isReadable)
                .collect(Collectors.toList());
        if (!found.isEmpty()) {
          return found.get(0);
        }
      } catch (IOException e) {
        // look in the next place
      }
    }
    throw new IllegalStateException(
        "libfaketimeMT.so.1 was not found in /usr/lib/*/faketime/; install it with: apt-get install"
            + " faketime");
  }
}
