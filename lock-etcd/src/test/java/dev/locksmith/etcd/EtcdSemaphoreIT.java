package dev.locksmith.etcd;

import static dev.locksmith.tck.Kept.keep;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.Locks;
import dev.locksmith.spi.Abandonable;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.RecordingContext;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Semaphores and read-write locks on etcd (issue 20), against a real etcd: the key layout, the
 * count check, arrival order, the wake-up of waiters by any release (the clients recheck only every
 * 30 s, so a grant within seconds came from a watch), fencing in grant order, and expiry.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EtcdSemaphoreIT {
  private static final String PREFIX = "/semit";

  /** Far below the 30 s recheck: a waiter granted within it was woken by a watch. */
  private static final Duration WOKEN = Duration.ofSeconds(5);

  @RegisterExtension
  static final EtcdServerExtension ETCD = EtcdServerExtension.oneMember("semaphore");

  private static LockClient connect(String ttl) {
    return Locks.connect("etcd://" + ETCD.hosts() + PREFIX + "?ttl=" + ttl + "&recheck=30s");
  }

  private static LockClient connect() {
    return connect("5s");
  }

  private static List<KeyValue> keysUnder(String range) throws Exception {
    return ETCD.admin()
        .getKVClient()
        .get(KeyNames.bytes(range), GetOption.builder().isPrefix(true).build())
        .get(10, TimeUnit.SECONDS)
        .getKvs();
  }

  private static Lease within(CompletableFuture<Lease> waiting, Duration limit, String what)
      throws Exception {
    try {
      return waiting.get(limit.toMillis(), TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError(
          what + ": not granted within " + limit + " although the clients recheck only every 30 s",
          e);
    }
  }

  @Test
  void aSemaphoreGrantsAtMostItsPermitsAcrossClientsEachKeyOnItsClientsLeaseUnderARangeOfItsOwn()
      throws Exception {
    String name = "basic";
    try (LockClient a = connect();
        LockClient b = connect()) {
      List<Lease> held = new ArrayList<>();
      held.add(a.semaphore(name, 3).acquire(Duration.ofSeconds(5)));
      held.add(b.semaphore(name, 3).acquire(Duration.ofSeconds(5)));
      held.add(a.semaphore(name, 3).acquire(Duration.ofSeconds(5)));
      assertThat(b.semaphore(name, 3).tryAcquire()).as("a fourth permit of three").isEmpty();
      assertThat(a.semaphore(name, 3).tryAcquire())
          .as("a fourth permit of three, from the other client")
          .isEmpty();

      String range = KeyNames.semaphorePrefix(PREFIX, name);
      List<KeyValue> kvs = keysUnder(range);
      assertThat(kvs).as("keys of the semaphore, nothing left by the refused attempts").hasSize(3);
      for (KeyValue kv : kvs) {
        assertThat(kv.getKey().toString(StandardCharsets.UTF_8))
            .as("the count is in the key's name")
            .startsWith(range + "3/");
        assertThat(kv.getLease()).as("the key hangs on its client's lease").isNotZero();
      }
      assertThat(keysUnder(KeyNames.lockPrefix(PREFIX, name)))
          .as("keys of the lock of the same name")
          .isEmpty();

      long highest = held.stream().mapToLong(Lease::fencingToken).max().orElseThrow();
      assertThat(held.get(1).release()).isTrue();
      Lease next =
          b.semaphore(name, 3)
              .tryAcquire()
              .orElseThrow(() -> new AssertionError("a permit freed by a release"));
      assertThat(next.fencingToken()).as("token of a later grant").isGreaterThan(highest);
      for (Lease l : List.of(held.get(0), held.get(2), next)) {
        assertThat(l.release()).isTrue();
      }
      assertThat(keysUnder(range)).as("keys left after every release").isEmpty();
    }
  }

  @Test
  void aReleaseOfAnyHolderWakesTheWaitersNotOnlyTheNearestOne() throws Exception {
    String name = "any-release";
    try (LockClient a = connect();
        LockClient b = connect()) {
      DistributedLock sem = a.semaphore(name, 3);
      Lease first = sem.acquire(Duration.ofSeconds(5));
      Lease middle = sem.acquire(Duration.ofSeconds(5));
      Lease last = sem.acquire(Duration.ofSeconds(5));
      CompletableFuture<Lease> w1 = b.semaphore(name, 3).acquireAsync(Duration.ofSeconds(60));
      awaitKeys(KeyNames.semaphorePrefix(PREFIX, name), 4);
      CompletableFuture<Lease> w2 = b.semaphore(name, 3).acquireAsync(Duration.ofSeconds(60));
      awaitKeys(KeyNames.semaphorePrefix(PREFIX, name), 5);
      assertThat(w1).as("first waiter while three hold").isNotDone();

      // neither the nearest key ahead of the waiter nor the oldest
      assertThat(middle.release()).isTrue();
      Lease g1 = within(w1, WOKEN, "the first waiter after the middle holder's release");
      assertThat(w2).as("second waiter: three hold again").isNotDone();
      assertThat(first.release()).isTrue();
      Lease g2 = within(w2, WOKEN, "the second waiter after the oldest holder's release");
      assertThat(g2.fencingToken()).as("tokens in grant order").isGreaterThan(g1.fencingToken());
      assertThat(g1.fencingToken()).isGreaterThan(last.fencingToken());
      for (Lease l : List.of(last, g1, g2)) {
        assertThat(l.release()).isTrue();
      }
    }
  }

  @Test
  void aSemaphoreAskedWithAnotherCountWhileHeldIsRefusedAndTakesNothing() throws Exception {
    String name = "count";
    String range = KeyNames.semaphorePrefix(PREFIX, name);
    try (LockClient a = connect();
        LockClient b = connect()) {
      Lease two = a.semaphore(name, 2).acquire(Duration.ofSeconds(5));
      assertThatThrownBy(() -> b.semaphore(name, 3).tryAcquire())
          .isInstanceOf(IllegalStateException.class)
          .hasMessage(Claim.permitsInUse(name, 3, 2).getMessage());
      assertThatThrownBy(() -> b.semaphore(name, 1).acquire(Duration.ofSeconds(5)))
          .isInstanceOf(IllegalStateException.class)
          .hasMessage(Claim.permitsInUse(name, 1, 2).getMessage());
      assertThat(keysUnder(range)).as("keys after two refused attempts").hasSize(1);
      assertThat(two.release()).isTrue();

      // no live lease: the next grant sets the count
      Lease three = b.semaphore(name, 3).acquire(Duration.ofSeconds(5));
      assertThatThrownBy(() -> a.semaphore(name, 2).tryAcquire())
          .isInstanceOf(IllegalStateException.class)
          .hasMessage(Claim.permitsInUse(name, 2, 3).getMessage());
      assertThat(three.release()).isTrue();
    }
  }

  @Test
  void aLockASemaphoreAndAReadWriteLockOfOneNameNeverMeet() throws Exception {
    String name = "same";
    try (LockClient a = connect();
        LockClient b = connect()) {
      Lease lock = a.lock(name).acquire(Duration.ofSeconds(5));
      Lease permit = a.semaphore(name, 1).acquire(Duration.ofSeconds(5));
      Lease write = a.readWriteLock(name).writeLock().acquire(Duration.ofSeconds(5));
      // and a lock whose name looks like the semaphores' range
      Lease oddLock = a.lock("!sem").acquire(Duration.ofSeconds(5));
      assertThat(b.lock(name).tryAcquire()).isEmpty();
      assertThat(b.semaphore(name, 1).tryAcquire()).isEmpty();
      assertThat(b.readWriteLock(name).readLock().tryAcquire()).isEmpty();
      assertThat(keysUnder(KeyNames.lockPrefix(PREFIX, name))).hasSize(1);
      assertThat(keysUnder(KeyNames.semaphorePrefix(PREFIX, name))).hasSize(1);
      assertThat(keysUnder(KeyNames.readWritePrefix(PREFIX, name))).hasSize(1);
      assertThat(b.semaphore("sem", 1).tryAcquire())
          .as("a semaphore named like the range segment")
          .map(Lease::release)
          .hasValue(true);
      for (Lease l : List.of(lock, permit, write, oddLock)) {
        assertThat(l.release()).isTrue();
      }
    }
  }

  @Test
  void readersShareAWriterWaitsForThemAndAReaderBehindTheWriterWaitsForIt() throws Exception {
    String name = "rw-order";
    String range = KeyNames.readWritePrefix(PREFIX, name);
    try (LockClient a = connect();
        LockClient b = connect();
        LockClient c = connect()) {
      Lease r1 = a.readWriteLock(name).readLock().acquire(Duration.ofSeconds(5));
      Lease r2 = b.readWriteLock(name).readLock().acquire(Duration.ofSeconds(5));
      CompletableFuture<Lease> writer =
          c.readWriteLock(name).writeLock().acquireAsync(Duration.ofSeconds(60));
      awaitKeys(range, 3);
      CompletableFuture<Lease> lateReader =
          b.readWriteLock(name).readLock().acquireAsync(Duration.ofSeconds(60));
      awaitKeys(range, 4);
      assertThat(a.readWriteLock(name).writeLock().tryAcquire()).as("a second writer").isEmpty();
      assertThat(writer).isNotDone();
      assertThat(lateReader).as("a reader that came after a waiting writer").isNotDone();

      assertThat(r1.release()).isTrue();
      assertThat(writer).as("writer while one reader holds").isNotDone();
      assertThat(r2.release()).isTrue();
      Lease w = within(writer, WOKEN, "the writer after the last reader's release");
      assertThat(w.fencingToken())
          .as("writer's token above the readers'")
          .isGreaterThan(Math.max(r1.fencingToken(), r2.fencingToken()));
      assertThat(lateReader).as("reader while the writer holds").isNotDone();
      assertThat(w.release()).isTrue();
      Lease r3 = within(lateReader, WOKEN, "the reader after the writer's release");
      assertThat(r3.fencingToken())
          .as("reader's token above the earlier writer's")
          .isGreaterThan(w.fencingToken());
      assertThat(r3.release()).isTrue();
      assertThat(keysUnder(range)).isEmpty();
    }
  }

  @Test
  void aWriterThatGivesUpLetsTheReadersBehindItIn() throws Exception {
    String name = "rw-withdraw";
    String range = KeyNames.readWritePrefix(PREFIX, name);
    try (LockClient a = connect();
        LockClient b = connect()) {
      Lease r1 = a.readWriteLock(name).readLock().acquire(Duration.ofSeconds(5));
      CompletableFuture<Lease> writer =
          b.readWriteLock(name).writeLock().acquireAsync(Duration.ofSeconds(60));
      awaitKeys(range, 2);
      CompletableFuture<Lease> reader =
          a.readWriteLock(name).readLock().acquireAsync(Duration.ofSeconds(60));
      awaitKeys(range, 3);
      assertThat(reader).isNotDone();
      assertThat(writer.cancel(true)).isTrue();
      Lease r2 = within(reader, WOKEN, "a reader after the writer ahead of it gave up");
      assertThat(r1.release()).isTrue();
      assertThat(r2.release()).isTrue();
    }
  }

  /**
   * Two readers wait behind a writer; once it is gone, the one that queued second polls first. Its
   * token must still be below the other's: the token is the revision of the grant, not of the key.
   */
  @Test
  void tokensRiseInGrantOrderWhenALaterKeyIsGrantedFirst() throws Exception {
    String name = "grant-order";
    RecordingContext context = new RecordingContext("grant-order", Duration.ofSeconds(30));
    String uri = "etcd://" + ETCD.hosts() + PREFIX + "?ttl=5s";
    BackendConfig config = new BackendConfig(LockUri.parse(uri), Map.of("ttl", "5s"), List.of());
    try (EtcdBackend backend = (EtcdBackend) new EtcdLockProvider().open(config, context)) {
      LockAttempt writer =
          backend.attempt(name, Claim.write(), "w", Duration.ofSeconds(30), () -> {});
      Poll w = writer.poll();
      assertThat(w.isGranted()).isTrue();
      LockAttempt early =
          backend.attempt(name, Claim.read(), "r-early", Duration.ofSeconds(30), () -> {});
      LockAttempt late =
          backend.attempt(name, Claim.read(), "r-late", Duration.ofSeconds(30), () -> {});
      assertThat(early.poll().isGranted()).isFalse();
      assertThat(late.poll().isGranted()).isFalse();
      BackendLease written =
          new BackendLease(
              name, Claim.write(), "w", w.fencingToken(), Duration.ofSeconds(30), w.state());
      assertThat(backend.release(written)).isTrue();
      assertThat(backend.release(written)).as("the same release sent again").isFalse();
      Poll lateGrant = late.poll();
      Poll earlyGrant = early.poll();
      assertThat(lateGrant.isGranted()).isTrue();
      assertThat(earlyGrant.isGranted()).isTrue();
      assertThat(lateGrant.fencingToken()).isGreaterThan(w.fencingToken());
      assertThat(earlyGrant.fencingToken())
          .as("token of the grant that came second")
          .isGreaterThan(lateGrant.fencingToken());
      late.abandon();
      early.abandon();
    }
  }

  @Test
  void aVanishedHoldersPermitIsFreedWhenItsEtcdLeaseEnds() throws Exception {
    String name = "vanished";
    LockClient holder = connect("2s");
    try (LockClient other = connect()) {
      keep(holder.semaphore(name, 1).acquire(Duration.ofSeconds(5)));
      keep(holder.readWriteLock(name).readLock().acquire(Duration.ofSeconds(5)));
      ((Abandonable) holder).abandon();
      Optional<Lease> permit = other.semaphore(name, 1).tryAcquire(Duration.ofSeconds(10));
      assertThat(permit).as("permit of a vanished client, within its 2 s TTL + sweep").isPresent();
      Optional<Lease> write =
          other.readWriteLock(name).writeLock().tryAcquire(Duration.ofSeconds(10));
      assertThat(write).as("write side after a vanished reader").isPresent();
      assertThat(permit.get().release()).isTrue();
      assertThat(write.get().release()).isTrue();
    } finally {
      holder.close();
    }
  }

  @Test
  void anUnrenewedPermitOfAVanishedClientIsFreedAtItsLeaseNotAtTheSessionTtl() throws Exception {
    String name = "unrenewed";
    LockClient holder = connect("30s");
    try (LockClient other = connect()) {
      LockOptions unrenewed =
          LockOptions.builder().lease(Duration.ofMillis(300)).autoRenew(false).build();
      keep(holder.semaphore(name, 1, unrenewed).acquire(Duration.ofSeconds(5)));
      long granted = System.nanoTime();
      ((Abandonable) holder).abandon();
      Optional<Lease> next = other.semaphore(name, 1).tryAcquire(Duration.ofSeconds(10));
      long took = System.nanoTime() - granted;
      assertThat(next).isPresent();
      assertThat(Duration.ofNanos(took))
          .as("until free: the lease rounded up to 1 s + etcd's sweep, not the session's 30 s")
          .isLessThan(Duration.ofSeconds(3));
      assertThat(next.get().release()).isTrue();
    } finally {
      holder.close();
    }
  }

  /** Waits until the range has {@code n} keys: the waiters have queued. */
  private static void awaitKeys(String range, int n) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (keysUnder(range).size() != n) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError(
            "range " + range + " has " + keysUnder(range).size() + " keys, not " + n);
      }
      Thread.sleep(20);
    }
  }
}
