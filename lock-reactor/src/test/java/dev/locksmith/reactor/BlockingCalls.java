package dev.locksmith.reactor;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Records every blocking call BlockHound finds on a non-blocking thread, then fails it as
 * BlockHound does. Reactor logs and drops some errors (a cleanup that fails after a cancel), so a
 * test that only watched its publisher could miss one: {@link ReactiveLocksContract} asserts after
 * every test that none was found. Installed by blockhound-junit-platform through the service
 * loader.
 */
public final class BlockingCalls implements BlockHoundIntegration {
  private static final ConcurrentLinkedQueue<String> FOUND = new ConcurrentLinkedQueue<>();

  private static volatile boolean installed;

  /** For the service loader. */
  public BlockingCalls() {}

  @Override
  public void applyTo(BlockHound.Builder builder) {
    installed = true;
    builder.blockingMethodCallback(
        method -> {
          FOUND.add(method + " on " + Thread.currentThread().getName());
          throw new BlockingOperationError(method);
        });
  }

  /**
   * @return whether BlockHound was installed with this integration
   */
  static boolean installed() {
    return installed;
  }

  /**
   * @return the blocking calls found since the last call, which are forgotten
   */
  static List<String> drain() {
    List<String> calls = new ArrayList<>();
    for (String call; (call = FOUND.poll()) != null; ) {
      calls.add(call);
    }
    return calls;
  }
}
