package dev.locksmith.zookeeper;

import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.compare.Comparison;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * A real ZooKeeper server in a JVM of its own and its fault hooks, as a target of the fault
 * comparison (lock-compare runs it beside the other backends); or, with {@link #ensemble()}, a
 * three-server ensemble whose leader, or a majority, can be killed. Shipped in the test-jar.
 */
public final class ZooKeeperComparisonTarget implements AutoCloseable {
  private static final Duration SESSION = Duration.ofSeconds(2);
  private static final String OPTIONS =
      "?session-timeout=" + SESSION.toMillis() + "ms&connection-timeout=2s";
  private final ZooKeeperServerFixture server;
  private final ZooKeeperEnsembleFixture ensemble;

  /** One server: every scenario but the leader's. */
  public ZooKeeperComparisonTarget() {
    this(ZooKeeperServerFixture.start("compare-zookeeper"), null);
  }

  private ZooKeeperComparisonTarget(
      ZooKeeperServerFixture server, ZooKeeperEnsembleFixture ensemble) {
    this.server = server;
    this.ensemble = ensemble;
  }

  /**
   * @return three servers in JVMs of their own, shown as "zookeeper-3", for the scenarios that need
   *     a quorum (the leader killed, a majority killed); the single server covers the others
   */
  public static ZooKeeperComparisonTarget ensemble() {
    return new ZooKeeperComparisonTarget(
        null, ZooKeeperEnsembleFixture.start("compare-zookeeper-3"));
  }

  /**
   * @return the target: zookeeper:// with a 2 s session, with the hooks of its servers
   */
  public Comparison.Target target() {
    if (ensemble != null) {
      return Comparison.Target.of(
              "zookeeper-3",
              "zookeeper://" + ensemble.connectString() + OPTIONS,
              hooks(ensemble),
              SESSION.plusSeconds(1))
          .only(Comparison.Scenario.LEADER_FAILOVER, Comparison.Scenario.MAJORITY_DOWN);
    }
    return Comparison.Target.of(
            "zookeeper",
            "zookeeper://127.0.0.1:" + server.port() + OPTIONS,
            hooks(server),
            SESSION.plusSeconds(1))
        // one server has no leader to kill and no majority to lose: the ensemble's target runs them
        .coveredBy(
            "zookeeper-3", Comparison.Scenario.LEADER_FAILOVER, Comparison.Scenario.MAJORITY_DOWN);
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

  /** The hooks of an ensemble: the leader (found with {@code srvr}) or a majority killed. */
  static FaultHooks hooks(ZooKeeperEnsembleFixture ensemble) {
    return new FaultHooks() {
      @Override
      public void killLeader() {
        ensemble.killLeader();
      }

      @Override
      public void restoreLeader() {
        ensemble.restartKilled();
      }

      @Override
      public void killMajority() {
        ensemble.killMajority();
      }

      @Override
      public void restartMajority() {
        ensemble.restartKilled();
      }
    };
  }

  @Override
  public void close() {
    if (server != null) {
      server.close();
    }
    if (ensemble != null) {
      ensemble.close();
    }
  }
}
