package dev.locksmith.zookeeper;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Says why no connection to ZooKeeper was made within the connection timeout, for the message of
 * {@link ZooKeeperBackend#connect}: whether each host refused the connection or something there
 * answered that is not ZooKeeper.
 */
final class ConnectDiagnosis {
  private ConnectDiagnosis() {}

  /**
   * A tenth of the connection timeout, from 50 to 500 ms: the diagnosis must not stretch the stated
   * time by more.
   */
  static Duration diagnosisBudget(Duration connectionTimeout) {
    return Duration.ofMillis(Math.max(50, Math.min(500, connectionTimeout.toMillis() / 10)));
  }

  /**
   * Tells a refused connection from a port where something other than ZooKeeper answers, within
   * {@code budget} for all hosts.
   */
  static String diagnose(String hosts, Duration budget) {
    List<String> found = new ArrayList<>();
    long deadline = System.nanoTime() + budget.toNanos();
    for (String hp : hosts.split(",")) {
      int colon = hp.lastIndexOf(':');
      String host = hp.substring(0, colon).replace("[", "").replace("]", "");
      int port = Integer.parseInt(hp.substring(colon + 1));
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left < 10) {
        found.add(hp + " not checked (no time left)");
        continue;
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(host, port), (int) left);
        found.add(hp + " accepts connections but did not answer as a ZooKeeper server");
      } catch (IOException e) {
        found.add(hp + " refused or did not answer (" + e.getMessage() + ")");
      }
    }
    return String.join("; ", found)
        + ". Check that ZooKeeper runs there and the URI names its client port";
  }
}
