package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.spi.Claim;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 11: notified wake-up, as tests: the rules of this group in {@code RULES.md}. The kit's
 * {@code @Nested} class {@link LockCompatibilityKit.WakeUp} runs them against the backend under
 * test. Every rule here needs {@link Feature#NOTIFIED_WAKEUP}: without it each is skipped with that
 * reason.
 */
@RequiresFeature(Feature.NOTIFIED_WAKEUP)
interface WakeUpRules extends KitRules {
  @Test
  @DisplayName(
      "11.1 MUST: a waiter in another client gets a released lock within the wake-up bound"
          + " (median of 10, released at random moments)")
  default void rule11_1_waiterIsWokenByTheRelease() throws Exception {
    String name = name("wake");
    LockClient holderClient = client();
    LockClient waiterClient = client();
    Random random = new Random();
    List<Long> handOffs = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      Lease lease = holderClient.lock(name).acquire(Duration.ofSeconds(10));
      AtomicReference<Long> grantedAt = new AtomicReference<>();
      DistributedLock lock = waiterClient.lock(name);
      int polled = probe().polls(name);
      Thread waiter =
          background(
              "wake-" + i,
              () -> {
                try (Lease l = lock.acquire(Duration.ofSeconds(30))) {
                  grantedAt.set(System.nanoTime());
                }
              });
      awaitQueued(waiter, name, polled, "the waiter blocks");
      Thread.sleep(
          random.nextInt(
              100)); // a random phase: a polling loop's hand-off is then half its period on
      // average
      long releasedAt = System.nanoTime();
      assertThat(lease.release()).isTrue();
      waiter.join(TimeUnit.SECONDS.toMillis(30));
      assertThat(grantedAt.get())
          .as("notified wake-up broken: hand-off " + i + " happened")
          .isNotNull();
      handOffs.add(grantedAt.get() - releasedAt);
      if (handOffs.stream().filter(h -> ms(h) > limits().wakeUp().toMillis()).count() > 5) {
        break; // the median is already over the bound
      }
    }
    Collections.sort(handOffs);
    long median = ms(handOffs.get(handOffs.size() / 2));
    assertThat(median)
        .withFailMessage(
            "notified wake-up broken: median hand-off from release to the waiter's grant was %d"
                + " ms (bound %d ms); all hand-offs in ms: %s",
            median,
            limits().wakeUp().toMillis(),
            handOffs.stream().map(n -> ms(n)).collect(Collectors.toList()))
        .isLessThanOrEqualTo(limits().wakeUp().toMillis());
  }

  @Test
  @DisplayName(
      "11.2 MUST: a waiter sleeps until it is woken: while the lock stays held it polls about"
          + " once per recheck interval, not in a loop")
  default void rule11_2_waiterDoesNotPoll() throws Exception {
    String name = name("no-polling");
    Lease lease = client(longLease()).lock(name).acquire(Duration.ofSeconds(10));
    LockClient waiterClient = client();
    Duration recheck = waiterClient.config().recheck();
    int before = probe().polls(name);
    DistributedLock lock = waiterClient.lock(name);
    Thread waiter =
        background(
            "patient",
            () -> {
              try (Lease l = lock.acquire(Duration.ofSeconds(60))) {
                l.isValid();
              }
            });
    awaitQueued(waiter, name, before, "the waiter blocks");
    int settled = settledPolls(() -> probe().polls(name), recheck);
    long from = System.nanoTime();
    Thread.sleep(limits().tolerance().multipliedBy(2).toMillis());
    int polls = probe().polls(name) - settled;
    long watchedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - from);
    String timeline = probe().pollTimeline(name, Claim.Kind.EXCLUSIVE, from);
    long allowed = allowedPolls(watchedMs, recheck);
    assertThat(lease.release()).isTrue();
    waiter.join(TimeUnit.SECONDS.toMillis(30));
    assertThat((long) polls)
        .withFailMessage(
            "notified wake-up broken: a waiter polled %d times in %d ms while the lock stayed"
                + " held, once it had settled (at most %d: one per recheck interval of %d ms, one"
                + " more for where the interval falls, one to spare): a waiter must sleep until a"
                + " release wakes it, not poll in a loop; the polls came back at %s",
            polls, watchedMs, allowed, recheck.toMillis(), timeline)
        .isLessThanOrEqualTo(allowed);
  }

  @Test
  @DisplayName(
      "11.3 MUST: a release that lands while the waiter is polling still wakes it (no lost"
          + " wake-up)")
  default void rule11_3_noLostWakeUp() throws Exception {
    String base = name("lost-wakeup");
    LockClient holderClient = client(longLease());
    LockClient waiterClient =
        client(renewing(), Duration.ofMinutes(1)); // only a wake-up can hand the lock over in time
    Duration bound = limits().tolerance();
    Random random = new Random();
    for (int trial = 0; trial < 30; trial++) {
      String lockName = base + "/" + trial;
      Lease lease = holderClient.lock(lockName).acquire(Duration.ofSeconds(10));
      CountDownLatch polling = new CountDownLatch(1);
      long window = Math.max(50_000, 2 * probe().lastPollNanos());
      long delay = (long) (random.nextDouble() * window);
      AtomicLong releasedAt = new AtomicLong();
      probe()
          .onPoll(
              n -> {
                if (n.equals(lockName)) {
                  polling.countDown();
                }
              });
      Thread releaser =
          background(
              "releaser-" + trial,
              () -> {
                polling.await(10, TimeUnit.SECONDS);
                spin(delay); // somewhere inside the waiter's poll: between its read of the lock
                // and its subscription
                lease.release();
                releasedAt.set(System.nanoTime());
              });
      Optional<Lease> got = waiterClient.lock(lockName).tryAcquire(bound);
      long gotAt = System.nanoTime();
      probe().onPoll(null);
      releaser.join(TimeUnit.SECONDS.toMillis(10));
      got.ifPresent(Lease::release);
      // the core polls once more at the deadline, so judge by when the lock arrived, not only
      // whether
      long late = releasedAt.get() == 0 ? Long.MAX_VALUE : ms(gotAt - releasedAt.get());
      assertThat(got.isPresent() && late <= bound.toMillis() / 2)
          .withFailMessage(
              "notified wake-up broken: lost wake-up: the lock was released %d µs into the"
                  + " waiter's poll and the waiter %s (trial %d): a waiter must subscribe before"
                  + " it reads the lock, or read it again once subscribed",
              delay / 1000,
              got.isPresent()
                  ? "got it only " + late + " ms later, by its last poll at the deadline"
                  : "never got it",
              trial + 1)
          .isTrue();
    }
  }
}
