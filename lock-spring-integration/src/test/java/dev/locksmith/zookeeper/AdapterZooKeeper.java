package dev.locksmith.zookeeper;

/**
 * A ZooKeeper server of lock-zookeeper's test fixture (its test-jar), in a JVM of its own, started
 * once per test JVM, as a lock URI for the adapter tests.
 */
public final class AdapterZooKeeper {
  private static ZooKeeperServerFixture server;

  private AdapterZooKeeper() {}

  /**
   * @return zookeeper://127.0.0.1:PORT with a 2 s session
   */
  public static synchronized String uri() {
    if (server == null) {
      server = ZooKeeperServerFixture.start("adapters-zookeeper");
      ZooKeeperServerFixture started = server;
      Runtime.getRuntime().addShutdownHook(new Thread(started::close));
    }
    return "zookeeper://127.0.0.1:"
        + server.port()
        + "?session-timeout=2000ms&connection-timeout=2s";
  }
}
