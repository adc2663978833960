package dev.locksmith.tck;

import dev.locksmith.spi.LockProvider;

/**
 * A session-based backend ({@link SessionBackends}: locks belong to a client's session, and the
 * revoke hook can only end the holder's session, losing every lease of it as SESSION_LOST) passes
 * the whole kit: the rules that use {@link FaultHooks#revoke} accept every outcome its contract
 * allows.
 */
class SessionLockCompatibilityTest extends LockCompatibilityKit {
  @Override
  protected String uri() {
    return "session:";
  }

  @Override
  protected LockProvider provider() {
    return new SessionBackends.Provider();
  }

  @Override
  protected FaultHooks faults() {
    return new FaultHooks() {
      @Override
      public void revoke(String lockName) {
        SessionBackends.SERVER.revoke(lockName);
      }
    };
  }
}
