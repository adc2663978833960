package dev.locksmith.redlock;

import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.compare.Comparison;
import java.time.Duration;

/**
 * Five real redis-servers and their fault hooks, as a target of the fault comparison (lock-compare
 * runs it beside the other backends). Shipped in the test-jar. Pausing, killing or restarting "the
 * server" hurts all five; the failover hook kills one, a minority, and the majority hooks kill
 * three and restart them (empty, as they run without persistence). A client is cut off through one
 * proxy per server ({@link FaultHooks#serverAddresses()}): cut off from all five at once.
 */
public final class RedlockComparisonTarget implements AutoCloseable {
  private final RedlockServers servers = RedlockServers.start("compare-redlock", 5);

  /**
   * @return the target: redlock:// over five servers
   */
  public Comparison.Target target() {
    return Comparison.Target.of("redlock", servers.uri(), hooks(servers), Duration.ZERO);
  }

  /** The server hooks of a set of test servers; the kit adds revocation to them. */
  static FaultHooks hooks(RedlockServers s) {
    return new FaultHooks() {
      @Override
      public void pauseServer() {
        s.pause(s.all());
      }

      @Override
      public void resumeServer() {
        s.resume(s.all());
      }

      @Override
      public void killServer() {
        s.kill(s.all());
      }

      @Override
      public void restartServer() {
        s.restart(s.all());
      }

      @Override
      public java.util.List<java.net.InetSocketAddress> serverAddresses() {
        java.util.List<java.net.InetSocketAddress> out = new java.util.ArrayList<>();
        for (int i = 0; i < s.size(); i++) {
          out.add(new java.net.InetSocketAddress("127.0.0.1", s.get(i).port()));
        }
        return out;
      }

      @Override
      public String uriVia(java.util.List<java.net.InetSocketAddress> proxies) {
        StringBuilder uri = new StringBuilder("redlock://");
        for (int i = 0; i < proxies.size(); i++) {
          uri.append(i == 0 ? "" : ",").append("127.0.0.1:").append(proxies.get(i).getPort());
        }
        return uri.toString();
      }

      @Override
      public void killLeader() {
        s.kill(0); // no leader: one server of five, a minority
      }

      @Override
      public void restoreLeader() {
        s.restart(0);
      }

      @Override
      public void killMajority() {
        s.kill(majority(s));
      }

      @Override
      public void restartMajority() {
        s.restart(majority(s));
      }
    };
  }

  /**
   * @return the first quorum-many servers: three of five
   */
  private static int[] majority(RedlockServers s) {
    int[] m = new int[s.size() / 2 + 1];
    for (int i = 0; i < m.length; i++) {
      m[i] = i;
    }
    return m;
  }

  @Override
  public void close() {
    servers.close();
  }
}
