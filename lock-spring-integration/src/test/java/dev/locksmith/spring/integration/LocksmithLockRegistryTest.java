package dev.locksmith.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.Locks;
import dev.locksmith.local.LocalLockProvider;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The registry's Lock semantics on the in-process {@code local:} backend. */
class LocksmithLockRegistryTest {
  private final LockClient client = Locks.connect("local:si-unit");
  private final LockClient other = Locks.connect("local:si-unit");
  private final LocksmithLockRegistry registry = new LocksmithLockRegistry(client);

  @AfterEach
  void close() {
    client.close();
    other.close();
  }

  private boolean freeForAnotherClient(String name) {
    return other
        .lock(name)
        .tryAcquire()
        .map(
            l -> {
              l.release();
              return true;
            })
        .orElse(false);
  }

  private static boolean onAnotherThread(Lock lock) throws Exception {
    return CompletableFuture.supplyAsync(
            () -> {
              boolean got = lock.tryLock();
              if (got) {
                lock.unlock();
              }
              return got;
            })
        .get(10, TimeUnit.SECONDS);
  }

  private static boolean awaitTrue(java.util.function.BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        return false;
      }
      Thread.onSpinWait();
    }
    return true;
  }

  @Test
  void obtainReturnsTheSameLockForTheSameKey() {
    assertThat(registry.obtain("a"))
        .isSameAs(registry.obtain("a"))
        .isNotSameAs(registry.obtain("b"));
    assertThat(registry.obtain("a").name()).isEqualTo("a");
  }

  @Test
  void reentrantPerThreadAndExclusiveAcrossThreadsAndClients() throws Exception {
    LocksmithLock lock = registry.obtain("reentry");
    lock.lock();
    assertThat(lock.tryLock()).isTrue();
    long token = lock.fencingToken().orElseThrow();
    assertThat(token).isPositive();
    assertThat(onAnotherThread(lock)).as("another thread").isFalse();
    assertThat(freeForAnotherClient("reentry")).as("another client").isFalse();
    lock.unlock();
    assertThat(freeForAnotherClient("reentry")).as("still held once").isFalse();
    assertThat(lock.fencingToken()).hasValue(token);
    lock.unlock();
    assertThat(lock.fencingToken()).isEmpty();
    assertThat(freeForAnotherClient("reentry")).as("released by the last unlock").isTrue();
    assertThatThrownBy(lock::unlock)
        .isInstanceOf(IllegalMonitorStateException.class)
        .hasMessageContaining("reentry");
  }

  @Test
  void tokensGrowFromHolderToHolder() throws Exception {
    LocksmithLock lock = registry.obtain("tokens");
    assertThat(lock.tryLock(1, TimeUnit.SECONDS)).isTrue();
    long first = lock.fencingToken().orElseThrow();
    lock.unlock();
    lock.lockInterruptibly();
    assertThat(lock.fencingToken().orElseThrow()).isGreaterThan(first);
    lock.unlock();
  }

  @Test
  void aLockWithTtlIsFreedByTheServerUnlessRenewed() throws Exception {
    LocksmithLock lock = registry.obtain("ttl");
    lock.lock(Duration.ofMillis(300));
    registry.renewLock("ttl", Duration.ofSeconds(5));
    Thread.sleep(400); // past the first ttl: the renewal keeps it
    assertThat(freeForAnotherClient("ttl")).isFalse();
    registry.renewLock("ttl", Duration.ofMillis(100));
    assertThat(awaitTrue(() -> freeForAnotherClient("ttl")))
        .as("freed at the shortened ttl")
        .isTrue();
    assertThatThrownBy(() -> registry.renewLock("ttl"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("was lost");
    assertThatThrownBy(lock::unlock)
        .isInstanceOf(ConcurrentModificationException.class)
        .hasMessageContaining("was lost");
  }

  @Test
  void renewingAnAutoRenewedLockChecksItIsStillHeld() {
    // a short lease, renewed every 100 ms, so its loss is noticed at once
    LocksmithLockRegistry registry =
        new LocksmithLockRegistry(
            client, LockOptions.builder().lease(Duration.ofMillis(300)).build());
    LocksmithLock lock = registry.obtain("auto");
    lock.lock();
    registry.renewLock("auto");
    assertThatThrownBy(() -> registry.renewLock("auto", Duration.ofSeconds(1)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("renewed in the background");
    LocalLockProvider.revoke("si-unit", "auto");
    assertThat(awaitTrue(() -> lock.fencingToken().isEmpty())).isTrue();
    assertThatThrownBy(() -> registry.renewLock("auto"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("was lost");
    assertThat(lock.tryLock()).as("a lost holding is dropped and the lock won afresh").isTrue();
    lock.unlock();
  }

  @Test
  void renewingALockNotHeldIsRefused() {
    assertThatThrownBy(() -> registry.renewLock("never"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("never obtained");
    registry.obtain("not-held");
    assertThatThrownBy(() -> registry.renewLock("not-held"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("is not held by thread");
  }

  @Test
  void badInputIsNamed() {
    assertThatThrownBy(() -> registry.obtain(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`lockKey`");
    assertThatThrownBy(() -> registry.obtain(42))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`lockKey` was a java.lang.Integer (42)")
        .hasMessageContaining("must be a String");
    assertThatThrownBy(() -> registry.obtain("")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> registry.obtain("x").lock(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`ttl` was PT0S");
    assertThatThrownBy(() -> registry.obtain("x").tryLock(Duration.ZERO, Duration.ofDays(8)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`ttl` was PT192H");
    assertThatThrownBy(() -> registry.expireUnusedOlderThan(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`age` was -1");
    assertThatThrownBy(() -> new LocksmithLockRegistry(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`client`");
    assertThatThrownBy(() -> registry.obtain("x").newCondition())
        .isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void expiryForgetsOnlyUnheldLocks() {
    LocksmithLockRegistry own = new LocksmithLockRegistry(client, LockOptions.defaults());
    LocksmithLock held = own.obtain("kept");
    LocksmithLock idle = own.obtain("dropped");
    held.lock();
    own.expireUnusedOlderThan(0);
    assertThat(own.obtain("kept")).isSameAs(held);
    assertThat(own.obtain("dropped")).isNotSameAs(idle);
    held.unlock();
  }
}
