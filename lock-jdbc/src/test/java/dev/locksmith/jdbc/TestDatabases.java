package dev.locksmith.jdbc;

import dev.locksmith.tck.FakeClock;
import dev.locksmith.tck.ServerProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Real databases for the integration tests, each started once per JVM on a free loopback port with
 * a fresh data directory: mariadbd (mariadb-install-db), PostgreSQL (initdb + postgres, as the
 * postgres user when we run as root), and an H2 file database served to other processes by
 * AUTO_SERVER. A missing server binary fails the tests with how to install it.
 */
final class TestDatabases {
  private static Db mariadb;
  private static Db mariadbFakeClock;
  private static Db postgres;
  private static Db postgresFakeClock;
  private static Db h2;

  private TestDatabases() {}

  /** One database the tests can reach, hurt and inspect. */
  static final class Db {
    final String name;

    /** The lock URI, without options. */
    final String uri;

    /** A JDBC URL for the tests' own admin connections. */
    final String adminUrl;

    final String user;
    final ServerProcess server;

    /** Kept open so an H2 database outlives every client and stays served to child processes. */
    final Connection keepAlive;

    /** The server's clock under libfaketime, or null when its clock is the real one. */
    final FakeClock clock;

    Db(
        String name,
        String uri,
        String adminUrl,
        String user,
        ServerProcess server,
        Connection keepAlive) {
      this(name, uri, adminUrl, user, server, keepAlive, null);
    }

    Db(
        String name,
        String uri,
        String adminUrl,
        String user,
        ServerProcess server,
        Connection keepAlive,
        FakeClock clock) {
      this.name = name;
      this.uri = uri;
      this.adminUrl = adminUrl;
      this.user = user;
      this.server = server;
      this.keepAlive = keepAlive;
      this.clock = clock;
    }

    /** Moves the server's clock forward, for that process alone (see {@link FakeClock}). */
    void jumpClock(Duration jump) {
      if (clock == null) {
        throw new UnsupportedOperationException("jumpServerClock");
      }
      clock.jump(jump);
    }

    Connection admin() throws SQLException {
      return DriverManager.getConnection(adminUrl, user, "");
    }

    /** Counts the rows of {@code table} for a lock's name, read on an admin connection. */
    int countRows(String table, String lockName) throws SQLException {
      try (Connection c = admin();
          PreparedStatement ps =
              c.prepareStatement("SELECT COUNT(*) FROM " + table + " WHERE name = ?")) {
        ps.setString(1, lockName);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getInt(1);
        }
      }
    }

    /** Deletes a lock's row behind its holder's back. */
    void deleteRow(String table, String lockName) {
      try (Connection c = admin();
          PreparedStatement ps = c.prepareStatement("DELETE FROM " + table + " WHERE name = ?")) {
        ps.setString(1, lockName);
        ps.executeUpdate();
      } catch (SQLException e) {
        throw new IllegalStateException(
            "revoking lock '" + lockName + "' on " + name + " failed: " + e, e);
      }
    }

    /** SIGSTOP the server and, for PostgreSQL, every backend process it forked. */
    void pause() {
      signal("STOP");
    }

    void resume() {
      signal("CONT");
    }

    /** SIGKILL the server, and PostgreSQL's backends with it, as a crash would. */
    void kill() {
      if (server == null) {
        throw new UnsupportedOperationException("killServer");
      }
      ProcessHandle.of(server.pid())
          .ifPresent(p -> p.descendants().forEach(ProcessHandle::destroyForcibly));
      server.kill();
    }

    void restart() {
      if (server == null) {
        throw new UnsupportedOperationException("restartServer");
      }
      server.restart();
    }

    private void signal(String sig) {
      if (server == null) {
        throw new UnsupportedOperationException(
            sig.equals("STOP") ? "pauseServer" : "resumeServer");
      }
      if (!sig.equals("STOP")) {
        List<Long> all = new ArrayList<>(List.of(server.pid()));
        ProcessHandle.of(server.pid())
            .ifPresent(p -> p.descendants().forEach(d -> all.add(d.pid())));
        kill(sig, all);
        return;
      }
      // The server first, so that it forks no backend after the list below is read (PostgreSQL
      // forks one per new connection: one forked between reading the list and stopping the server
      // kept running and answered renewals through the "paused" server). Then its children, read
      // again until no new one turns up.
      kill(sig, List.of(server.pid()));
      java.util.Set<Long> stopped = new java.util.HashSet<>();
      for (int round = 0; round < 5; round++) {
        List<Long> fresh = new ArrayList<>();
        ProcessHandle.of(server.pid())
            .ifPresent(
                p ->
                    p.descendants()
                        .map(ProcessHandle::pid)
                        .filter(stopped::add)
                        .forEach(fresh::add));
        if (fresh.isEmpty()) {
          break;
        }
        kill(sig, fresh);
      }
      awaitStopped(stopped);
    }

    /** Waits up to a second until the server and each of {@code children} is stopped (or gone). */
    private void awaitStopped(java.util.Set<Long> children) {
      List<Long> all = new ArrayList<>(children);
      all.add(server.pid());
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
      List<Long> running = all;
      while (!running.isEmpty()) {
        running = all.stream().filter(pid -> "RSD".indexOf(procState(pid)) >= 0).toList();
        if (running.isEmpty()) {
          return;
        }
        if (System.nanoTime() - deadline > 0) {
          throw new IllegalStateException(
              "pausing " + name + ": processes " + running + " still run after SIGSTOP");
        }
        try {
          Thread.sleep(5);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted", e);
        }
      }
    }

    /**
     * The state letter of /proc/PID/stat (T stopped, Z zombie, ...); 'X' if the process is gone.
     */
    private static char procState(long pid) {
      try {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        return stat.charAt(stat.lastIndexOf(')') + 2);
      } catch (IOException | RuntimeException e) {
        return 'X';
      }
    }

    private static void kill(String sig, List<Long> pids) {
      List<String> cmd = new ArrayList<>(List.of("kill", "-" + sig));
      pids.forEach(pid -> cmd.add(Long.toString(pid)));
      try {
        Process kill = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        if (!kill.waitFor(10, TimeUnit.SECONDS)) {
          throw new IllegalStateException(String.join(" ", cmd) + " did not finish");
        }
      } catch (IOException e) {
        throw new IllegalStateException(String.join(" ", cmd) + " failed: " + e, e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted", e);
      }
    }
  }

  static synchronized Db mariadb() throws Exception {
    if (mariadb == null) {
      mariadb = startMariadb("mariadb", false);
    }
    return mariadb;
  }

  /**
   * @return a MariaDB server of its own whose clock can be moved ({@link Db#jumpClock(Duration)}):
   *     mariadbd runs under libfaketime (Debian's faketime package, the multi-threaded build) with
   *     the offset read from a file on every call, and the monotonic clock left alone
   */
  static synchronized Db mariadbWithFakeClock() throws Exception {
    if (mariadbFakeClock == null) {
      mariadbFakeClock = startMariadb("mariadb+faketime", true);
    }
    return mariadbFakeClock;
  }

  private static Db startMariadb(String name, boolean fakeClock) throws Exception {
    Path mariadbd = ServerProcess.requireBinary("mariadbd", "apt-get install mariadb-server");
    Path install =
        ServerProcess.requireBinary("mariadb-install-db", "apt-get install mariadb-server");
    Path dir = Files.createTempDirectory("locksmith-mariadb-");
    boolean root = isRoot();
    List<String> init =
        new ArrayList<>(
            List.of(
                install.toString(),
                "--no-defaults",
                "--datadir=" + dir.resolve("data"),
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve"));
    if (root) {
      init.add("--user=root");
    }
    run(init, dir, "mariadb-install-db");
    int port = ServerProcess.freePort();
    List<String> cmd =
        new ArrayList<>(
            List.of(
                mariadbd.toString(),
                "--no-defaults",
                "--datadir=" + dir.resolve("data"),
                "--port=" + port,
                "--bind-address=127.0.0.1",
                "--socket=" + dir.resolve("mysqld.sock"),
                "--pid-file=" + dir.resolve("mysqld.pid"),
                "--skip-name-resolve",
                "--skip-log-bin",
                "--max-connections=1000",
                "--innodb-buffer-pool-size=64M",
                "--innodb-flush-log-at-trx-commit=2",
                "--skip-performance-schema"));
    if (root) {
      cmd.add("--user=root");
    }
    String base = "jdbc:mysql://127.0.0.1:" + port + "/";
    Map<String, String> env = Map.of();
    FakeClock clock = null;
    if (fakeClock) {
      clock = FakeClock.in(dir);
      env = clock.environment();
    }
    ServerProcess server =
        ServerProcess.start(
            name, cmd, dir, env, Duration.ofSeconds(60), () -> canConnect(base, "root"));
    try (Connection c = DriverManager.getConnection(base, "root", "");
        Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE IF NOT EXISTS locks");
    }
    Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(server, dir)));
    return new Db(
        name,
        "jdbc:mariadb://127.0.0.1:" + port + "/locks?user=root",
        base + "locks",
        "root",
        server,
        null,
        clock);
  }

  static synchronized Db postgres() throws Exception {
    if (postgres == null) {
      postgres = startPostgres("postgresql", false);
    }
    return postgres;
  }

  /**
   * @return a PostgreSQL server of its own with a shifted clock ({@link FakeClock#shimIn}), named
   *     "postgresql+faketime", whose clock {@link Db#jumpClock} moves forward: the lease table's
   *     expiry is read from the database's clock
   * @throws Exception if it cannot be started (libfaketime missing included)
   */
  static synchronized Db postgresWithFakeClock() throws Exception {
    if (postgresFakeClock == null) {
      postgresFakeClock = startPostgres("postgresql+faketime", true);
    }
    return postgresFakeClock;
  }

  private static Db startPostgres(String name, boolean fakeClock) throws Exception {
    {
      Path bin = postgresBin();
      Path dir = Files.createTempDirectory("locksmith-postgres-");
      boolean root = isRoot();
      List<String> as = new ArrayList<>();
      if (root) {
        UserPrincipalLookupService users = dir.getFileSystem().getUserPrincipalLookupService();
        Files.setOwner(dir, users.lookupPrincipalByName("postgres"));
        as.addAll(
            List.of(
                ServerProcess.requireBinary("setpriv", "apt-get install util-linux").toString(),
                "--reuid=postgres",
                "--regid=postgres",
                "--clear-groups"));
      }
      List<String> init = new ArrayList<>(as);
      init.addAll(
          List.of(
              bin.resolve("initdb").toString(),
              "-D",
              dir.resolve("data").toString(),
              "-A",
              "trust",
              "-U",
              "postgres",
              "-E",
              "UTF8",
              "--locale=C",
              "--no-sync"));
      run(init, dir, "initdb");
      int port = ServerProcess.freePort();
      List<String> cmd = new ArrayList<>(as);
      cmd.addAll(
          List.of(
              bin.resolve("postgres").toString(),
              "-D",
              dir.resolve("data").toString(),
              "-p",
              Integer.toString(port),
              "-k",
              dir.toString(),
              "-c",
              "listen_addresses=127.0.0.1",
              "-c",
              "fsync=off",
              "-c",
              "full_page_writes=off",
              "-c",
              "max_connections=500",
              "-c",
              "shared_buffers=32MB"));
      String url = "jdbc:postgresql://127.0.0.1:" + port + "/postgres";
      // the kit's own shift: libfaketime, preloaded into setpriv (root) too, makes a semaphore
      // that the server, as the postgres user, may not open (the files are readable by it)
      FakeClock clock = fakeClock ? FakeClock.shimIn(dir.resolve("clock")) : null;
      ServerProcess server =
          ServerProcess.start(
              name.equals("postgresql") ? "postgres" : name,
              cmd,
              dir,
              clock == null ? Map.of() : clock.environment(),
              Duration.ofSeconds(60),
              () -> canConnect(url, "postgres"));
      Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(server, dir)));
      return new Db(name, url + "?user=postgres", url, "postgres", server, null, clock);
    }
  }

  static synchronized Db h2() throws Exception {
    if (h2 == null) {
      Path dir = Files.createTempDirectory("locksmith-h2-");
      String url = "jdbc:h2:file:" + dir.resolve("locks") + ";AUTO_SERVER=TRUE";
      Connection keep = DriverManager.getConnection(url, "sa", "");
      h2 = new Db("h2", url + "?user=sa", url, "sa", null, keep);
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    try {
                      keep.close();
                    } catch (SQLException e) {
                      // exiting anyway
                    }
                    deleteTree(dir);
                  }));
    }
    return h2;
  }

  private static boolean canConnect(String url, String user) {
    try (Connection c =
        DriverManager.getConnection(
            url + (url.contains("?") ? "&" : "?") + "connectTimeout=1", user, "")) {
      return c.isValid(2);
    } catch (SQLException e) {
      return false;
    }
  }

  private static Path postgresBin() throws IOException {
    Path root = Path.of("/usr/lib/postgresql");
    if (Files.isDirectory(root)) {
      try (Stream<Path> versions = Files.list(root)) {
        List<Path> bins =
            versions
                .filter(v -> v.getFileName().toString().matches("\\d+"))
                .sorted(Comparator.comparingInt(v -> Integer.parseInt(v.getFileName().toString())))
                .map(v -> v.resolve("bin"))
                .filter(b -> Files.isExecutable(b.resolve("postgres")))
                .collect(Collectors.toList());
        if (!bins.isEmpty()) {
          return bins.get(bins.size() - 1);
        }
      }
    }
    return ServerProcess.requireBinary("postgres", "apt-get install postgresql").getParent();
  }

  private static boolean isRoot() {
    return "root".equals(System.getProperty("user.name"));
  }

  private static void run(List<String> cmd, Path dir, String name)
      throws IOException, InterruptedException {
    Path log = dir.resolve(name + ".log");
    Process p =
        new ProcessBuilder(cmd)
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
            .start();
    if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IllegalStateException(
          name
              + " failed ("
              + String.join(" ", cmd)
              + "); its log:\n"
              + Files.readString(log, StandardCharsets.UTF_8));
    }
  }

  private static void stop(ServerProcess server, Path dir) {
    try {
      server.close();
    } finally {
      deleteTree(dir);
    }
  }

  private static void deleteTree(Path dir) {
    try (Stream<Path> all = Files.walk(dir)) {
      all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a temporary directory; the OS cleans it eventually
    }
  }
}
