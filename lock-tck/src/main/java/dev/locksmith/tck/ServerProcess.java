package dev.locksmith.tck;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A real server process for tests (redis-server, mariadbd, etcd, …) on a loopback port, that a test
 * can pause (SIGSTOP), resume (SIGCONT), kill (SIGKILL) and restart with the same command. Its
 * output goes to a log file whose tail is shown when it fails to start.
 *
 * <pre>{@code
 * Path redis = ServerProcess.requireBinary("redis-server", "apt-get install redis-server");
 * int port = ServerProcess.freePort();
 * ServerProcess server = ServerProcess.start("redis", List.of(redis.toString(), "--port", "" + port),
 *     workDir, Map.of(), Duration.ofSeconds(20), ServerProcess.portOpen(port));
 * }</pre>
 */
public final class ServerProcess implements AutoCloseable {
  private final String name;
  private final List<String> command;
  private final Path workDir;
  private final Map<String, String> environment;
  private final Duration startTimeout;
  private final BooleanSupplier ready;
  private final Path log;
  private Process process;

  private ServerProcess(
      String name,
      List<String> command,
      Path workDir,
      Map<String, String> environment,
      Duration startTimeout,
      BooleanSupplier ready) {
    this.name = name;
    this.command = List.copyOf(command);
    this.workDir = workDir;
    this.environment = Map.copyOf(environment);
    this.startTimeout = startTimeout;
    this.ready = ready;
    this.log = workDir.resolve(name + ".log");
  }

  /**
   * Starts a server and waits until it is ready.
   *
   * @param name a short name, for messages and the log file
   * @param command the command line
   * @param workDir a directory of its own; created if missing
   * @param environment extra environment variables
   * @param startTimeout how long it may take to become ready
   * @param ready true once the server answers
   * @return the running server
   * @throws IllegalStateException if it exits or is not ready in time, with the tail of its log
   */
  public static ServerProcess start(
      String name,
      List<String> command,
      Path workDir,
      Map<String, String> environment,
      Duration startTimeout,
      BooleanSupplier ready) {
    try {
      Files.createDirectories(workDir);
    } catch (IOException e) {
      throw new IllegalStateException("cannot create " + workDir + " for " + name + ": " + e, e);
    }
    ServerProcess server =
        new ServerProcess(name, command, workDir, environment, startTimeout, ready);
    server.launch();
    return server;
  }

  /**
   * @param binary the program's name
   * @param installHint how to install it, such as {@code apt-get install redis-server}
   * @return its path, found on the PATH or in /usr/sbin, /usr/bin, /usr/local/bin
   * @throws IllegalStateException naming the program and how to install it: a missing server is a
   *     failure, never a reason to skip
   */
  public static Path requireBinary(String binary, String installHint) {
    List<Path> places = new ArrayList<>();
    String path = System.getenv("PATH");
    if (path != null) {
      for (String dir : path.split(java.io.File.pathSeparator)) {
        if (!dir.isEmpty()) {
          places.add(Path.of(dir));
        }
      }
    }
    places.add(Path.of("/usr/sbin"));
    places.add(Path.of("/usr/bin"));
    places.add(Path.of("/usr/local/bin"));
    places.add(Path.of("/usr/local/sbin"));
    for (Path dir : places) {
      Path p = dir.resolve(binary);
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    throw new IllegalStateException(
        binary
            + " was not found on the PATH or in /usr/sbin, /usr/bin, /usr/local/bin; install it"
            + " with: "
            + installHint
            + " (bash .ci/install does this)");
  }

  /**
   * @return a TCP port on 127.0.0.1 that was free a moment ago, chosen at least 10000 below the
   *     kernel's ephemeral range (10000-22767 with Linux's default range): a port from that range
   *     can be taken by any outgoing connection (a client of another test server) between this call
   *     and the server's bind, and a Redis Cluster node also binds its port + 10000
   */
  public static int freePort() {
    // Never the same port twice in one JVM: a fixture that picks several ports before starting
    // anything (a cluster's client and peer ports) would otherwise get a free port twice.
    for (int attempt = 0; attempt < 100; attempt++) {
      int port = pickFreePort();
      if (HANDED_OUT.add(port)) {
        return port;
      }
    }
    throw new IllegalStateException(
        "no loopback port left that this JVM has not handed out already");
  }

  private static final java.util.Set<Integer> HANDED_OUT =
      java.util.concurrent.ConcurrentHashMap.newKeySet();

  private static int pickFreePort() {
    int low = 32768;
    // read line by line: procfs reports a size of 0, and Files.readString / readAllBytes then
    // return only the first byte ("3"), which made every port come from 10000-10999, where two
    // builds side by side collided (a restarted MariaDB found its port taken in clean run R1)
    try (java.io.BufferedReader in =
        Files.newBufferedReader(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))) {
      String[] range = in.readLine().trim().split("\\s+");
      low = Integer.parseInt(range[0]);
    } catch (IOException | RuntimeException e) {
      // not Linux, or unreadable: keep the usual default
    }
    int from = 10_000;
    // below the ephemeral range by 10000 more: a Redis Cluster node also listens on its port +
    // 10000 (its cluster bus), which must not land in that range either
    int span = Math.max(1000, low - from - 10_000);
    java.util.concurrent.ThreadLocalRandom random =
        java.util.concurrent.ThreadLocalRandom.current();
    for (int attempt = 0; attempt < 200; attempt++) {
      int port = from + random.nextInt(span);
      try (ServerSocket s = new ServerSocket()) {
        s.bind(new InetSocketAddress("127.0.0.1", port));
        return port;
      } catch (IOException e) {
        // taken: try another
      }
    }
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("127.0.0.1", 0));
      return s.getLocalPort();
    } catch (IOException e) {
      throw new IllegalStateException("no free loopback port: " + e, e);
    }
  }

  /**
   * @param port a port on 127.0.0.1
   * @return a readiness check that is true once the port accepts a connection
   */
  public static BooleanSupplier portOpen(int port) {
    return () -> {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return true;
      } catch (IOException e) {
        return false;
      }
    };
  }

  private void launch() {
    ProcessBuilder pb =
        new ProcessBuilder(command)
            .directory(workDir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
    pb.environment().putAll(environment);
    try {
      process = pb.start();
    } catch (IOException e) {
      throw new IllegalStateException(
          "cannot start " + name + " (" + command.get(0) + "): " + e, e);
    }
    long deadline = System.nanoTime() + startTimeout.toNanos();
    while (!ready.getAsBoolean()) {
      if (!process.isAlive()) {
        throw new IllegalStateException(
            name
                + " exited with status "
                + process.exitValue()
                + " while starting; its log ends:\n"
                + tail());
      }
      if (System.nanoTime() - deadline > 0) {
        process.destroyForcibly();
        throw new IllegalStateException(
            name
                + " was not ready within "
                + startTimeout.toMillis()
                + " ms; its log ends:\n"
                + tail());
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while starting " + name, e);
      }
    }
  }

  /**
   * @return the last lines of the server's log
   */
  public String tail() {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  /**
   * @return the process id
   */
  public long pid() {
    return process.pid();
  }

  /**
   * @return whether the process is running (a paused process is running)
   */
  public boolean isAlive() {
    return process != null && process.isAlive();
  }

  /** Freezes the server with SIGSTOP. */
  public void pause() {
    signal("STOP");
  }

  /** Thaws the server with SIGCONT. */
  public void resume() {
    signal("CONT");
  }

  /** Kills the server with SIGKILL and waits for it to exit. */
  public void kill() {
    if (process == null) {
      return;
    }
    process.destroyForcibly();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException(
            name + " (pid " + process.pid() + ") did not exit 10 s after SIGKILL");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while killing " + name, e);
    }
  }

  /** Starts the same command again after {@link #kill()}, and waits until it is ready. */
  public void restart() {
    if (isAlive()) {
      kill();
    }
    launch();
  }

  private void signal(String sig) {
    Objects.requireNonNull(process, "not started");
    try {
      Process kill =
          new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid()))
              .redirectErrorStream(true)
              .start();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException(
            "kill -"
                + sig
                + " "
                + process.pid()
                + " ("
                + name
                + ") failed: "
                + new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
      }
    } catch (IOException e) {
      throw new IllegalStateException(
          "kill -" + sig + " " + process.pid() + " (" + name + ") failed: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while signalling " + name, e);
    }
  }

  /** Kills the server (after resuming it, so a paused one dies too). */
  @Override
  public void close() {
    if (isAlive()) {
      try {
        resume();
      } catch (IllegalStateException e) {
        // it may have exited meanwhile; kill regardless
      }
      kill();
    }
  }

  @Override
  public String toString() {
    return name + (process == null ? "" : " (pid " + process.pid() + ")");
  }
}
