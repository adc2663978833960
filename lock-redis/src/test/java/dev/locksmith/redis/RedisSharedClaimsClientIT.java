package dev.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.DistributedLock;
import dev.locksmith.DistributedReadWriteLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Semaphores and read-write locks through the public API: two clients, eight threads, each
 * acquiring with a wait (woken by the release channel), counting who is inside at once. The counts
 * are exact invariants, not timings: never more than the permits inside, never a writer beside
 * anyone; and every token a thread got inside the write side is above every token handed out before
 * it entered.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisSharedClaimsClientIT {
  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("shared-claims");

  @Test
  void neverMoreThanThePermitsInsideAcrossTwoClients() throws Exception {
    int permits = 3;
    int threads = 8;
    int rounds = 15;
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    AtomicInteger entries = new AtomicInteger();
    try (LockClient a = Locks.connect(REDIS.server().uri() + "?recheck=200ms");
        LockClient b = Locks.connect(REDIS.server().uri() + "?recheck=200ms")) {
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          DistributedLock semaphore = (t % 2 == 0 ? a : b).semaphore("client-semaphore", permits);
          done.add(
              pool.submit(
                  () -> {
                    for (int i = 0; i < rounds; i++) {
                      try (Lease lease = semaphore.acquire(Duration.ofSeconds(30))) {
                        int now = inside.incrementAndGet();
                        most.accumulateAndGet(now, Math::max);
                        entries.incrementAndGet();
                        Thread.sleep(5);
                        inside.decrementAndGet();
                      }
                    }
                    return null;
                  }));
        }
        for (Future<?> f : done) {
          f.get(100, TimeUnit.SECONDS);
        }
      } finally {
        pool.shutdownNow();
      }
    }
    assertThat(entries.get()).as("entries").isEqualTo(threads * rounds);
    assertThat(most.get()).as("most holders inside at once").isBetween(2, permits);
  }

  @Test
  void aWriterIsAloneAndItsTokenIsAboveEveryEarlierOne() throws Exception {
    int threads = 8;
    int rounds = 15;
    AtomicInteger readers = new AtomicInteger();
    AtomicInteger writers = new AtomicInteger();
    AtomicInteger violations = new AtomicInteger();
    AtomicInteger writes = new AtomicInteger();
    AtomicLong highest = new AtomicLong();
    try (LockClient a = Locks.connect(REDIS.server().uri() + "?recheck=200ms");
        LockClient b = Locks.connect(REDIS.server().uri() + "?recheck=200ms")) {
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          DistributedReadWriteLock rw = (t % 2 == 0 ? a : b).readWriteLock("client-rw");
          boolean writer = t % 4 == 0;
          done.add(
              pool.submit(
                  () -> {
                    for (int i = 0; i < rounds; i++) {
                      if (writer) {
                        try (Lease lease = rw.writeLock().acquire(Duration.ofSeconds(30))) {
                          if (writers.incrementAndGet() != 1 || readers.get() != 0) {
                            violations.incrementAndGet();
                          }
                          if (lease.fencingToken()
                              <= highest.getAndAccumulate(lease.fencingToken(), Math::max)) {
                            violations.incrementAndGet();
                          }
                          writes.incrementAndGet();
                          Thread.sleep(5);
                          writers.decrementAndGet();
                        }
                      } else {
                        try (Lease lease = rw.readLock().acquire(Duration.ofSeconds(30))) {
                          readers.incrementAndGet();
                          if (writers.get() != 0) {
                            violations.incrementAndGet();
                          }
                          highest.accumulateAndGet(lease.fencingToken(), Math::max);
                          Thread.sleep(5);
                          readers.decrementAndGet();
                        }
                      }
                    }
                    return null;
                  }));
        }
        for (Future<?> f : done) {
          f.get(100, TimeUnit.SECONDS);
        }
      } finally {
        pool.shutdownNow();
      }
    }
    assertThat(writes.get()).as("write leases").isEqualTo(2 * rounds);
    assertThat(violations.get())
        .as("a writer beside anyone, or a write token not above every earlier one")
        .isZero();
  }
}
