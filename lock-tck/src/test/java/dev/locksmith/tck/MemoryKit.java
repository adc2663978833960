package dev.locksmith.tck;

import dev.locksmith.spi.LockProvider;
import dev.locksmith.tck.MemoryBackends.Defect;

/**
 * The kit against the in-memory backend with the defect named in {@link #defect} when the instance
 * is made. Run by {@link KitCatchesBrokenBackendsTest} through the JUnit test kit, one rule at a
 * time, never directly (its name does not end in Test).
 */
class MemoryKit extends LockCompatibilityKit {
  /** Set before the test engine makes an instance; the engine runs in the caller's thread. */
  static volatile Defect defect = Defect.NONE;

  private final Defect mine;

  /**
   * JUnit wants one constructor: the self-test's runs take {@link #defect}, subclasses the correct
   * backend.
   */
  MemoryKit() {
    this.mine = getClass() == MemoryKit.class ? defect : Defect.NONE;
  }

  @Override
  protected String uri() {
    return "memory:";
  }

  @Override
  protected LockProvider provider() {
    return new MemoryBackends.Provider(mine);
  }

  @Override
  protected FaultHooks faults() {
    MemoryBackends.Server server = MemoryBackends.server(mine);
    return new FaultHooks() {
      @Override
      public void revoke(String lockName) {
        server.revoke(lockName);
      }

      @Override
      public void pauseServer() {
        server.suspend();
      }

      @Override
      public void resumeServer() {
        server.resume();
      }
    };
  }
}
