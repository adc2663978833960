package dev.locksmith.reactor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.Lease;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** {@link ReactiveLocks} on {@code local:}: the whole contract, then what needs no server. */
class ReactiveLocksTest extends ReactiveLocksContract {
  @Override
  String uri() {
    return "local:reactor-test";
  }

  @Override
  int raceRounds() {
    return Integer.getInteger("rounds", 3000); // a round costs microseconds here
  }

  @Test
  void nothingHappensBeforeSubscriptionAndEverySubscriptionAcquiresAgain() {
    CountingLock lock = new CountingLock(client.lock(name));
    Mono<Lease> acquire = locks.acquire(lock, LONG);
    Mono<Lease> tryAcquire = locks.tryAcquire(lock);
    Flux<Long> withLock = locks.withLock(lock, LONG, lease -> Flux.just(lease.fencingToken()));
    Mono<Long> withLockMono = locks.withLockMono(lock, LONG, lease -> Mono.just(1L));
    assertThat(lock.asyncCalls()).isZero();
    assertThat(acquire).isNotNull();
    assertThat(tryAcquire).isNotNull();
    assertFreeNow(name);

    long[] tokens = new long[2];
    StepVerifier.create(withLock)
        .assertNext(token -> tokens[0] = token)
        .expectComplete()
        .verify(VERIFY);
    StepVerifier.create(withLock)
        .assertNext(token -> tokens[1] = token)
        .expectComplete()
        .verify(VERIFY);
    StepVerifier.create(withLockMono).expectNext(1L).expectComplete().verify(VERIFY);
    assertThat(lock.asyncCalls()).as("one acquire per subscription").isEqualTo(3);
    assertThat(tokens[1]).as("a new lease each time").isGreaterThan(tokens[0]);
  }

  @Test
  void byNameNothingIsAskedOfTheClientBeforeSubscription() {
    client.close();
    Mono<Lease> acquire = locks.acquire(name, LONG); // no error yet: nothing asked
    Mono<Lease> tryAcquire = locks.tryAcquire(name);
    Flux<Integer> withLock = locks.withLock(name, LONG, lease -> Flux.just(1));
    Mono<Integer> withLockMono = locks.withLockMono(name, LONG, lease -> Mono.just(1));
    StepVerifier.create(acquire).expectError(IllegalStateException.class).verify(VERIFY);
    StepVerifier.create(tryAcquire).expectError(IllegalStateException.class).verify(VERIFY);
    StepVerifier.create(withLock).expectError(IllegalStateException.class).verify(VERIFY);
    StepVerifier.create(withLockMono).expectError(IllegalStateException.class).verify(VERIFY);
  }

  @Test
  void argumentsAreCheckedWhenCalledAndAnInvalidNameWhenSubscribed() {
    assertThatThrownBy(() -> ReactiveLocks.of(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("client");
    assertThat(locks.client()).isSameAs(client);
    assertThatThrownBy(() -> locks.acquire((String) null, LONG))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("name");
    assertThatThrownBy(() -> locks.acquire(name, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("wait");
    assertThatThrownBy(() -> locks.acquire(client.lock(name), Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("wait");
    assertThatThrownBy(() -> locks.withLock(name, LONG, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("body");
    assertThatThrownBy(() -> locks.withLockMono(name, Duration.ofSeconds(-1), l -> Mono.empty()))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> locks.tryAcquire((dev.locksmith.DistributedLock) null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("lock");
    assertThatThrownBy(() -> locks.release(null)).isInstanceOf(NullPointerException.class);

    StepVerifier.create(locks.acquire("", LONG))
        .expectError(IllegalArgumentException.class)
        .verify(VERIFY);
  }
}
