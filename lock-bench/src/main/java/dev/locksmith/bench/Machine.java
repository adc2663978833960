package dev.locksmith.bench;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;

/** Facts about the machine and the software, for the report. */
final class Machine {
  private Machine() {}

  static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return f[0] + " / " + f[1] + " / " + f[2] + " (1/5/15 min)";
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  static String cpu() {
    String model = "unknown CPU";
    try {
      for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
        if (line.startsWith("model name")) {
          model = line.substring(line.indexOf(':') + 1).trim();
          break;
        }
      }
    } catch (IOException e) {
      // keep "unknown"
    }
    return Runtime.getRuntime().availableProcessors() + " cores (nproc), " + model;
  }

  static String memory() {
    long total = -1;
    long available = -1;
    try {
      for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
        if (line.startsWith("MemTotal:")) {
          total = kb(line);
        } else if (line.startsWith("MemAvailable:")) {
          available = kb(line);
        }
      }
    } catch (IOException e) {
      return "unknown";
    }
    return String.format(
        "%.1f GiB total, %.1f GiB available at the end (free)",
        total / 1048576.0, available / 1048576.0);
  }

  private static long kb(String line) {
    return Long.parseLong(line.replaceAll("[^0-9]", ""));
  }

  /**
   * @return how many other JVMs ran Maven or its test forks: the other engineers' builds
   */
  static long otherBuilds() {
    long self = ProcessHandle.current().pid();
    return ProcessHandle.allProcesses()
        .filter(p -> p.pid() != self)
        .filter(
            p ->
                p.info()
                    .commandLine()
                    .map(
                        c ->
                            c.contains("plexus-classworlds")
                                || c.contains("surefire")
                                || c.contains("failsafe"))
                    .orElse(false))
        .count();
  }

  static String system() {
    return System.getProperty("os.name")
        + " "
        + System.getProperty("os.version")
        + ", Java "
        + System.getProperty("java.version")
        + " ("
        + System.getProperty("java.vm.name")
        + ")";
  }

  static Properties libraryVersions() {
    Properties p = new Properties();
    try (InputStream in = Machine.class.getResourceAsStream("/bench-versions.properties")) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      // report without versions
    }
    return p;
  }

  /**
   * @return the servers' versions as run-bench.sh found them: BENCH_REDIS_VERSION, ...
   */
  static String serverVersions() {
    StringBuilder sb = new StringBuilder();
    for (String server : List.of("redis", "etcd", "zookeeper", "mariadb")) {
      String v = Endpoints.get(server + "_version");
      if (v != null) {
        sb.append(sb.length() == 0 ? "" : "; ").append(v);
      }
    }
    return sb.length() == 0 ? "unknown" : sb.toString();
  }
}
