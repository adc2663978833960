package dev.locksmith.redlock;

import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.LockCompatibilityKit;
import org.junit.jupiter.api.AfterAll;

/**
 * The whole compatibility kit against five real redis-servers. Faults hit every server at once
 * (revoke deletes the key everywhere; pause, kill and restart all five), so the whole lock service
 * fails as one; {@code RedlockQuorumIT} covers minorities and majorities.
 */
class RedlockCompatibilityIT extends LockCompatibilityKit {
  private static RedlockServers servers;

  private static synchronized RedlockServers servers() {
    if (servers == null) {
      servers = RedlockServers.start("kit", 5);
    }
    return servers;
  }

  @AfterAll
  static void stopServers() {
    if (servers != null) {
      servers.close();
      servers = null;
    }
  }

  /**
   * The kit's 1 s lease would make the default server timeout (a tenth of the lease) 100 ms, which
   * a redis-server on a loaded two-core CI machine sometimes misses: a release then could not tell
   * a majority and threw (rules 13.1 and 19.2 failed that way). A third of the lease keeps every
   * round trip well inside the lease and the kit's tolerance.
   */
  @Override
  protected String uri() {
    return servers().uri() + "?server-timeout=300ms";
  }

  @Override
  protected FaultHooks faults() {
    RedlockServers s = servers();
    return RedlockComparisonTarget.hooks(s).withRevoke(s::revoke);
  }
}
