package dev.locksmith.tck.compare;

import dev.locksmith.Guarantees.Fault;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;

/**
 * What the published analyses predict per backend family and fault (the project's FAULTS.md:
 * Kleppmann 2016, the Redis distributed-lock page, Jepsen's etcd 3.4.3 analysis, the ZooKeeper
 * and Curator recipes). S safe, F overlap possible but fencing rejects the stale holder,
 * U unsafe even with fencing, A unavailable but safe.
 */
final class Predictions {
  private Predictions() {}

  static String family(String scheme) {
    String s = scheme.toLowerCase(Locale.ROOT);
    if (s.equals("rediss")) {
      return "redis";
    }
    if (s.startsWith("jdbc:")) {
      return "jdbc";
    }
    return s;
  }

  /**
   * @return the prediction for one injected scenario: the fault's cell, or for a scenario that is
   *     one half of a cell (Redlock's minority and majority down), that half
   */
  static String predicted(String family, Comparison.Scenario scenario) {
    if (family.equals("redlock") && scenario == Comparison.Scenario.LEADER_FAILOVER) {
      return "minority down: still acquires, S";
    }
    if (family.equals("redlock") && scenario == Comparison.Scenario.MAJORITY_DOWN) {
      return "majority down: clear failure, A";
    }
    if (scenario == Comparison.Scenario.MAJORITY_DOWN) {
      return "-"; // FAULTS.md predicts a majority down for Redlock only
    }
    return predicted(family, scenario.fault);
  }

  static String predicted(String family, Fault fault) {
    Map<Fault, String> row = TABLE.get(family);
    return row == null ? "-" : row.getOrDefault(fault, "-");
  }

  private static final Map<String, Map<Fault, String>> TABLE = Map.of(
      "redis", row("F", "S", "F", "U", "A, then F on resume", "F, loss reported", "n/a", "U", "S", "liveness only", "S while the node keeps data"),
      "redlock", row("F with majority-drawn tokens, else U", "S", "F/U as 1", "U unless delayed restart", "A on minority, S", "F",
          "minority down: acquires; majority down: fails", "U", "S", "liveness only", "S with majority-drawn tokens"),
      "jdbc", row("F", "S", "F", "S", "A", "F", "n/a", "S (database clock)", "S", "liveness only", "S"),
      "zookeeper", row("F", "S", "F", "S", "A", "F, SUSPENDED then LOST", "S", "S", "S", "protected mode", "S with czxid"),
      "etcd", row("F", "S", "F if our key is re-checked", "S", "A", "F, keep-alive failure reported", "S", "S", "S",
          "revoke or reuse our key", "S with create revision"));

  private static Map<Fault, String> row(String... cells) {
    Map<Fault, String> m = new EnumMap<>(Fault.class);
    Fault[] order = Fault.values();
    for (int i = 0; i < order.length; i++) {
      m.put(order[i], cells[i]);
    }
    return m;
  }
}
