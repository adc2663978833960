package dev.locksmith.tck.compare;

import dev.locksmith.Guarantees.Fault;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;

/**
 * What the published analyses predict per backend family and fault (the project's FAULTS.md:
 * Kleppmann 2016, the Redis distributed-lock page, Jepsen's etcd 3.4.3 analysis, the ZooKeeper and
 * Curator recipes). S safe, F overlap possible but fencing rejects the stale holder, U unsafe even
 * with fencing, A unavailable but safe. The semaphore scenarios (issue 20) carry rows 1 and 2 over
 * to one permit; FAULTS.md itself has no semaphore rows.
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
    if (scenario.semaphore()) {
      // FAULTS.md has no semaphore rows: its lock cells of rows 1 and 2, carried over to a permit
      String[] cells = SEMAPHORE.get(family);
      return cells == null ? "-" : cells[scenario.fault == Fault.HOLDER_PAUSE ? 0 : 1];
    }
    return predicted(family, scenario.fault);
  }

  static String predicted(String family, Fault fault) {
    Map<Fault, String> row = TABLE.get(family);
    return row == null ? "-" : row.getOrDefault(fault, "-");
  }

  private static final Map<String, Map<Fault, String>> TABLE =
      Map.of(
          "redis",
              row(
                  "F",
                  "S",
                  "F",
                  "U",
                  "A, then F on resume",
                  "F, loss reported",
                  "n/a",
                  "U",
                  "S",
                  "liveness only",
                  "S while the node keeps data"),
          "redlock",
              row(
                  "F with majority-drawn tokens, else U",
                  "S",
                  "F/U as 1",
                  "U unless delayed restart",
                  "A on minority, S",
                  "F",
                  "minority down: acquires; majority down: fails",
                  "U",
                  "S",
                  "liveness only",
                  "S with majority-drawn tokens"),
          "jdbc",
              row(
                  "F",
                  "S",
                  "F",
                  "S",
                  "A",
                  "F",
                  "n/a",
                  "S (database clock)",
                  "S",
                  "liveness only",
                  "S"),
          "zookeeper",
              row(
                  "F",
                  "S",
                  "F",
                  "S",
                  "A",
                  "F, SUSPENDED then LOST",
                  "S",
                  "S",
                  "S",
                  "protected mode",
                  "S with czxid"),
          "etcd",
              row(
                  "F",
                  "S",
                  "F if our key is re-checked",
                  "S",
                  "A",
                  "F, keep-alive failure reported",
                  "S",
                  "S",
                  "S",
                  "revoke or reuse our key",
                  "S with create revision"));

  /**
   * Rows 1 and 2 for one permit of a semaphore, per family: the lock's cells, since a permit is
   * leased, renewed and fenced like a lock (a paused holder's permit expires and is granted again;
   * a dead holder's comes back after the lease, or the session for ZooKeeper).
   */
  private static final Map<String, String[]> SEMAPHORE =
      Map.of(
          "redis", new String[] {"F (row 1 for a permit)", "S, permit back after lease"},
          "redlock",
              new String[] {
                "F with majority-drawn tokens, else U (row 1 for a permit)",
                "S, permit back after lease"
              },
          "jdbc", new String[] {"F (row 1 for a permit)", "S, permit back after lease"},
          "zookeeper",
              new String[] {"F (row 1 for a permit)", "S, permit back after session timeout"},
          "etcd", new String[] {"F (row 1 for a permit)", "S, permit back after lease TTL"});

  private static Map<Fault, String> row(String... cells) {
    Map<Fault, String> m = new EnumMap<>(Fault.class);
    Fault[] order = Fault.values();
    for (int i = 0; i < order.length; i++) {
      m.put(order[i], cells[i]);
    }
    return m;
  }
}
