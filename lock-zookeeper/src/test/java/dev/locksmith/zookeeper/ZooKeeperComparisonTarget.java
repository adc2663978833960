package dev.locksmith.zookeeper;

import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.compare.Comparison;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * A real ZooKeeper server in a JVM of its own and its fault hooks, as a target of the fault
 * comparison (lock-compare runs it beside the other backends). Shipped in the test-jar.
 */
public final class ZooKeeperComparisonTarget implements AutoCloseable {
  private static final Duration SESSION = Duration.ofSeconds(2);
  private static final String OPTIONS = "?session-timeout=" + SESSION.toMillis() + "ms&connection-timeout=2s";
  private final ZooKeeperServerFixture server = ZooKeeperServerFixture.start("compare-zookeeper");

  /** @return the target: zookeeper:// with a 2 s session, with pause, kill/restart and partition hooks */
  public Comparison.Target target() {
    return Comparison.Target.of("zookeeper", "zookeeper://127.0.0.1:" + server.port() + OPTIONS, hooks(server),
        SESSION.plusSeconds(1));
  }

  /** The server hooks of a ZooKeeper fixture; the kit adds revocation to them. */
  static FaultHooks hooks(ZooKeeperServerFixture server) {
    return new FaultHooks() {
      @Override
      public void pauseServer() {
        server.pause();
      }

      @Override
      public void resumeServer() {
        server.resume();
      }

      @Override
      public void killServer() {
        server.kill();
      }

      @Override
      public void restartServer() {
        server.restart();
      }

      @Override
      public InetSocketAddress serverAddress() {
        return new InetSocketAddress("127.0.0.1", server.port());
      }

      @Override
      public String uriVia(InetSocketAddress proxy) {
        return "zookeeper://127.0.0.1:" + proxy.getPort() + OPTIONS;
      }
    };
  }

  @Override
  public void close() {
    server.close();
  }
}
