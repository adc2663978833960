package dev.locksmith.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.redis.RedisServerExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * {@link ReactiveLocks} on a real redis-server, where a release is network I/O: the whole contract
 * under BlockHound, and a check that BlockHound is armed and sees such a release.
 */
class RedisReactiveLocksIT extends ReactiveLocksContract {
  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("reactor");

  @Override
  String uri() {
    return REDIS.uri();
  }

  @Test
  void blockHoundCatchesAReleaseMadeOnANonBlockingThread() throws Exception {
    // A client of its own: the refused call may leave its connection half used.
    try (LockClient own = Locks.connect(uri())) {
      Lease lease = own.lock(name).acquire(LONG);
      StepVerifier.create(Mono.fromCallable(lease::release).subscribeOn(Schedulers.parallel()))
          .expectError(BlockingOperationError.class)
          .verify(VERIFY);
      assertThat(BlockingCalls.drain())
          .as("the blocking calls BlockHound found")
          .anySatisfy(call -> assertThat(call).contains("parallel-"));
    }
    assertFree(name);
  }
}
