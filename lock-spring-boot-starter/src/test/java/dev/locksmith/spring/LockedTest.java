package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Flow;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** {@link Locked} on local:, through a real Spring context and proxy. */
class LockedTest {
  /** Another client of the same in-process space: it sees what the advice holds. */
  static final LockClient OTHER = Locks.connect("local:locked-test");

  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
          .withPropertyValues("locksmith.uri=local:locked-test");

  /** A request with two fields, for composite keys. */
  public record Req(String userId, String orderId) {}

  /** A bean the key expressions refer to. */
  public static class Tenant {
    /**
     * @return the tenant id
     */
    public String id() {
      return "t1";
    }
  }

  /** The service under test. */
  public static class Orders {
    final List<String> seen = new CopyOnWriteArrayList<>();

    /**
     * @return what pay() saw, read through the proxy (a class proxy's own fields are not the
     *     bean's)
     */
    public List<String> seen() {
      return seen;
    }

    @Locked(name = "pay", key = "#orderId")
    public String pay(long orderId) {
      String name = CurrentLease.get().orElseThrow().lockName();
      boolean heldForOthers = OTHER.lock(name).tryAcquire().isEmpty();
      seen.add(name + (heldForOthers ? " held" : " FREE"));
      return name;
    }

    @Locked(name = "req", key = "#req.userId + ':' + #req.orderId")
    public String composite(Req req) {
      return CurrentLease.get().orElseThrow().lockName();
    }

    @Locked(name = "m", key = "#root.methodName + '/' + @tenant.id()")
    public String rootAndBean() {
      return CurrentLease.get().orElseThrow().lockName();
    }

    @Locked(name = "room", key = "'room#5'")
    public String literal() {
      return CurrentLease.get().orElseThrow().lockName();
    }

    @Locked(name = "fixed")
    public String noKey() {
      return CurrentLease.get().orElseThrow().lockName();
    }

    @Locked(name = "token", key = "#id")
    public long withLease(String id, Lease lease) {
      return lease.fencingToken();
    }

    @Locked(name = "nav", key = "#req.userId")
    public String navigate(Req req) {
      return "nav";
    }

    @Locked(name = "nullable", key = "#id")
    public void nullable(String id) {}

    @Locked(name = "busy", key = "#id")
    public String busyThrows(String id) {
      return "ran";
    }

    @Locked(name = "busy", key = "#id", onBusy = Locked.OnBusy.SKIP)
    public String busySkips(String id) {
      return "ran";
    }

    @Locked(name = "busy", key = "#id", onBusy = Locked.OnBusy.SKIP)
    public Optional<String> busySkipsOptional(String id) {
      return Optional.of("ran");
    }

    @Locked(name = "busy", key = "#id", onBusy = Locked.OnBusy.FALLBACK, fallback = "whenBusy")
    public String busyFallsBack(String id) {
      return "ran";
    }

    /**
     * @return the fallback's answer
     */
    public String whenBusy(String id) {
      return "fallback " + id;
    }

    @Locked(name = "busy", key = "#id", waitFor = "300ms")
    public String busyWaits(String id) {
      return "ran";
    }

    @Locked(name = "nested", reentrant = "true")
    public String reentrant(int depth) {
      return depth == 0 ? "done" : self.reentrant(depth - 1);
    }

    @Locked(name = "nested2", reentrant = "false")
    public String notReentrant(int depth) {
      return depth == 0 ? "done" : self.notReentrant(depth - 1);
    }

    @Locked(name = "short", lease = "100ms", renew = "false")
    public boolean unrenewedLeaseRunsOut() throws Exception {
      return lostWithin(CurrentLease.get().orElseThrow(), 3_000);
    }

    // a lease of 1 s watched for 3.5 leases: a renewal late by a few hundred ms on a loaded
    // machine must not count (a 100 ms lease watched for 400 ms once did)
    @Locked(name = "short", lease = "1s", renew = "true")
    public boolean renewedLeaseStays() throws Exception {
      return lostWithin(CurrentLease.get().orElseThrow(), 3_500);
    }

    private static boolean lostWithin(Lease lease, long millis) throws Exception {
      try {
        lease.lost().toCompletableFuture().get(millis, TimeUnit.MILLISECONDS);
        return true;
      } catch (java.util.concurrent.TimeoutException e) {
        return false;
      }
    }

    @Locked(name = "async", key = "#id")
    public CompletableFuture<String> later(String id, CompletableFuture<String> gate) {
      return gate.thenApply(v -> v + " " + CurrentLease.get().isPresent());
    }

    Orders self;
  }

  @Configuration
  static class App {
    @Bean
    Orders orders() {
      return new Orders();
    }

    @Bean
    Tenant tenant() {
      return new Tenant();
    }
  }

  private void withOrders(ThrowingConsumer<Orders> test) {
    runner
        .withUserConfiguration(App.class)
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              Orders orders = ctx.getBean(Orders.class);
              assertThat(org.springframework.aop.support.AopUtils.isAopProxy(orders))
                  .as("the service is proxied")
                  .isTrue();
              ((Orders)
                          ((org.springframework.aop.framework.Advised) orders)
                              .getTargetSource()
                              .getTarget())
                      .self =
                  orders;
              test.accept(orders);
            });
  }

  interface ThrowingConsumer<T> {
    void accept(T t) throws Exception;
  }

  @Test
  void keysAreSpelOverArgumentsRootAndBeansAndLiterals() {
    withOrders(
        o -> {
          assertThat(o.pay(42)).isEqualTo("pay:42");
          assertThat(o.composite(new Req("u7", "o9"))).isEqualTo("req:u7:o9");
          assertThat(o.rootAndBean()).isEqualTo("m:rootAndBean/t1");
          assertThat(o.literal()).isEqualTo("room:room#5");
          assertThat(o.noKey()).isEqualTo("fixed");
          assertThat(CurrentLease.get()).as("outside the method").isEmpty();
        });
  }

  @Test
  void theLockIsHeldDuringTheMethodAndReleasedAfter() {
    withOrders(
        o -> {
          o.pay(1);
          assertThat(o.seen()).containsExactly("pay:1 held");
          Optional<Lease> after = OTHER.lock("pay:1").tryAcquire();
          assertThat(after).as("the lock after the method returned").isPresent();
          after.get().release();
        });
  }

  @Test
  void aLeaseParameterIsFilledWithTheLease() {
    withOrders(o -> assertThat(o.withLease("x", null)).isPositive());
  }

  @Test
  void aNullOrEmptyKeyNamesTheExpressionAndTheMethod() {
    withOrders(
        o -> {
          assertThatThrownBy(() -> o.nullable(null))
              .isInstanceOf(IllegalArgumentException.class)
              .hasMessageContaining("'#id'")
              .hasMessageContaining("Orders.nullable(String)")
              .hasMessageContaining("null");
          assertThatThrownBy(() -> o.nullable(""))
              .isInstanceOf(IllegalArgumentException.class)
              .hasMessageContaining("''");
        });
  }

  @Test
  void aKeyThatFailsAtCallTimeNamesTheMethodAndTheExpression() {
    withOrders(
        o ->
            assertThatThrownBy(() -> o.navigate(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'#req.userId'")
                .hasMessageContaining(Orders.class.getName() + "#navigate")
                .hasMessageContaining("cannot be found on null")
                .hasCauseInstanceOf(org.springframework.expression.EvaluationException.class));
  }

  @Test
  void whenBusyItThrowsSkipsOrFallsBackAsAsked() {
    withOrders(
        o -> {
          Lease held = OTHER.lock("busy:b").acquire(Duration.ofSeconds(1));
          try {
            assertThatThrownBy(() -> o.busyThrows("b"))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining("lock 'busy:b' was busy")
                .hasMessageContaining("Orders.busyThrows(String)");
            assertThat(o.busySkips("b")).isNull();
            assertThat(o.busySkipsOptional("b")).isEmpty();
            assertThat(o.busyFallsBack("b")).isEqualTo("fallback b");
            assertThatThrownBy(() -> o.busyWaits("b"))
                .isInstanceOf(LockBusyException.class)
                .hasMessageContaining("300ms");
          } finally {
            held.release();
          }
          assertThat(o.busyThrows("b")).isEqualTo("ran");
          assertThat(o.busySkips("b")).isEqualTo("ran");
          assertThat(o.busySkipsOptional("b")).contains("ran");
          assertThat(o.busyFallsBack("b")).isEqualTo("ran");
        });
  }

  @Test
  void reentrantAndRenewDoWhatTheySay() {
    withOrders(
        o -> {
          assertThat(o.reentrant(2)).isEqualTo("done");
          assertThatThrownBy(() -> o.notReentrant(1))
              .isInstanceOf(LockBusyException.class)
              .hasMessageContaining("nested2");
          assertThat(o.unrenewedLeaseRunsOut())
              .as("a 100ms lease with renew=false is lost")
              .isTrue();
          assertThat(o.renewedLeaseStays())
              .as("a 1s lease with renew=true is lost within 3.5s")
              .isFalse();
        });
  }

  @Test
  void aCompletableFutureHoldsTheLockUntilItCompletes() {
    withOrders(
        o -> {
          CompletableFuture<String> gate = new CompletableFuture<>();
          CompletableFuture<String> result = o.later("a", gate);
          assertThat(OTHER.lock("async:a").tryAcquire())
              .as("while the future is pending")
              .isEmpty();
          gate.complete("done");
          assertThat(result.get(5, TimeUnit.SECONDS)).isEqualTo("done false");
          Optional<Lease> after = OTHER.lock("async:a").tryAcquire();
          assertThat(after).as("once the returned future completed").isPresent();
          after.get().release();
        });
  }

  // ---------------------------------------------------------------- misuse fails the start

  private void failsToStart(Class<?> config, String... expected) {
    runner
        .withUserConfiguration(config)
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              Throwable root = ctx.getStartupFailure();
              StringBuilder all = new StringBuilder();
              for (Throwable t = root; t != null; t = t.getCause()) {
                all.append(t.getMessage()).append('\n');
              }
              for (String e : expected) {
                assertThat(all.toString()).contains(e);
              }
            });
  }

  /** Bad SpEL. */
  public static class BadSpel {
    @Locked(name = "x", key = "#id +")
    public void run(String id) {}
  }

  /** A variable that is no argument. */
  public static class UnknownArg {
    @Locked(name = "x", key = "#orderld")
    public void run(String orderId) {}
  }

  /** Private: a proxy cannot see it. */
  public static class PrivateMethod {
    @Locked(name = "x")
    private void run() {}
  }

  /** Final: a proxy cannot override it. */
  public static class FinalMethod {
    @Locked(name = "x")
    public final void run() {}
  }

  /** A reactive publisher would be released before its work runs. */
  public static class Reactive {
    @Locked(name = "x")
    public Flow.Publisher<String> run() {
      return null;
    }
  }

  /** A plain Future cannot be awaited without blocking. */
  public static class PlainFuture {
    @Locked(name = "x")
    public Future<String> run() {
      return null;
    }
  }

  /** SKIP cannot return null for an int. */
  public static class SkipPrimitive {
    @Locked(name = "x", onBusy = Locked.OnBusy.SKIP)
    public int run() {
      return 1;
    }
  }

  /** A fallback that does not exist, and a bad duration. */
  public static class BadFallbackAndWait {
    @Locked(name = "x", onBusy = Locked.OnBusy.FALLBACK, fallback = "nope", waitFor = "soon")
    public String run(String id) {
      return id;
    }
  }

  static <T> Class<?> app(Class<T> type) {
    return type;
  }

  @Test
  void badAnnotationsFailTheStartNamingTheMethod() {
    failsToStart(
        BadSpel.class,
        "@Locked on dev.locksmith.spring.LockedTest$BadSpel.run(String)",
        "`key` was '#id +'",
        "not a valid SpEL expression");
    failsToStart(
        UnknownArg.class,
        "UnknownArg.run(String)",
        "[#orderld]",
        "not an argument of the method",
        "[orderId]");
    failsToStart(PrivateMethod.class, "PrivateMethod.run()", "the method is private");
    failsToStart(FinalMethod.class, "FinalMethod.run()", "the method is final");
    failsToStart(
        Reactive.class,
        "Reactive.run()",
        "reactive type",
        "released when the publisher is returned");
    failsToStart(
        PlainFuture.class,
        "PlainFuture.run()",
        "java.util.concurrent.Future",
        "return CompletableFuture");
    failsToStart(
        SkipPrimitive.class,
        "SkipPrimitive.run()",
        "onBusy = SKIP returns null, but the method returns int");
    failsToStart(
        BadFallbackAndWait.class,
        "BadFallbackAndWait.run(String)",
        "`fallback` was 'nope'",
        "no method nope(String)",
        "`waitFor` was 'soon'");
  }
}
