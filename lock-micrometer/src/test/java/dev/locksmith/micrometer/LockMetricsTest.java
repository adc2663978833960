package dev.locksmith.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.GiveUpScenario;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockEvents;
import dev.locksmith.Locks;
import dev.locksmith.local.LocalLockProvider;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** Every meter, tag and count of {@link LockMetrics}, on the local: backend. */
class LockMetricsTest {
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  private LockClient connect(String space, LockEvents events, Duration lease) {
    return Locks.connect(
        LockConfig.builder().uri("local:" + space).lease(lease).events(events).build());
  }

  private LockMetrics metrics(boolean lockNames) {
    return LockMetrics.builder(registry)
        .backend("local")
        .client("orders")
        .lockNameTag(lockNames)
        .build();
  }

  private long acquires(String outcome) {
    var timer =
        registry
            .find(LockMetrics.ACQUIRE)
            .tags("backend", "local", "client", "orders", "outcome", outcome)
            .timer();
    return timer == null ? 0 : timer.count();
  }

  private double held() {
    return registry
        .get(LockMetrics.HELD)
        .tags("backend", "local", "client", "orders")
        .gauge()
        .value();
  }

  private long holds(String outcome) {
    var timer = registry.find(LockMetrics.HOLD).tags("outcome", outcome).timer();
    return timer == null ? 0 : timer.count();
  }

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline).as("within 5 s: " + what).isNegative();
      Thread.sleep(2);
    }
  }

  /** The acquire timer's outcome tag of each of {@link GiveUpScenario#NAMES}. */
  private static final Map<String, String> OUTCOMES =
      Map.of(
          "busy", "timeout",
          "timeout", "timeout",
          "interrupted", "interrupted",
          "cancelled", "cancelled",
          "closed", "error");

  /** The count of that outcome once the name has given up (busy and timeout share a tag). */
  private static final Map<String, Long> COUNTS =
      Map.of("busy", 1L, "timeout", 2L, "interrupted", 1L, "cancelled", 1L, "closed", 1L);

  @Test
  void theAcquireTimerCountsEachOutcomeUnderItsOwnTag() throws Exception {
    try (LockClient holder = Locks.connect("local:m-outcomes");
        LockClient c = connect("m-outcomes", metrics(false), Duration.ofSeconds(30))) {
      // kept to the end: a lease dropped by its code is released once collected, and counted
      Lease free = c.lock("free").acquire(Duration.ofSeconds(1));
      GiveUpScenario.run(
          holder,
          c,
          // not a timing assertion: an interrupt or a cancel that lands before the wait starts
          // gives up the same way, and counts under the same outcome
          name -> Thread.sleep(50),
          name -> await(name + " counted", () -> acquires(OUTCOMES.get(name)) == COUNTS.get(name)));
      java.lang.ref.Reference.reachabilityFence(free);
    }
    assertThat(acquires("acquired")).isEqualTo(1);
    assertThat(acquires("timeout")).isEqualTo(2);
    assertThat(acquires("interrupted")).isEqualTo(1);
    assertThat(acquires("cancelled")).isEqualTo(1);
    assertThat(
            registry
                .get(LockMetrics.ACQUIRE)
                .tags("outcome", "timeout")
                .timer()
                .totalTime(TimeUnit.MILLISECONDS))
        .as("the " + GiveUpScenario.TIMEOUT.toMillis() + " ms acquire waited at least that long")
        .isGreaterThanOrEqualTo(GiveUpScenario.TIMEOUT.toMillis());
  }

  @Test
  void theGaugeFollowsLeasesHeldAndTheHoldTimerTheirEnd() throws Exception {
    try (LockClient c =
        connect(
            "m-gauge",
            metrics(false),
            Duration.ofMillis(300))) { // renewed often: a revoke is seen soon
      assertThat(held()).as("the gauge before any lease").isZero();
      Lease a = c.lock("a").acquire(Duration.ofSeconds(1));
      Lease b = c.lock("b").acquire(Duration.ofSeconds(1));
      Lease again =
          c.lock("a").acquire(Duration.ofSeconds(1)); // reentrant: the same lease, not another
      await("2 held", () -> held() == 2);
      again.release();
      a.release();
      await("1 held", () -> held() == 1);
      assertThat(holds("released")).isEqualTo(1);
      LocalLockProvider.revoke("m-gauge", "b");
      b.lost().toCompletableFuture().get(5, TimeUnit.SECONDS);
      await("0 held", () -> held() == 0);
      await("one hold ended by loss", () -> holds("lost") == 1);
      assertThat(registry.get(LockMetrics.LOST).tags("reason", "taken").counter().count())
          .isEqualTo(1);
      assertThat(b.release()).isFalse();
      Thread.sleep(
          50); // a release of a lost lease must not be counted: give a wrong event time to land
      assertThat(held()).as("the gauge after releasing a lost lease").isZero();
      assertThat(holds("released") + holds("lapsed")).isEqualTo(1);
    }
  }

  @Test
  void closingTheClientCountsItsLeasesLostAsClientClosed() throws Exception {
    LockClient c = connect("m-close", metrics(false), Duration.ofSeconds(30));
    Lease x = c.lock("x").acquire(Duration.ofSeconds(1));
    c.close();
    java.lang.ref.Reference.reachabilityFence(x); // held until the close, not dropped before it
    await(
        "lost client_closed",
        () ->
            registry.find(LockMetrics.LOST).tags("reason", "client_closed").counter() != null
                && registry.get(LockMetrics.LOST).tags("reason", "client_closed").counter().count()
                    > 0);
    assertThat(registry.get(LockMetrics.LOST).tags("reason", "client_closed").counter().count())
        .isEqualTo(1);
    assertThat(held()).isZero();
  }

  @Test
  void renewalsAreCountedBySuccess() throws Exception {
    try (LockClient c = connect("m-renew", metrics(false), Duration.ofMillis(150))) {
      Lease lease = c.lock("r").acquire(Duration.ofSeconds(1));
      await(
          "two renewals",
          () -> {
            var counter = registry.find(LockMetrics.RENEWALS).tags("outcome", "success").counter();
            return counter != null && counter.count() >= 2;
          });
      assertThat(registry.get(LockMetrics.RENEWALS).tags("outcome", "failure").counter().count())
          .isZero();
      lease.release();
    }
  }

  /** A dashboard or alert built on day one finds every series before its first event, at zero. */
  @Test
  void everyMeterExistsAtZeroBeforeItsFirstEvent() {
    metrics(false);
    for (String outcome : List.of("acquired", "timeout", "interrupted", "cancelled", "error")) {
      assertThat(
              registry
                  .get(LockMetrics.ACQUIRE)
                  .tags("backend", "local", "client", "orders", "outcome", outcome)
                  .timer()
                  .count())
          .as("acquire timer, outcome %s", outcome)
          .isZero();
    }
    for (String outcome : List.of("released", "lapsed", "lost")) {
      assertThat(registry.get(LockMetrics.HOLD).tags("outcome", outcome).timer().count())
          .as("hold timer, outcome %s", outcome)
          .isZero();
    }
    for (String reason :
        List.of("expired", "taken", "renewal_failed", "session_lost", "client_closed")) {
      assertThat(registry.get(LockMetrics.LOST).tags("reason", reason).counter().count())
          .as("lost, reason %s", reason)
          .isZero();
    }
    for (String outcome : List.of("success", "failure")) {
      assertThat(registry.get(LockMetrics.RENEWALS).tags("outcome", outcome).counter().count())
          .as("renewals, %s", outcome)
          .isZero();
    }
    assertThat(held()).isZero();
  }

  /**
   * With lock names as tags every series of a name has the tag: none is registered before a lock is
   * named.
   */
  @Test
  void withLockNamesNothingIsRegisteredWithoutTheLockTag() {
    metrics(true);
    assertThat(registry.find(LockMetrics.LOST).counters()).isEmpty();
    assertThat(registry.find(LockMetrics.ACQUIRE).timers()).isEmpty();
  }

  @Test
  void theLockNameIsATagOnlyWhenAskedFor() throws Exception {
    try (LockClient c = connect("m-names-off", metrics(false), Duration.ofSeconds(30))) {
      c.lock("order-1").acquire(Duration.ofSeconds(1)).release();
      await("hold recorded", () -> holds("released") == 1);
    }
    assertThat(registry.getMeters())
        .isNotEmpty()
        .allSatisfy(m -> assertThat(tagKeys(m)).doesNotContain("lock"));

    MeterRegistry named = new SimpleMeterRegistry();
    LockMetrics withNames =
        LockMetrics.builder(named).backend("local").client("orders").lockNameTag(true).build();
    try (LockClient c = connect("m-names-on", withNames, Duration.ofSeconds(30))) {
      Lease lease = c.lock("order-1").acquire(Duration.ofSeconds(1));
      await(
          "per-lock gauge at 1",
          () ->
              named.find(LockMetrics.HELD).tags("lock", "order-1").gauge() != null
                  && named.find(LockMetrics.HELD).tags("lock", "order-1").gauge().value() == 1);
      lease.release();
      await(
          "acquire and hold tagged",
          () ->
              named.find(LockMetrics.HOLD).tags("lock", "order-1", "outcome", "released").timer()
                  != null);
      assertThat(
              named
                  .get(LockMetrics.ACQUIRE)
                  .tags(
                      "lock",
                      "order-1",
                      "outcome",
                      "acquired",
                      "backend",
                      "local",
                      "client",
                      "orders")
                  .timer()
                  .count())
          .isEqualTo(1);
    }
  }

  @Test
  void anotherListenerStillHearsEveryEvent() throws Exception {
    List<String> heard = new CopyOnWriteArrayList<>();
    LockMetrics chained =
        LockMetrics.builder(registry)
            .then(
                new LockEvents() {
                  @Override
                  public void acquired(String name, long token, Duration waited) {
                    heard.add("acquired " + name);
                  }

                  @Override
                  public void released(String name, long token, Duration held, boolean stillHeld) {
                    heard.add("released " + name);
                  }
                })
            .build();
    try (LockClient c = connect("m-then", chained, Duration.ofSeconds(30))) {
      c.lock("t").acquire(Duration.ofSeconds(1)).release();
      await("both events passed on", () -> heard.size() == 2);
    }
    assertThat(heard).containsExactly("acquired t", "released t");
    assertThat(
            registry
                .get(LockMetrics.ACQUIRE)
                .tags("backend", "unknown", "client", "default")
                .timer()
                .count())
        .isEqualTo(1);
  }

  @Test
  void badArgumentsAreNamed() {
    assertThatThrownBy(() -> LockMetrics.builder(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`registry` was null");
    assertThatThrownBy(() -> LockMetrics.builder(registry).backend(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`backend` was ' '");
    assertThatThrownBy(() -> LockMetrics.builder(registry).client(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`client` was null");
    assertThatThrownBy(() -> LockMetrics.builder(registry).then(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`events` was null");
  }

  private static List<String> tagKeys(Meter m) {
    return m.getId().getTags().stream().map(Tag::getKey).toList();
  }
}
