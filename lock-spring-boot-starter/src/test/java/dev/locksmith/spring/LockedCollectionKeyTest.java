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
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@link Locked} with a key that is a collection or an array: every element locked, all or none, on
 * local: through a real Spring context and proxy.
 */
class LockedCollectionKeyTest {
  private static final String SPACE = "locked-set-test";

  /** Another client of the same in-process space: it sees what the advice holds. */
  static final LockClient OTHER = Locks.connect("local:" + SPACE);

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
          .withPropertyValues("locksmith.uri=local:" + SPACE);

  /** A money transfer between accounts, the key's source. */
  public record Transfer(List<String> accountIds) {}

  /** What a call saw while it ran. */
  public record Seen(List<String> lockNames, Map<String, Boolean> heldForOthers, long token7) {}

  /** The service under test. */
  public static class Ledger {
    final AtomicInteger inside = new AtomicInteger();
    final AtomicInteger mostInside = new AtomicInteger();

    /**
     * @return the most calls of {@link #overlapping} inside at once, read through the proxy (a
     *     class proxy's own fields are not the bean's)
     */
    public int mostInside() {
      return mostInside.get();
    }

    /**
     * @return what the method saw of its lease, read through {@link CurrentLease}
     */
    @Locked(name = "account", key = "#transfer.accountIds()")
    public Seen transfer(Transfer transfer) {
      Lease lease = CurrentLease.get().orElseThrow();
      Map<String, Boolean> held = new ConcurrentHashMap<>();
      for (String id : transfer.accountIds()) {
        String name = "account:" + id;
        held.put(
            name, LocalLockProvider.isHeld(SPACE, name) && OTHER.lock(name).tryAcquire().isEmpty());
      }
      long token7 = lease.lockNames().contains("account:7") ? lease.fencingToken("account:7") : 0;
      return new Seen(lease.lockNames(), held, token7);
    }

    /**
     * @param ids the accounts, in the caller's order
     * @return how many calls were inside at once, at most, when this one ran
     */
    @Locked(name = "pair", key = "#ids", waitFor = "20s")
    public int overlapping(List<String> ids) {
      int now = inside.incrementAndGet();
      mostInside.accumulateAndGet(now, Math::max);
      LockSupport.parkNanos(100_000); // long enough for an overlap to be seen
      inside.decrementAndGet();
      return now;
    }

    /**
     * @return the lease's names
     */
    @Locked(name = "arr", key = "#ids")
    public List<String> array(long[] ids, Lease lease) {
      return lease.lockNames();
    }

    /**
     * @return "ran"
     */
    @Locked(name = "busy", key = "#ids", onBusy = Locked.OnBusy.SKIP)
    public String skips(Set<String> ids) {
      return "ran";
    }

    /**
     * @return "ran"
     */
    @Locked(name = "busy", key = "#ids")
    public String throwsWhenBusy(List<String> ids) {
      return "ran";
    }

    /**
     * @return the lease's names once the returned stage completes
     */
    @Locked(name = "async", key = "#ids")
    public CompletableFuture<List<String>> later(List<String> ids, CompletableFuture<String> gate) {
      List<String> names = CurrentLease.get().orElseThrow().lockNames();
      return gate.thenApply(v -> names);
    }

    /**
     * @return the lock's name
     */
    @Locked(name = "one", key = "#id")
    public String single(String id) {
      return CurrentLease.get().orElseThrow().lockName();
    }
  }

  @Configuration
  static class App {
    @Bean
    Ledger ledger() {
      return new Ledger();
    }
  }

  private void withLedger(LockedTest.ThrowingConsumer<Ledger> test) {
    runner
        .withUserConfiguration(App.class)
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              test.accept(ctx.getBean(Ledger.class));
            });
  }

  private static boolean held(String name) {
    return LocalLockProvider.isHeld(SPACE, name);
  }

  @Test
  void aCollectionKeyHoldsEveryElementWhileTheMethodRunsAndReleasesThemAfter() {
    withLedger(
        l -> {
          Seen seen = l.transfer(new Transfer(List.of("42", "7", "9")));
          assertThat(seen.lockNames())
              .as("the set's lease, through CurrentLease")
              .containsExactlyInAnyOrder("account:42", "account:7", "account:9");
          assertThat(seen.heldForOthers())
              .as("every element held while the method ran")
              .containsOnly(
                  Map.entry("account:42", true),
                  Map.entry("account:7", true),
                  Map.entry("account:9", true));
          assertThat(seen.token7()).as("fencingToken(name) inside the method").isPositive();
          for (String n : List.of("account:42", "account:7", "account:9")) {
            assertThat(held(n)).as("'%s' after the method returned", n).isFalse();
          }
        });
  }

  @Test
  void anArrayKeyLocksEachElementAndAScalarKeyStaysOneLock() {
    withLedger(
        l -> {
          assertThat(l.array(new long[] {3, 1, 3}, null))
              .as("duplicates are one lock")
              .containsExactlyInAnyOrder("arr:1", "arr:3");
          assertThat(l.single("x")).isEqualTo("one:x");
        });
  }

  @Test
  @Timeout(60)
  void concurrentCallsWithOverlappingReversedCollectionsNeitherDeadlockNorOverlap()
      throws Exception {
    withLedger(
        l -> {
          List<String> forward = List.of("a", "b", "c");
          List<String> reversed = List.of("c", "b", "a");
          List<String> overlap = List.of("b", "x");
          List<CompletableFuture<Void>> callers = new ArrayList<>();
          for (List<String> ids : List.of(forward, reversed, overlap)) {
            callers.add(
                CompletableFuture.runAsync(
                    () -> {
                      for (int i = 0; i < 300; i++) {
                        l.overlapping(ids);
                      }
                    }));
          }
          CompletableFuture.allOf(callers.toArray(new CompletableFuture<?>[0]))
              .get(45, TimeUnit.SECONDS);
          assertThat(l.mostInside()).as("calls sharing an element never ran at once").isEqualTo(1);
          for (String n : List.of("pair:a", "pair:b", "pair:c", "pair:x")) {
            assertThat(held(n)).as("'%s' after every call", n).isFalse();
          }
        });
  }

  @Test
  void anEmptyCollectionOrANullElementIsRefusedNamingTheMethodAndTheKey() {
    withLedger(
        l -> {
          assertThatThrownBy(() -> l.transfer(new Transfer(List.of())))
              .isInstanceOf(IllegalArgumentException.class)
              .hasMessageContaining("@Locked key '#transfer.accountIds()'")
              .hasMessageContaining("Ledger.transfer(Transfer)")
              .hasMessageContaining("evaluated to an empty collection")
              .hasMessageContaining("must hold 1 to 10000 keys");
          assertThatThrownBy(() -> l.array(new long[0], null))
              .isInstanceOf(IllegalArgumentException.class)
              .hasMessageContaining("evaluated to an empty array");
          assertThatThrownBy(() -> l.transfer(new Transfer(Arrays.asList("1", null))))
              .isInstanceOf(IllegalArgumentException.class)
              .hasMessageContaining("@Locked key '#transfer.accountIds()'")
              .hasMessageContaining("Ledger.transfer(Transfer)")
              .hasMessageContaining("element 1 is null");
          assertThatThrownBy(() -> l.transfer(new Transfer(List.of("1", ""))))
              .isInstanceOf(IllegalArgumentException.class)
              .hasMessageContaining("element 1 is ''");
          assertThat(held("account:1")).as("nothing taken for a refused key").isFalse();
        });
  }

  @Test
  void aBusyElementMakesTheCallBusyAndKeepsNoneOfTheOthers() {
    withLedger(
        l -> {
          Lease b = OTHER.lock("busy:b").acquire(Duration.ofSeconds(1));
          try {
            assertThat(l.skips(Set.of("a", "b", "c"))).as("onBusy = SKIP").isNull();
            assertThatThrownBy(() -> l.throwsWhenBusy(List.of("a", "b", "c")))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining("busy:a, busy:b, busy:c")
                .hasMessageContaining("Ledger.throwsWhenBusy(List)");
            assertThat(held("busy:a")).as("'busy:a' after the busy call").isFalse();
            assertThat(held("busy:c")).as("'busy:c' after the busy call").isFalse();
          } finally {
            b.release();
          }
          assertThat(l.skips(Set.of("a", "b", "c"))).isEqualTo("ran");
        });
  }

  @Test
  void aCompletableFutureHoldsTheWholeSetUntilItCompletes() {
    withLedger(
        l -> {
          CompletableFuture<String> gate = new CompletableFuture<>();
          CompletableFuture<List<String>> result = l.later(List.of("p", "q"), gate);
          assertThat(held("async:p")).as("while pending").isTrue();
          assertThat(held("async:q")).as("while pending").isTrue();
          gate.complete("go");
          assertThat(result.get(5, TimeUnit.SECONDS)).containsExactly("async:p", "async:q");
          assertThat(held("async:p")).isFalse();
          assertThat(held("async:q")).isFalse();
        });
  }
}
