package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 10: FIFO fairness, as tests: the rules of this group in {@code RULES.md}. The kit's
 * {@code @Nested} class {@link LockCompatibilityKit.Fairness} runs them against the backend under
 * test. Every rule here needs {@link Feature#FIFO_FAIRNESS}: without it each is skipped with that
 * reason.
 */
@RequiresFeature(Feature.FIFO_FAIRNESS)
interface FairnessRules extends KitRules {
  /**
   * Queues waiters one after another, each parked before the next starts; each records its index
   * when granted.
   */
  private List<Thread> queue(String name, List<DistributedLock> locks, List<Integer> order)
      throws InterruptedException {
    List<Thread> waiters = new ArrayList<>();
    for (int i = 0; i < locks.size(); i++) {
      int me = i;
      DistributedLock lock = locks.get(i);
      int polled = probe().polls(name);
      Thread t =
          background(
              "fifo-" + i,
              () -> {
                try (Lease l = lock.acquire(Duration.ofSeconds(60))) {
                  order.add(me);
                }
              });
      awaitQueued(t, name, polled, "waiter " + i + " queues");
      waiters.add(t);
    }
    return waiters;
  }

  private void joinAll(List<Thread> waiters) throws InterruptedException {
    for (Thread t : waiters) {
      t.join(TimeUnit.SECONDS.toMillis(30));
    }
  }

  @Test
  @DisplayName("10.1 MUST: twelve waiters acquire in the order they started waiting")
  default void rule10_1_firstComeFirstServed() throws Exception {
    String name = name("fifo");
    Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
    List<DistributedLock> locks = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      locks.add(client().lock(name));
    }
    List<Integer> order = Collections.synchronizedList(new ArrayList<>());
    List<Thread> waiters = queue(name, locks, order);
    assertThat(lease.release()).isTrue();
    joinAll(waiters);
    assertThat(order)
        .withFailMessage(
            "FIFO broken: waiters that queued in order 0..11 acquired in order %s "
                + "(a queue ordered by unpadded numbers puts 10 before 9)",
            order)
        .containsExactly(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
  }

  @Test
  @DisplayName("10.2 MUST: a waiter that polls again while it waits keeps its place")
  default void rule10_2_repollingKeepsItsPlace() throws Exception {
    String name = name("fifo-repoll");
    Lease lease = client(longLease()).lock(name).acquire(Duration.ofSeconds(10));
    List<DistributedLock> locks = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      // waiters 0 and 2 poll again every 20 ms, at the head of the queue and in its middle
      locks.add((i % 2 == 0 ? client(renewing(), Duration.ofMillis(20)) : client()).lock(name));
    }
    List<Integer> order = Collections.synchronizedList(new ArrayList<>());
    List<Thread> waiters = queue(name, locks, order);
    int polled = probe().polls(name);
    await(
        Duration.ofSeconds(10),
        "the waiters poll again ten times",
        () -> probe().polls(name) >= polled + 10);
    assertThat(lease.release()).isTrue();
    joinAll(waiters);
    assertThat(order)
        .withFailMessage(
            "FIFO broken: waiters 0 and 2 polled again while they waited and lost their place: "
                + "waiters that queued in order [0, 1, 2, 3] acquired in order %s",
            order)
        .containsExactly(0, 1, 2, 3);
  }

  @Test
  @DisplayName("10.3 MUST: a newcomer never takes a just-released lock ahead of a queued waiter")
  default void rule10_3_noBarging() throws Exception {
    String name = name("fifo-barging");
    LockClient holder = client();
    DistributedLock newcomer = client().lock(name);
    DistributedLock queued = client().lock(name);
    for (int trial = 0; trial < 3; trial++) {
      Lease lease = holder.lock(name).acquire(Duration.ofSeconds(10));
      int polled = probe().polls(name);
      CompletableFuture<Lease> waiter =
          queued.acquireAsync(Duration.ofSeconds(60)); // keeps what it gets
      await(Duration.ofSeconds(10), "the waiter queues", () -> probe().polls(name) > polled);
      // hold the woken waiter's next poll until the newcomer has asked, so the newcomer asks
      // first on a loaded machine too: only the queue can then keep the lock for the waiter
      Thread tester = Thread.currentThread();
      CountDownLatch newcomerAsked = new CountDownLatch(1);
      probe()
          .onPoll(
              n -> {
                if (n.equals(name) && Thread.currentThread() != tester) {
                  try {
                    newcomerAsked.await(5, TimeUnit.SECONDS);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                }
              });
      Optional<Lease> barged;
      try {
        assertThat(lease.release()).isTrue();
        barged = newcomer.tryAcquire();
      } finally {
        newcomerAsked.countDown();
        probe().onPoll(null);
      }
      barged.ifPresent(Lease::release);
      assertThat(barged)
          .withFailMessage(
              "FIFO broken: a newcomer's tryAcquire() took the lock the moment it was released, "
                  + "ahead of a waiter queued for it (barging; trial %d)",
              trial + 1)
          .isEmpty();
      Lease next = waiter.get(limits().tolerance().toMillis(), TimeUnit.MILLISECONDS);
      assertThat(next.release()).as("FIFO broken: the queued waiter's release").isTrue();
    }
  }

  @Test
  @DisplayName("10.4 MUST: a waiter that gives up in the middle of the queue leaves it")
  default void rule10_4_withdrawnWaiterLeavesTheQueue() throws Exception {
    String name = name("fifo-withdrawn");
    Lease lease = client().lock(name).acquire(Duration.ofSeconds(10));
    List<Integer> order = Collections.synchronizedList(new ArrayList<>());
    List<Thread> first = queue(name, List.of(client().lock(name)), order);
    int polled = probe().polls(name);
    CompletableFuture<Lease> middle = client().lock(name).acquireAsync(Duration.ofSeconds(60));
    await(Duration.ofSeconds(10), "the middle waiter queues", () -> probe().polls(name) > polled);
    AtomicLong lastGrantedAt = new AtomicLong();
    DistributedLock lastLock = client().lock(name);
    int polledBeforeLast = probe().polls(name);
    Thread last =
        background(
            "fifo-last",
            () -> {
              try (Lease l = lastLock.acquire(Duration.ofSeconds(60))) {
                lastGrantedAt.set(System.nanoTime());
                order.add(2);
              }
            });
    awaitQueued(last, name, polledBeforeLast, "the last waiter queues");
    int withdrawn = probe().abandons(name);
    assertThat(middle.cancel(true)).isTrue();
    await(
        Duration.ofSeconds(10),
        "the middle waiter withdraws",
        () -> probe().abandons(name) > withdrawn);
    long released = System.nanoTime();
    assertThat(lease.release()).isTrue();
    joinAll(first);
    last.join(limits().tolerance().multipliedBy(2).toMillis());
    assertThat(
            lastGrantedAt.get() != 0
                && ms(lastGrantedAt.get() - released) <= limits().tolerance().toMillis())
        .withFailMessage(
            "FIFO broken: a waiter that gave up in the middle of the queue still stood in line:"
                + " the waiter behind it %s",
            lastGrantedAt.get() == 0
                ? "never got the lock"
                : "got the lock only "
                    + ms(lastGrantedAt.get() - released)
                    + " ms after the release")
        .isTrue();
    assertThat(order).as("FIFO broken: grant order").containsExactly(0, 2);
  }
}
