package dev.locksmith.etcd;

import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.compare.Comparison;
import io.etcd.jetcd.Client;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * A real 3-member etcd cluster on loopback and its fault hooks, as a target of the fault comparison
 * (lock-compare runs it beside the other backends). Shipped in the test-jar. Pausing or killing
 * "the server" hurts every member; the leader hook kills the Raft leader; the majority hooks kill
 * all members but one and start them again.
 */
public final class EtcdComparisonTarget implements AutoCloseable {
  private static final Duration TTL = Duration.ofSeconds(2);
  private static final String OPTIONS = "?ttl=" + TTL.getSeconds() + "s&request-timeout=2s";
  private final EtcdCluster etcd;
  private final Client admin;

  /**
   * @throws IOException if the cluster's directory cannot be made
   * @throws InterruptedException if interrupted while it starts
   */
  public EtcdComparisonTarget() throws IOException, InterruptedException {
    etcd = EtcdCluster.start(3, "compare");
    admin = Client.builder().endpoints(etcd.endpoints()).build();
  }

  /**
   * @return the target: etcd:// over all three members, with a 2 s TTL
   */
  public Comparison.Target target() {
    return Comparison.Target.of(
        "etcd", "etcd://" + etcd.hosts() + OPTIONS, hooks(etcd, admin), TTL.plusSeconds(1));
  }

  /**
   * The server hooks of a test cluster, whatever its size (pausing or killing "the server" hurts
   * every member); the kit adds revocation to them.
   */
  static FaultHooks hooks(EtcdCluster etcd, Client admin) {
    return new FaultHooks() {
      @Override
      public void pauseServer() {
        etcd.members.forEach(m -> m.process.pause());
      }

      @Override
      public void resumeServer() {
        etcd.members.forEach(m -> m.process.resume());
      }

      @Override
      public void killServer() {
        etcd.members.forEach(m -> m.process.kill());
      }

      @Override
      public void restartServer() {
        etcd.members.forEach(m -> m.process.restart());
      }

      @Override
      public void killLeader() {
        try {
          etcd.leader(admin).process.kill();
        } catch (Exception e) {
          throw new IllegalStateException("finding the etcd leader failed", e);
        }
      }

      @Override
      public void restoreLeader() {
        restartMajority(); // every member not running, started again, the cluster healthy
      }

      @Override
      public void killMajority() {
        // kill running members until one runs (after the leader hook, one more is enough)
        java.util.List<EtcdCluster.Member> running =
            etcd.members.stream()
                .filter(m -> m.process.isAlive())
                .collect(java.util.stream.Collectors.toList());
        for (int i = 0; i < running.size() - 1; i++) {
          running.get(i).process.kill();
        }
      }

      @Override
      public void restartMajority() {
        etcd.members.stream().filter(m -> !m.process.isAlive()).forEach(m -> m.process.restart());
        try {
          etcd.awaitHealthy(Duration.ofSeconds(30));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException(
              "interrupted while waiting for the restarted etcd members", e);
        }
      }

      @Override
      public InetSocketAddress serverAddress() {
        return new InetSocketAddress("127.0.0.1", etcd.single().clientPort);
      }

      @Override
      public String uriVia(InetSocketAddress proxy) {
        return "etcd://127.0.0.1:" + proxy.getPort() + OPTIONS;
      }
    };
  }

  @Override
  public void close() throws IOException {
    admin.close();
    etcd.close();
  }
}
