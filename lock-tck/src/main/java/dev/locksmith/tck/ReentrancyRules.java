package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 9: reentrancy, as tests: the rules of this group in {@code RULES.md}. The kit's
 * {@code @Nested} class {@link LockCompatibilityKit.Reentrancy} runs them against the backend under
 * test.
 */
interface ReentrancyRules extends KitRules {
  @Test
  @DisplayName(
      "9.1 MUST: the holding thread acquiring again gets the same token; the lock is freed by the"
          + " last release only")
  default void rule9_1_sameThreadSameLease() throws Exception {
    requireFeature(Feature.REENTRANCY, "9.1");
    String name = name("reentrant");
    DistributedLock lock = client().lock(name);
    Lease outer = lock.acquire(Duration.ofSeconds(10));
    Lease inner = lock.acquire(Duration.ofSeconds(1));
    assertThat(inner.fencingToken())
        .as("token of the reentrant acquire")
        .isEqualTo(outer.fencingToken());
    assertThat(inner.release()).as("release of the inner holding").isTrue();
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage("releasing the inner holding freed the lock")
        .isEmpty();
    assertThat(outer.release()).as("release of the outer holding").isTrue();
    assertThat(client().lock(name).tryAcquire()).as("after the last release").isPresent();
  }

  @Test
  @DisplayName("9.2 MUST: asLock() is reentrant per thread; other threads cannot take it meanwhile")
  default void rule9_2_lockViewIsReentrant() throws Exception {
    String name = name("lock-view");
    Lock view = client(renewing().toBuilder().reentrant(false).build()).lock(name).asLock();
    view.lock();
    assertThat(view.tryLock()).as("tryLock() by the holding thread").isTrue();
    AtomicReference<Boolean> otherGot = new AtomicReference<>();
    Thread other = new Thread(() -> otherGot.set(view.tryLock()));
    other.start();
    other.join();
    assertThat(otherGot.get()).as("tryLock() by another thread").isFalse();
    view.unlock();
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage("the first unlock() of two freed the lock")
        .isEmpty();
    view.unlock();
    assertThatThrownBy(view::unlock).isInstanceOf(IllegalMonitorStateException.class);
    assertThat(client().lock(name).tryAcquire()).as("after the last unlock()").isPresent();
    assertThatThrownBy(view::newCondition).isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  @DisplayName("9.3 MUST: with reentrancy off, the holding thread cannot acquire again")
  default void rule9_3_nonReentrantBlocksItsOwnThread() throws Exception {
    String name = name("not-reentrant");
    DistributedLock lock = client().lock(name, renewing().toBuilder().reentrant(false).build());
    Lease lease = lock.acquire(Duration.ofSeconds(10));
    assertThat(lock.tryAcquire())
        .as("a second acquire by the same thread, reentrancy off")
        .isEmpty();
    assertThat(lease.release()).isTrue();
  }
}
