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

  @Override
  protected String uri() {
    return servers().uri();
  }

  @Override
  protected FaultHooks faults() {
    RedlockServers s = servers();
    return RedlockComparisonTarget.hooks(s).withRevoke(s::revoke);
  }
}
