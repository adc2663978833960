package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 1: mutual exclusion, as tests: the rules of this group in {@code RULES.md}. The kit's
 * {@code @Nested} class {@link LockCompatibilityKit.MutualExclusion} runs them against the backend
 * under test.
 */
interface MutualExclusionRules extends KitRules {
  @Test
  @DisplayName(
      "1.1 MUST: at most one holder at a time, under contention from 8 threads over 2 clients")
  default void rule1_1_atMostOneHolderUnderContention() throws Exception {
    LockClient[] cs = {client(), client()};
    String name = name("contended");
    int threadCount = 8;
    int perThread = 250;
    // the run's bound is 60 tolerances, or 10 times the pace of the same acquisitions taken one
    // after another by one thread just before, if that is longer: a correct backend on a machine
    // loaded several times over is slow in both, while a backend that hands a released lock on
    // late (a waiter that is never woken and polls) is slow only under contention
    long pace = uncontendedPaceNanos(cs[0], name("pace"));
    long budget = Math.max(limits().tolerance().multipliedBy(60).toNanos(), 10 * pace * 2_000);
    long deadline = System.nanoTime() + budget;
    // and it fails sooner when no acquisition finishes for 20 tolerances while contenders wait
    long stallBudget = limits().tolerance().multipliedBy(20).toNanos();
    AtomicInteger counter = new AtomicInteger();
    AtomicInteger done = new AtomicInteger();
    HoldLog holds = new HoldLog();
    List<String> contenderErrors = new CopyOnWriteArrayList<>();
    AtomicInteger unavailable = new AtomicInteger();
    AtomicBoolean interrupted = new AtomicBoolean();
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threadCount; t++) {
      int clientIndex = t % cs.length;
      DistributedLock lock = cs[clientIndex].lock(name);
      Thread w =
          new Thread(
              () -> {
                try {
                  go.await();
                  int held = 0;
                  while (held < perThread && System.nanoTime() - deadline < 0) {
                    Optional<Lease> got;
                    try {
                      got =
                          lock.tryAcquire(
                              Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
                    } catch (BackendUnavailableException e) {
                      // a server too slow under this load is not this rule's property: the
                      // attempt was
                      // withdrawn, nothing is held; try again, and report it only if the run
                      // cannot finish
                      unavailable.incrementAndGet();
                      continue;
                    }
                    if (got.isEmpty()) {
                      break;
                    }
                    try (Lease lease = got.get()) {
                      long start = System.nanoTime();
                      int seen =
                          counter
                              .get(); // an unguarded read-modify-write: only the lock protects it
                      Thread.yield();
                      counter.set(seen + 1);
                      done.incrementAndGet();
                      holds.record(clientIndex, lease.fencingToken(), start, System.nanoTime());
                    }
                    held++;
                  }
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                } catch (Throwable e) {
                  if (!interrupted.get()) { // what the kit's own interrupt caused is not reported
                    contenderErrors.add(Thread.currentThread().getName() + ": " + e);
                  }
                }
              },
              "tck-contender-" + t);
      w.setDaemon(true);
      threads().add(w);
      workers.add(w);
      w.start();
    }
    go.countDown();
    int lastDone = -1;
    long lastProgress = System.nanoTime();
    String stopped = null;
    while (workers.stream().anyMatch(Thread::isAlive)) {
      Thread.sleep(50);
      long now = System.nanoTime();
      int d = done.get();
      if (d != lastDone) {
        lastDone = d;
        lastProgress = now;
      } else if (now - lastProgress > stallBudget) {
        stopped =
            "none for the last "
                + TimeUnit.NANOSECONDS.toSeconds(now - lastProgress)
                + " s while contenders waited";
      }
      if (stopped == null && now - deadline > 0) {
        stopped =
            String.format(
                "not within the run's bound of %d s (60 tolerances, or 10 times the %.2f ms one"
                    + " thread took per acquisition and release alone, if longer)",
                TimeUnit.NANOSECONDS.toSeconds(budget), pace / 1e6);
      }
      if (stopped != null) {
        interrupted.set(true);
        workers.forEach(Thread::interrupt);
        break;
      }
    }
    for (Thread w : workers) {
      w.join(limits().tolerance().multipliedBy(5).toMillis());
    }
    // the property first, whatever else went wrong: lost updates and overlapping holds
    List<String> problems = new ArrayList<>();
    int lost = done.get() - counter.get();
    if (lost != 0) {
      problems.add(
          "mutual exclusion broken: "
              + lost
              + " of "
              + done.get()
              + " unguarded increments were lost (two holders at once)");
    }
    String overlap = holds.firstOverlap();
    if (overlap != null) {
      problems.add("mutual exclusion broken: holds overlapped: " + overlap);
    }
    if (cs[0].guarantees().has(Feature.FENCING)) {
      String inversion = holds.firstTokenInversion();
      if (inversion != null) {
        problems.add("fencing broken under contention: " + inversion);
      }
    }
    if (!contenderErrors.isEmpty()) {
      problems.add(
          "liveness broken: contenders failed: "
              + contenderErrors.subList(0, Math.min(3, contenderErrors.size()))
              + (contenderErrors.size() > 3
                  ? " and " + (contenderErrors.size() - 3) + " more"
                  : ""));
    }
    long alive = workers.stream().filter(Thread::isAlive).count();
    if (done.get() < threadCount * perThread && contenderErrors.isEmpty()) {
      problems.add(
          "liveness broken: only "
              + done.get()
              + " of "
              + threadCount * perThread
              + " acquisitions finished: "
              + (stopped != null ? stopped : "a contender gave up before its wait ended")
              + (alive > 0 ? " (" + alive + " contenders still blocked after an interrupt)" : "")
              + (unavailable.get() > 0
                  ? "; " + unavailable.get() + " attempts found the server unavailable"
                  : ""));
    }
    if (!problems.isEmpty()) {
      fail(String.join("; ", problems));
    }
  }

  /**
   * @return the nanoseconds one thread takes per acquisition and release of a free lock, over 50 of
   *     them (attempts that find the server unavailable are not counted)
   */
  private static long uncontendedPaceNanos(LockClient client, String name) throws Exception {
    DistributedLock lock = client.lock(name);
    long start = System.nanoTime();
    int taken = 0;
    int unavailable = 0;
    while (taken < 50 && unavailable < 50) {
      try {
        Optional<Lease> got = lock.tryAcquire(Duration.ofSeconds(10));
        if (got.isEmpty()) {
          break;
        }
        got.get().close();
        taken++;
      } catch (BackendUnavailableException e) {
        unavailable++;
      }
    }
    return (System.nanoTime() - start) / Math.max(1, taken);
  }

  @Test
  @DisplayName(
      "1.2 MUST: clients racing for a free lock at the same instant: never more than one winner")
  default void rule1_2_simultaneousRaceHasOneWinner() throws Exception {
    int n = 8;
    LockClient[] cs = new LockClient[n];
    for (int i = 0; i < n; i++) {
      cs[i] = client();
    }
    String base = name("race");
    long budget = limits().tolerance().multipliedBy(3).toNanos();
    long start = System.nanoTime();
    int rounds = 0;
    int won = 0;
    ExecutorService pool =
        Executors.newFixedThreadPool(
            n,
            r -> {
              Thread t = new Thread(r, "tck-racer");
              t.setDaemon(true);
              return t;
            });
    try {
      for (; rounds < 200 && (rounds < 20 || System.nanoTime() - start < budget); rounds++) {
        String lockName = base + "/" + rounds;
        AtomicLong goAt = new AtomicLong();
        CyclicBarrier ready = new CyclicBarrier(n, () -> goAt.set(System.nanoTime() + 300_000));
        List<Future<Optional<Lease>>> racers = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          DistributedLock lock = cs[i].lock(lockName);
          racers.add(
              pool.submit(
                  () -> {
                    ready.await(10, TimeUnit.SECONDS);
                    while (System.nanoTime() - goAt.get() < 0) {
                      Thread.onSpinWait(); // all start together, so a check-then-set in two steps
                      // overlaps
                    }
                    return lock.tryAcquire();
                  }));
        }
        List<Lease> winners = new ArrayList<>();
        for (Future<Optional<Lease>> f : racers) {
          f.get(30, TimeUnit.SECONDS).ifPresent(winners::add);
        }
        for (Lease l : winners) {
          l.release();
        }
        if (winners.size() > 1) {
          fail(
              "mutual exclusion broken: "
                  + winners.size()
                  + " of "
                  + n
                  + " clients that raced for the free lock '"
                  + lockName
                  + "' at the same instant were all granted it (round "
                  + (rounds + 1)
                  + "; tokens "
                  + winners.stream()
                      .map(l -> Long.toString(l.fencingToken()))
                      .collect(Collectors.joining(", "))
                  + "): taking a lock must be one atomic check-and-set on the server");
        }
        won += winners.size();
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(won)
        .withFailMessage(
            "liveness broken: in %d races for a free lock nobody was ever granted it", rounds)
        .isPositive();
  }
}
