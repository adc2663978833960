package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockTimeoutException;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * {@link Locked} on methods that return {@code Mono} and {@code Flux}, on local: through a real
 * Spring context and proxy: the lock is held from subscription until the publisher ends, whatever
 * thread it ends on, and onBusy keeps its meaning.
 */
class LockedReactiveTest {
  /** Another client of the same in-process space: it sees what the advice holds. */
  static final LockClient OTHER = Locks.connect("local:locked-reactive-test");

  private static final Duration BLOCK = Duration.ofSeconds(10);

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
          .withPropertyValues("locksmith.uri=local:locked-reactive-test");

  /**
   * Read without taking the lock (local: reads state), so a check never competes with the advice.
   */
  static boolean heldForOthers(String name) {
    var state = OTHER.lock(name).state();
    assertThat(state.isKnown()).as("local: reads the state of '%s'", name).isTrue();
    return state.isHeld();
  }

  /** The service under test. */
  public static class Jobs {
    final AtomicInteger calls = new AtomicInteger();
    final List<String> seen = new CopyOnWriteArrayList<>();
    Sinks.One<String> gate = Sinks.one();
    Sinks.Many<String> stream = Sinks.many().unicast().onBackpressureBuffer();

    /**
     * @return how often a method body ran, read through the proxy
     */
    public AtomicInteger calls() {
      return calls;
    }

    /**
     * @return what the bodies saw, read through the proxy
     */
    public List<String> seen() {
      return seen;
    }

    /**
     * @return the sink that ends {@link #waitsForGate}
     */
    public Sinks.One<String> gate() {
      return gate;
    }

    /**
     * @return the sink that feeds {@link #streams}
     */
    public Sinks.Many<String> stream() {
      return stream;
    }

    @Locked(name = "mono", key = "#id")
    public Mono<String> waitsForGate(String id) {
      // what the call saw first, then the count the test waits for: counted first, a loaded
      // machine once let the test read `seen` between the two (a clean run at 16adae5)
      seen.add("current " + CurrentLease.get().map(Lease::lockName).orElse("none"));
      calls.incrementAndGet();
      return gate.asMono();
    }

    @Locked(name = "flux", key = "#id")
    public Flux<String> streams(String id) {
      calls.incrementAndGet();
      return stream.asFlux();
    }

    @Locked(name = "ctx", key = "#id")
    public Mono<Long> tokenFromContext(String id, Lease lease) {
      return Mono.deferContextual(
          ctx -> {
            Lease fromContext = ctx.get(CurrentLease.CONTEXT_KEY);
            return Mono.just(fromContext == lease ? fromContext.fencingToken() : -1L);
          });
    }

    @Locked(name = "busy", key = "#id")
    public Mono<String> busyThrows(String id) {
      calls.incrementAndGet();
      return Mono.just("ran");
    }

    @Locked(name = "busy", key = "#id", onBusy = Locked.OnBusy.SKIP)
    public Flux<String> busySkips(String id) {
      calls.incrementAndGet();
      return Flux.just("ran");
    }

    @Locked(name = "busy", key = "#id", onBusy = Locked.OnBusy.FALLBACK, fallback = "whenBusy")
    public Mono<String> busyFallsBack(String id) {
      calls.incrementAndGet();
      return Mono.just("ran");
    }

    /**
     * @param id the id
     * @return the fallback's answer
     */
    public Mono<String> whenBusy(String id) {
      return Mono.just("fallback " + id);
    }

    @Locked(name = "fails", key = "#id", waitFor = "1s")
    public Mono<String> failsWithATimeoutOfItsOwn(String id) {
      return Mono.error(new LockTimeoutException("the work's own lock", Duration.ofMillis(1)));
    }

    @Locked(name = "throws", key = "#id")
    public Mono<String> throwsWhenCalled(String id) {
      throw new IllegalStateException("thrown by the method itself");
    }

    @Locked(name = "waits", key = "#id", waitFor = "5s")
    public Mono<String> waitsUpToFiveSeconds(String id) {
      return Mono.fromSupplier(() -> "got " + id);
    }
  }

  /** The application. */
  @Configuration(proxyBeanMethods = false)
  public static class App {
    /**
     * @return the service
     */
    @Bean
    public Jobs jobs() {
      return new Jobs();
    }
  }

  @Test
  void aMonoHoldsTheLockFromSubscriptionUntilItCompletes() {
    runner
        .withUserConfiguration(App.class)
        .run(
            ctx -> {
              Jobs jobs = ctx.getBean(Jobs.class);
              Mono<String> mono = jobs.waitsForGate("a");
              assertThat(jobs.calls().get()).as("nothing runs before a subscription").isZero();
              assertThat(heldForOthers("mono:a")).as("held before a subscription").isFalse();

              var result = mono.toFuture();
              awaitHeld("mono:a");
              // the method is called once the lease is handed over, a moment after the grant
              long deadline = System.nanoTime() + BLOCK.toNanos();
              while (jobs.calls().get() == 0) {
                assertThat(System.nanoTime() - deadline).as("called within 10 s").isNegative();
                Thread.sleep(2);
              }
              assertThat(jobs.calls().get()).isEqualTo(1);
              assertThat(jobs.seen()).containsExactly("current mono:a");

              jobs.gate().tryEmitValue("done");
              assertThat(result.get()).isEqualTo("done");
              assertThat(heldForOthers("mono:a")).as("held once the mono completed").isFalse();
            });
  }

  @Test
  void aFluxHoldsTheLockUntilItCompletesAndCancellingReleasesIt() {
    runner
        .withUserConfiguration(App.class)
        .run(
            ctx -> {
              Jobs jobs = ctx.getBean(Jobs.class);
              List<String> got = new CopyOnWriteArrayList<>();
              Disposable running = jobs.streams("b").subscribe(got::add);
              awaitHeld("flux:b");
              jobs.stream().tryEmitNext("one");
              jobs.stream().tryEmitNext("two");
              awaitSize(got, 2);
              assertThat(heldForOthers("flux:b")).as("held while the flux runs").isTrue();

              running.dispose();
              awaitFree("flux:b");
              assertThat(got).containsExactly("one", "two");
            });
  }

  @Test
  void theLeaseIsInTheReactorContextAndInALeaseParameter() {
    runner
        .withUserConfiguration(App.class)
        .run(
            ctx -> {
              Long token = ctx.getBean(Jobs.class).tokenFromContext("c", null).block(BLOCK);
              assertThat(token).as("the context's lease is the parameter's").isPositive();
            });
  }

  @Test
  void onBusyKeepsItsMeaning() {
    runner
        .withUserConfiguration(App.class)
        .run(
            ctx -> {
              Jobs jobs = ctx.getBean(Jobs.class);
              try (Lease held = OTHER.lock("busy:x").acquire()) {
                assertThatThrownBy(() -> jobs.busyThrows("x").block(BLOCK))
                    .isInstanceOf(LockBusyException.class)
                    .hasMessageContaining("busy:x");
                assertThat(jobs.busySkips("x").collectList().block(BLOCK))
                    .as("SKIP completes empty")
                    .isEmpty();
                assertThat(jobs.busyFallsBack("x").block(BLOCK)).isEqualTo("fallback x");
                assertThat(jobs.calls().get()).as("no body ran").isZero();
              }
              assertThat(jobs.busySkips("x").collectList().block(BLOCK)).containsExactly("ran");
            });
  }

  @Test
  void theWorksOwnErrorsReachTheSubscriberAndTheLockIsReleased() {
    runner
        .withUserConfiguration(App.class)
        .run(
            ctx -> {
              Jobs jobs = ctx.getBean(Jobs.class);
              assertThatThrownBy(() -> jobs.failsWithATimeoutOfItsOwn("d").block(BLOCK))
                  .as("a LockTimeoutException of the work is not a busy lock")
                  .isInstanceOf(LockTimeoutException.class)
                  .hasMessageContaining("the work's own lock");
              assertThat(heldForOthers("fails:d")).isFalse();
              assertThatThrownBy(() -> jobs.throwsWhenCalled("e").block(BLOCK))
                  .isInstanceOf(IllegalStateException.class)
                  .hasMessageContaining("thrown by the method itself");
              assertThat(heldForOthers("throws:e")).isFalse();
            });
  }

  @Test
  void aSubscriberWaitsForTheLockWithoutHoldingAThreadAndGetsItOnRelease() {
    runner
        .withUserConfiguration(App.class)
        .run(
            ctx -> {
              Jobs jobs = ctx.getBean(Jobs.class);
              Lease held = OTHER.lock("waits:f").acquire();
              var result = jobs.waitsUpToFiveSeconds("f").toFuture();
              Thread.sleep(200);
              assertThat(result).as("still waiting while the lock is held").isNotDone();
              held.release();
              assertThat(result.get()).isEqualTo("got f");
              // each subscription takes the lock again
              Mono<String> twice = jobs.waitsUpToFiveSeconds("g");
              assertThat(twice.block(BLOCK)).isEqualTo("got g");
              assertThat(twice.block(BLOCK)).isEqualTo("got g");
            });
  }

  private static void awaitHeld(String name) throws InterruptedException {
    long deadline = System.nanoTime() + BLOCK.toNanos();
    while (!heldForOthers(name)) {
      assertThat(System.nanoTime() - deadline).as("'%s' held within 10 s", name).isNegative();
      Thread.sleep(5);
    }
  }

  private static void awaitFree(String name) throws InterruptedException {
    long deadline = System.nanoTime() + BLOCK.toNanos();
    while (heldForOthers(name)) {
      assertThat(System.nanoTime() - deadline).as("'%s' released within 10 s", name).isNegative();
      Thread.sleep(5);
    }
  }

  private static void awaitSize(List<String> list, int size) throws InterruptedException {
    long deadline = System.nanoTime() + BLOCK.toNanos();
    while (list.size() < size) {
      assertThat(System.nanoTime() - deadline).as("%d items within 10 s", size).isNegative();
      Thread.sleep(5);
    }
  }
}
