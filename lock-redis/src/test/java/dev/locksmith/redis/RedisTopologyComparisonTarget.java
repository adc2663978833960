package dev.locksmith.redis;

import dev.locksmith.Guarantees.Fault;
import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.compare.Comparison;
import java.time.Duration;
import java.util.List;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * A Sentinel set or a Cluster as a target of the fault comparison, for scenario 7 ("leader killed
 * during contention") alone: the primary that holds the contended lock is killed (SIGKILL) and a
 * replica is promoted (Sentinel down-after / Cluster node timeout: 1 s). With {@code wait}, the URI
 * asks every grant to be acknowledged by one replica ({@code wait-replicas=1}). Shipped in the
 * test-jar.
 */
public final class RedisTopologyComparisonTarget implements AutoCloseable {
  private static final String PREDICTION =
      "U (asynchronous replication: a grant the promoted replica never got is lost, Kleppmann 2016;"
          + " WAIT narrows the window)";
  private final RedisSentinelSet sentinels;
  private final RedisClusterSet cluster;
  private final boolean wait;

  private RedisTopologyComparisonTarget(
      RedisSentinelSet sentinels, RedisClusterSet cluster, boolean wait) {
    this.sentinels = sentinels;
    this.cluster = cluster;
    this.wait = wait;
  }

  /**
   * @param wait whether grants wait for one replica's acknowledgement
   * @return a Sentinel set: one primary, two replicas, three Sentinels
   */
  public static RedisTopologyComparisonTarget sentinel(boolean wait) {
    return new RedisTopologyComparisonTarget(
        RedisSentinelSet.start("compare-sentinel" + (wait ? "-wait" : ""), Duration.ofSeconds(1)),
        null,
        wait);
  }

  /**
   * @param wait whether grants wait for one replica's acknowledgement
   * @return a 6-node Cluster
   */
  public static RedisTopologyComparisonTarget cluster(boolean wait) {
    return new RedisTopologyComparisonTarget(
        null,
        RedisClusterSet.start("compare-cluster" + (wait ? "-wait" : ""), Duration.ofSeconds(1)),
        wait);
  }

  /**
   * @return the target, labelled redis-sentinel / redis-cluster, with "+wait" when grants wait for
   *     a replica
   */
  public Comparison.Target target() {
    String label = (sentinels != null ? "redis-sentinel" : "redis-cluster") + (wait ? "+wait" : "");
    String uri =
        (sentinels != null ? sentinels.uri() : cluster.uri())
            + (wait ? "?wait-replicas=1&wait-timeout=100ms" : "");
    FaultHooks hooks =
        new FaultHooks() {
          private int killed = -1;

          @Override
          public void killLeader() {
            if (sentinels != null) {
              killed = sentinels.killPrimary();
            } else {
              killed = primaryHoldingALock();
              cluster.kill(killed);
            }
          }

          @Override
          public void restoreLeader() {
            if (killed < 0) {
              return;
            }
            if (sentinels != null) {
              sentinels.restart(killed);
              sentinels.awaitReplica(killed, Duration.ofSeconds(60));
            } else {
              cluster.restart(killed);
              cluster.awaitHealthy(Duration.ofSeconds(60));
            }
            killed = -1;
          }
        };
    return Comparison.Target.of(label, uri, hooks, Duration.ZERO)
        .withPrediction(Fault.LEADER_FAILOVER, PREDICTION)
        .only(Comparison.Scenario.LEADER_FAILOVER);
  }

  /**
   * @return the Cluster primary whose slot holds a taken lock now (the contended one)
   */
  private int primaryHoldingALock() {
    for (int port : cluster.primaries()) {
      try (Jedis j = cluster.admin(port)) {
        ScanResult<String> page = j.scan("0", new ScanParams().match("*:owner").count(1000));
        List<String> keys = page.getResult();
        if (!keys.isEmpty()) {
          return port;
        }
      }
    }
    throw new IllegalStateException("no Cluster primary holds a lock to fail over");
  }

  @Override
  public void close() {
    if (sentinels != null) {
      sentinels.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }
}
