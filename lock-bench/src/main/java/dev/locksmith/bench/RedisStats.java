package dev.locksmith.bench;

import java.util.HashMap;
import java.util.Map;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

/** Reads Redis's per-command call counts (INFO commandstats) on a connection of its own. */
final class RedisStats implements AutoCloseable {
  private final Jedis jedis;

  RedisStats(String endpoint) {
    this.jedis = new Jedis(HostAndPort.from(endpoint));
  }

  /**
   * @return calls per command since the server started, such as {@code evalsha -> 1234}
   */
  Map<String, Long> calls() {
    Map<String, Long> out = new HashMap<>();
    for (String line : jedis.info("commandstats").split("\r?\n")) {
      if (!line.startsWith("cmdstat_")) {
        continue;
      }
      int colon = line.indexOf(':');
      String cmd = line.substring("cmdstat_".length(), colon);
      for (String field : line.substring(colon + 1).split(",")) {
        if (field.startsWith("calls=")) {
          out.put(cmd, Long.parseLong(field.substring("calls=".length())));
        }
      }
    }
    return out;
  }

  /**
   * @return after minus before, per command, without the INFO calls this class makes
   */
  static Map<String, Long> delta(Map<String, Long> before, Map<String, Long> after) {
    Map<String, Long> d = new HashMap<>();
    after.forEach(
        (cmd, n) -> {
          long diff = n - before.getOrDefault(cmd, 0L);
          if (diff != 0 && !cmd.equals("info")) {
            d.put(cmd, diff);
          }
        });
    return d;
  }

  @Override
  public void close() {
    jedis.close();
  }
}
