package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.DistributedLock;
import dev.locksmith.DistributedReadWriteLock;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 19: read-write locks (rules 19.1 to 19.5; the others in {@link ReadWriteLockReleaseRules}),
 * as tests: the rules of this group in {@code RULES.md}. The kit's {@code @Nested} class {@link
 * LockCompatibilityKit.ReadWriteLocks} runs them against the backend under test. Every rule here
 * needs {@link Feature#READ_WRITE_LOCKS}: without it each is skipped with that reason.
 */
@RequiresFeature(Feature.READ_WRITE_LOCKS)
interface ReadWriteLockRules extends KitRules {
  @Test
  @DisplayName(
      "19.1 MUST: readers of 2 clients hold the lock at once; a writer excludes readers and"
          + " writers, and readers exclude a writer")
  default void rule19_1_readersShareWritersExclude() throws Exception {
    String name = name("rw-share");
    LockClient a = client();
    LockClient b = client();
    LockClient c = client();
    Lease r1 = read(a, name).acquire(Duration.ofSeconds(10));
    Optional<Lease> r2 = read(b, name).tryAcquire();
    assertThat(r2)
        .withFailMessage(
            "read-write locks broken: a reader of another client was refused while only a reader "
                + "held the lock: readers must share it")
        .isPresent();
    Optional<Lease> w = write(c, name).tryAcquire();
    w.ifPresent(Lease::release);
    assertThat(w)
        .withFailMessage(
            "read-write locks broken: a writer was granted while 2 readers held the lock")
        .isEmpty();
    assertThat(r1.release()).isTrue();
    w = write(c, name).tryAcquire();
    w.ifPresent(Lease::release);
    assertThat(w)
        .withFailMessage(
            "read-write locks broken: a writer was granted while 1 of 2 readers still held the"
                + " lock (a release freed the other reader's share too?)")
        .isEmpty();
    assertThat(r2.get().release()).isTrue();
    Optional<Lease> writer = write(c, name).tryAcquire();
    assertThat(writer)
        .withFailMessage(
            "read-write locks broken: the write lock could not be taken after both readers "
                + "released: a reader's release must give its share back")
        .isPresent();
    Optional<Lease> reader = read(a, name).tryAcquire();
    reader.ifPresent(Lease::release);
    assertThat(reader)
        .withFailMessage(
            "read-write locks broken: a reader was granted while a writer held the lock")
        .isEmpty();
    Optional<Lease> writer2 = write(b, name).tryAcquire();
    writer2.ifPresent(Lease::release);
    assertThat(writer2)
        .withFailMessage(
            "read-write locks broken: a second writer was granted while a writer held the lock")
        .isEmpty();
    assertThat(writer.get().release()).isTrue();
    Optional<Lease> after = read(b, name).tryAcquire();
    assertThat(after)
        .withFailMessage(
            "read-write locks broken: a reader could not get the lock after the writer released"
                + " it")
        .isPresent();
    after.get().release();
  }

  @Test
  @DisplayName(
      "19.2 MUST: under mixed contention from 2 clients a writer never overlaps anyone, readers"
          + " do overlap, and tokens follow the order of grants")
  default void rule19_2_mixedContention() throws Exception {
    String name = name("rw-contended");
    // short rechecks: without notified wake-up, waiters still look again often enough to contend
    LockClient[] cs = {
      client(renewing(), Duration.ofMillis(50)), client(renewing(), Duration.ofMillis(50))
    };
    long deadline = System.nanoTime() + limits().tolerance().toNanos();
    AtomicInteger readers = new AtomicInteger();
    AtomicInteger writers = new AtomicInteger();
    AtomicInteger peakReaders = new AtomicInteger();
    AtomicInteger writes = new AtomicInteger();
    AtomicReference<String> violation = new AtomicReference<>();
    // each hold: {kind (1 write, 0 read), token, asked, released}
    List<long[]> holds = new CopyOnWriteArrayList<>();
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < 6; t++) {
      boolean writer = t < 2;
      DistributedLock side = writer ? write(cs[t % 2], name) : read(cs[t % 2], name);
      workers.add(
          background(
              "rw-contender-" + t,
              () -> {
                go.await();
                while (System.nanoTime() - deadline < 0) {
                  long asked = System.nanoTime();
                  Optional<Lease> got;
                  try {
                    got = side.tryAcquire(Duration.ofNanos(Math.max(1, deadline - asked)));
                  } catch (BackendUnavailableException e) {
                    continue;
                  }
                  if (got.isEmpty()) {
                    break;
                  }
                  if (writer) {
                    int w = writers.incrementAndGet();
                    int r = readers.get();
                    if (w > 1 || r > 0) {
                      violation.compareAndSet(
                          null,
                          "a writer (token "
                              + got.get().fencingToken()
                              + ") held the lock with "
                              + (w - 1)
                              + " other writers and "
                              + r
                              + " readers");
                    }
                    Thread.sleep(2);
                    writers.decrementAndGet();
                    writes.incrementAndGet();
                  } else {
                    peakReaders.accumulateAndGet(readers.incrementAndGet(), Math::max);
                    if (writers.get() > 0) {
                      violation.compareAndSet(
                          null,
                          "a reader (token "
                              + got.get().fencingToken()
                              + ") held the lock with a writer");
                    }
                    Thread.sleep(8);
                    readers.decrementAndGet();
                  }
                  long token = got.get().fencingToken();
                  got.get().release();
                  holds.add(new long[] {writer ? 1 : 0, token, asked, System.nanoTime()});
                  if (writer) {
                    Thread.sleep(15); // leave readers room to overlap
                  }
                }
              }));
    }
    go.countDown();
    for (Thread w : workers) {
      w.join(limits().tolerance().multipliedBy(10).toMillis());
    }
    assertThat(violation.get())
        .withFailMessage(
            "read-write locks broken: under contention from 2 writers and 4 readers over 2"
                + " clients, %s: a write lease must exclude every other lease (a check and a take"
                + " that are not one atomic step?)",
            violation.get())
        .isNull();
    assertThat(writes.get())
        .withFailMessage(
            "read-write locks broken: 2 writers contending with 4 readers never got the "
                + "lock in %d ms",
            limits().tolerance().toMillis())
        .isPositive();
    assertThat(peakReaders.get())
        .withFailMessage(
            "read-write locks broken: 4 readers never held the lock together under "
                + "contention (%d holds): readers must share it",
            holds.size())
        .isGreaterThanOrEqualTo(2);
    if (guarantees().has(Feature.FENCING)) {
      for (long[] later : holds) {
        for (long[] earlier : holds) {
          // a lease released before the other was asked for was granted before it
          boolean ordered = earlier[3] - later[2] < 0 && (later[0] == 1 || earlier[0] == 1);
          if (ordered && earlier[1] >= later[1]) {
            fail(
                "fencing broken: a "
                    + (later[0] == 1 ? "write" : "read")
                    + " lease got token "
                    + later[1]
                    + " although a "
                    + (earlier[0] == 1 ? "write" : "read")
                    + " lease with token "
                    + earlier[1]
                    + " was released before it was asked for: a write token must be above every"
                    + " earlier lease's, a read token above every earlier write's (one counter"
                    + " per read-write lock)");
          }
        }
      }
    }
  }

  @Test
  @DisplayName(
      "19.3 MUST: a writer is not starved by a steady stream of overlapping readers: it gets the"
          + " lock within one recheck interval + 2 tolerances")
  default void rule19_3_noWriterStarvation() throws Exception {
    String name = name("rw-starve");
    LockClient[] cs = {client(), client()};
    int ring = 3;
    Duration hold = Duration.ofMillis(250);
    // a ring of readers: each holds until the next one has the lock (or for at most `hold`), so a
    // backend that lets readers in past a waiting writer always has a reader inside
    AtomicInteger readerHolds = new AtomicInteger();
    java.util.concurrent.atomic.AtomicBoolean stop =
        new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.Semaphore[] mayGo = new java.util.concurrent.Semaphore[ring];
    for (int i = 0; i < ring; i++) {
      mayGo[i] = new java.util.concurrent.Semaphore(i == 0 ? 1 : 0);
    }
    for (int i = 0; i < ring; i++) {
      int me = i;
      DistributedLock side = read(cs[i % 2], name);
      background(
          "rw-reader-" + i,
          () -> {
            while (!stop.get()) {
              mayGo[me].acquire();
              if (stop.get()) {
                return;
              }
              Optional<Lease> got = side.tryAcquire(Duration.ofSeconds(30));
              if (got.isEmpty()) {
                continue;
              }
              readerHolds.incrementAndGet();
              int before = readerHolds.get();
              mayGo[(me + 1) % ring].release(); // the next reader asks while this one holds
              long until = System.nanoTime() + hold.toNanos();
              while (readerHolds.get() == before && System.nanoTime() - until < 0) {
                Thread.sleep(1);
              }
              got.get().release();
            }
          });
    }
    await(Duration.ofSeconds(10), "readers take turns", () -> readerHolds.get() >= 10);
    LockClient writerClient = client(renewing(), Duration.ofMillis(250));
    Duration bound = writerClient.config().recheck().plus(limits().tolerance().multipliedBy(2));
    long start = System.nanoTime();
    int holdsBefore = readerHolds.get();
    Optional<Lease> w = write(writerClient, name).tryAcquire(bound);
    long took = ms(System.nanoTime() - start);
    int overtaken = readerHolds.get() - holdsBefore;
    stop.set(true);
    for (java.util.concurrent.Semaphore s : mayGo) {
      s.release();
    }
    assertThat(w.isPresent() && took <= bound.toMillis())
        .withFailMessage(
            "read-write locks broken: a writer waiting behind a steady stream of overlapping"
                + " readers %s (bound: its recheck interval + 2 tolerances = %d ms; %d readers"
                + " got in meanwhile): no new reader may be granted while a writer waits (writer"
                + " preference), or a writer can starve",
            w.isPresent() ? "got the lock only after " + took + " ms" : "never got the lock",
            bound.toMillis(),
            overtaken)
        .isTrue();
    assertThat(w.get().release()).isTrue();
    Optional<Lease> after = read(client(), name).tryAcquire();
    after.ifPresent(Lease::release);
    assertThat(after)
        .withFailMessage(
            "read-write locks broken: right after the writer that had waited released the lock, a"
                + " new reader's tryAcquire() was refused: a writer's mark must go when it is"
                + " granted, not linger until it expires")
        .isPresent();
  }

  @Test
  @DisplayName(
      "19.4 MUST: no upgrade or downgrade: a waiting acquire of the other side throws"
          + " IllegalStateException at once; tryAcquire() is empty")
  default void rule19_4_noUpgradeOrDowngrade() throws Exception {
    String name = name("rw-upgrade");
    DistributedReadWriteLock rw = client().readWriteLock(name);
    Lease r = rw.readLock().acquire(Duration.ofSeconds(10));
    long start = System.nanoTime();
    Throwable up = catchThrowable(() -> rw.writeLock().acquire(Duration.ofSeconds(5)));
    assertThat(up)
        .withFailMessage(
            "read-write locks broken: a thread holding the read lock asked for the write lock and"
                + " got %s instead of IllegalStateException",
            up == null ? "it" : up)
        .isInstanceOf(IllegalStateException.class);
    assertThat(ms(System.nanoTime() - start))
        .as("ms until the refused upgrade failed")
        .isLessThanOrEqualTo(limits().tolerance().toMillis());
    assertThat(rw.writeLock().tryAcquire())
        .as("read-write locks broken: tryAcquire() of the write lock while holding the read lock")
        .isEmpty();
    assertThat(r.release()).isTrue();
    Lease w = rw.writeLock().acquire(Duration.ofSeconds(10));
    start = System.nanoTime();
    Throwable down = catchThrowable(() -> rw.readLock().acquire(Duration.ofSeconds(5)));
    assertThat(down)
        .withFailMessage(
            "read-write locks broken: a thread holding the write lock asked for the read lock and"
                + " got %s instead of IllegalStateException",
            down == null ? "it" : down)
        .isInstanceOf(IllegalStateException.class);
    assertThat(ms(System.nanoTime() - start))
        .as("ms until the refused downgrade failed")
        .isLessThanOrEqualTo(limits().tolerance().toMillis());
    assertThat(rw.readLock().tryAcquire())
        .as("read-write locks broken: tryAcquire() of the read lock while holding the write lock")
        .isEmpty();
    assertThat(w.release()).isTrue();
    Optional<Lease> again = rw.readLock().tryAcquire();
    assertThat(again).as("the read lock after the write lock's release").isPresent();
    again.get().release();
  }

  @Test
  @DisplayName(
      "19.5 MUST: a write token is above every earlier lease's, and a read token above every"
          + " earlier write's")
  default void rule19_5_tokens() throws Exception {
    requireFeature(Feature.FENCING, "19.5");
    String name = name("rw-tokens");
    LockClient[] cs = {client(), client()};
    long lastWrite = 0;
    long lastAny = 0;
    for (int i = 0; i < 5; i++) {
      Lease ra = read(cs[0], name).acquire(Duration.ofSeconds(10));
      Lease rb = read(cs[1], name).acquire(Duration.ofSeconds(10));
      for (Lease r : List.of(ra, rb)) {
        if (r.fencingToken() <= lastWrite) {
          fail(
              "fencing broken: a read lease got token "
                  + r.fencingToken()
                  + " after a write lease's "
                  + lastWrite
                  + ": a read token must be above every earlier write token (one counter per"
                  + " read-write lock)");
        }
      }
      lastAny = Math.max(ra.fencingToken(), rb.fencingToken());
      ra.release();
      rb.release();
      Lease w = write(cs[i % 2], name).acquire(Duration.ofSeconds(10));
      if (w.fencingToken() <= lastAny) {
        fail(
            "fencing broken: a write lease got token "
                + w.fencingToken()
                + " after a lease with token "
                + lastAny
                + ": a write token must be above every earlier lease's, read or write (one"
                + " counter per read-write lock)");
      }
      lastWrite = w.fencingToken();
      lastAny = lastWrite;
      w.release();
    }
  }
}
