package dev.locksmith.tck;

import dev.locksmith.local.LocalLockProvider;

/** The reference backend passes the whole kit. */
class LocalLockCompatibilityTest extends LockCompatibilityKit {
  private static final String SPACE = "tck";

  @Override
  protected String uri() {
    return "local:" + SPACE;
  }

  @Override
  protected FaultHooks faults() {
    return new FaultHooks() {
      @Override
      public void revoke(String lockName) {
        LocalLockProvider.revoke(SPACE, lockName);
      }

      @Override
      public void pauseServer() {
        LocalLockProvider.suspend(SPACE);
      }

      @Override
      public void resumeServer() {
        LocalLockProvider.resume(SPACE);
      }
    };
  }
}
