package dev.locksmith.spring;

import dev.locksmith.tck.ServerProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.sql.Connection;
import java.sql.DriverManager;
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
 * Real MariaDB and PostgreSQL servers for the transaction tests, started once per JVM on free
 * loopback ports with fresh data directories, as lock-jdbc's tests do. A missing binary fails with
 * how to install it.
 */
final class Databases {
  private static String mariadb;
  private static String postgres;
  private static String redis;

  private Databases() {}

  /**
   * @return a JDBC URL of a MariaDB database "app", user root without password
   */
  static synchronized String mariadb() throws Exception {
    if (mariadb == null) {
      Path mariadbd = ServerProcess.requireBinary("mariadbd", "apt-get install mariadb-server");
      Path install =
          ServerProcess.requireBinary("mariadb-install-db", "apt-get install mariadb-server");
      Path dir = Files.createTempDirectory("locksmith-boot-mariadb-");
      List<String> init =
          new ArrayList<>(
              List.of(
                  install.toString(),
                  "--no-defaults",
                  "--datadir=" + dir.resolve("data"),
                  "--auth-root-authentication-method=normal",
                  "--skip-test-db",
                  "--skip-name-resolve"));
      if (isRoot()) {
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
                  "--innodb-buffer-pool-size=32M",
                  "--innodb-flush-log-at-trx-commit=2",
                  "--skip-performance-schema"));
      if (isRoot()) {
        cmd.add("--user=root");
      }
      String base = "jdbc:mysql://127.0.0.1:" + port + "/";
      ServerProcess server =
          ServerProcess.start(
              "mariadb",
              cmd,
              dir,
              Map.of(),
              Duration.ofSeconds(60),
              () -> canConnect(base, "root"));
      try (Connection c = DriverManager.getConnection(base, "root", "");
          Statement s = c.createStatement()) {
        s.execute("CREATE DATABASE IF NOT EXISTS app");
      }
      Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(server, dir)));
      mariadb = base + "app";
    }
    return mariadb;
  }

  /**
   * @return a JDBC URL of PostgreSQL's database "postgres", user postgres without password
   */
  static synchronized String postgres() throws Exception {
    if (postgres == null) {
      Path bin = postgresBin();
      Path dir = Files.createTempDirectory("locksmith-boot-postgres-");
      List<String> as = new ArrayList<>();
      if (isRoot()) {
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
              "shared_buffers=16MB"));
      String url = "jdbc:postgresql://127.0.0.1:" + port + "/postgres";
      ServerProcess server =
          ServerProcess.start(
              "postgres",
              cmd,
              dir,
              Map.of(),
              Duration.ofSeconds(60),
              () -> canConnect(url, "postgres"));
      Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(server, dir)));
      postgres = url;
    }
    return postgres;
  }

  /**
   * @return a redis:// URI of a redis-server without persistence
   */
  static synchronized String redis() throws Exception {
    if (redis == null) {
      Path binary = ServerProcess.requireBinary("redis-server", "apt-get install redis-server");
      Path dir = Files.createTempDirectory("locksmith-boot-redis-");
      int port = ServerProcess.freePort();
      ServerProcess server =
          ServerProcess.start(
              "redis",
              List.of(
                  binary.toString(),
                  "--port",
                  Integer.toString(port),
                  "--bind",
                  "127.0.0.1",
                  "--save",
                  "",
                  "--appendonly",
                  "no",
                  "--protected-mode",
                  "no",
                  "--daemonize",
                  "no",
                  "--dir",
                  dir.toString()),
              dir,
              Map.of(),
              Duration.ofSeconds(20),
              ServerProcess.portOpen(port));
      Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(server, dir)));
      redis = "redis://127.0.0.1:" + port;
    }
    return redis;
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
      try (Stream<Path> all = Files.walk(dir)) {
        all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException e) {
        // a temporary directory; the OS cleans it eventually
      }
    }
  }
}
