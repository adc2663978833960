package dev.locksmith.bench;

/**
 * Where the servers run: system property {@code bench.<server>} or environment variable {@code
 * BENCH_<SERVER>}, set by run-bench.sh after it started them on loopback ports.
 */
final class Endpoints {
  private Endpoints() {}

  /**
   * @return {@code host:port} of redis-server, or null if none was started
   */
  static String redis() {
    return get("redis");
  }

  /**
   * @return {@code host:port} of etcd's client endpoint, or null
   */
  static String etcd() {
    return get("etcd");
  }

  static String get(String server) {
    String v = System.getProperty("bench." + server);
    if (v == null || v.isBlank()) {
      v = System.getenv("BENCH_" + server.toUpperCase(java.util.Locale.ROOT));
    }
    return v == null || v.isBlank() ? null : v.trim();
  }

  static String require(String server) {
    String v = get(server);
    if (v == null) {
      throw new IllegalStateException(
          "no "
              + server
              + " endpoint: set BENCH_"
              + server.toUpperCase(java.util.Locale.ROOT)
              + "=host:port (run-bench.sh starts the servers and sets it)");
    }
    return v;
  }
}
