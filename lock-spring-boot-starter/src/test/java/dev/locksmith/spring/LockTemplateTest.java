package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.local.LocalLockProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link LockTemplate}, its single-name and its several-name forms, on local:. */
class LockTemplateTest {
  private static final String SPACE = "template-test";
  static final LockClient CLIENT = Locks.connect("local:" + SPACE);
  static final LockClient OTHER = Locks.connect("local:" + SPACE);
  private final LockTemplate locks = new LockTemplate(CLIENT);

  @AfterAll
  static void close() {
    CLIENT.close();
    OTHER.close();
  }

  private static boolean held(String name) {
    return LocalLockProvider.isHeld(SPACE, name);
  }

  @Test
  void oneNameIsHeldWhileTheWorkRuns() {
    String r =
        locks.locked(
            "one",
            Duration.ZERO,
            lease -> lease.lockName() + " " + held("one") + " " + CurrentLease.get().isPresent());
    assertThat(r).isEqualTo("one true true");
    assertThat(held("one")).isFalse();
  }

  @Test
  void severalNamesAreAllHeldWhileTheWorkRunsAndAllReleasedAfter() {
    Map<String, Long> tokens =
        locks.locked(
            List.of("acc:42", "acc:7"),
            Duration.ofSeconds(1),
            lease -> {
              assertThat(CurrentLease.get()).contains(lease);
              Map<String, Long> t = new TreeMap<>();
              for (String n : lease.lockNames()) {
                assertThat(held(n)).as("'%s' while the work runs", n).isTrue();
                assertThat(OTHER.lock(n).tryAcquire()).as("'%s' for another client", n).isEmpty();
                t.put(n, lease.fencingToken(n));
              }
              return t;
            });
    assertThat(tokens).containsOnlyKeys("acc:42", "acc:7");
    assertThat(tokens.values()).allSatisfy(t -> assertThat(t).isPositive());
    assertThat(held("acc:42")).isFalse();
    assertThat(held("acc:7")).isFalse();
    assertThat(CurrentLease.get()).isEmpty();
  }

  @Test
  void aBusyNameMakesTheSetBusyAndNoneIsKept() throws Exception {
    Lease b = OTHER.lock("set:b").acquire(Duration.ofSeconds(1));
    try {
      List<String> names = List.of("set:a", "set:b", "set:c");
      assertThatThrownBy(() -> locks.locked(names, Duration.ofMillis(50), lease -> "ran"))
          .isInstanceOf(LockBusyException.class)
          .hasMessageContaining("set:a, set:b, set:c")
          .hasMessageContaining("50ms")
          .hasMessageContaining("LockTemplate.locked");
      assertThat(locks.tryLocked(names, Duration.ZERO, lease -> "ran")).isEmpty();
      assertThat(held("set:a")).isFalse();
      assertThat(held("set:c")).isFalse();
    } finally {
      b.release();
    }
    assertThat(locks.tryLocked(List.of("set:a", "set:b", "set:c"), Duration.ZERO, l -> "ran"))
        .contains("ran");
  }

  @Test
  void theWorksExceptionReleasesEveryName() {
    assertThatThrownBy(
            () ->
                locks.locked(
                    List.of("boom:1", "boom:2"),
                    Duration.ZERO,
                    lease -> {
                      throw new IllegalStateException("work failed");
                    }))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("work failed");
    assertThat(held("boom:1")).isFalse();
    assertThat(held("boom:2")).isFalse();
  }

  @Test
  @Timeout(60)
  void callsWithOverlappingNamesInReversedOrdersDoNotDeadlock() throws Exception {
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    List<CompletableFuture<Void>> callers = new ArrayList<>();
    for (List<String> names : List.of(List.of("r:a", "r:b"), List.of("r:b", "r:a"))) {
      callers.add(
          CompletableFuture.runAsync(
              () -> {
                for (int i = 0; i < 300; i++) {
                  locks.locked(
                      names,
                      Duration.ofSeconds(20),
                      lease -> {
                        most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                        LockSupport.parkNanos(100_000);
                        return inside.decrementAndGet();
                      });
                }
              }));
    }
    CompletableFuture.allOf(callers.toArray(new CompletableFuture<?>[0])).get(45, TimeUnit.SECONDS);
    assertThat(most.get()).isEqualTo(1);
  }

  @Test
  void badNamesAreRefusedNamingTheParameter() {
    assertThatThrownBy(() -> locks.locked(List.of(), Duration.ZERO, lease -> "ran"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`names` was empty");
    assertThatThrownBy(
            () -> locks.tryLocked(Arrays.asList("ok", null), Duration.ZERO, lease -> "ran"))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`names` element 1");
    assertThatThrownBy(() -> locks.locked((Collection<String>) null, Duration.ZERO, l -> "ran"))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`names` was null");
    assertThatThrownBy(() -> locks.locked(List.of("ok"), null, lease -> "ran"))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`wait` was null");
    assertThat(held("ok")).isFalse();
    assertThat(locks.tryLocked(List.of("ok"), Duration.ZERO, lease -> null))
        .isEqualTo(Optional.empty());
  }
}
