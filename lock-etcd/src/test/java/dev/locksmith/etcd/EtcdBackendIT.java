package dev.locksmith.etcd;

import static dev.locksmith.tck.Kept.keep;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What the kit does not look at: the key layout, the one lease, server faults, credentials, TLS.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EtcdBackendIT {
  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(EtcdBackendIT.class);

  @RegisterExtension
  static final EtcdServerExtension ETCD = EtcdServerExtension.oneMember("backend");

  private static String uri(String options) {
    return "etcd://" + ETCD.hosts() + "/itest?" + options;
  }

  private static List<KeyValue> keysOf(String lockName) throws Exception {
    return ETCD.admin()
        .getKVClient()
        .get(
            KeyNames.bytes(KeyNames.lockPrefix("/itest", lockName)),
            GetOption.builder().isPrefix(true).build())
        .get(10, TimeUnit.SECONDS)
        .getKvs();
  }

  private static Set<String> threadNames(String prefix) {
    Set<String> names = new HashSet<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith(prefix)) {
        names.add(t.getName());
      }
    }
    return names;
  }

  /**
   * jetcd starts each call on its executor; the requests a caller waits for are sent from the
   * caller's thread (CallerRunsExecutor), so acquiring and releasing never wakes, nor even starts,
   * a thread of the pool jetcd would have sent them from (lock-bench FINDINGS 19).
   */
  @Test
  void acquireAndReleaseSendTheirRequestsFromTheCallersThread() throws Exception {
    Set<String> before = threadNames("locksmith-etcd-keepalive-");
    try (LockClient client = Locks.connect(uri("ttl=5s"))) {
      Set<String> mine = threadNames("locksmith-etcd-keepalive-");
      mine.removeAll(before);
      assertThat(mine).as("this client's keep-alive thread").hasSize(1);
      String clientId = mine.iterator().next().substring("locksmith-etcd-keepalive-".length());
      for (int i = 0; i < 20; i++) {
        assertThat(client.lock("caller-sends/" + (i % 3)).acquire(Duration.ofSeconds(10)).release())
            .isTrue();
      }
      assertThat(client.lock("caller-sends/0").state().isHeld()).isFalse();
      assertThat(threadNames("locksmith-etcd-calls-" + clientId))
          .as("threads of jetcd's call pool of this client")
          .isEmpty();
    }
  }

  @Test
  void everyLockOfAClientHangsOnItsOneLeaseAndIsFencedByItsCreateRevision() throws Exception {
    try (LockClient client = Locks.connect(uri("ttl=5s"))) {
      Set<Long> leases = new HashSet<>();
      List<Lease> held = new ArrayList<>();
      for (int i = 0; i < 50; i++) {
        String name = "layout/" + i;
        Lease lease = client.lock(name).acquire(Duration.ofSeconds(10));
        held.add(lease);
        List<KeyValue> kvs = keysOf(name);
        assertThat(kvs).as("keys of lock %s", name).hasSize(1);
        assertThat(kvs.get(0).getCreateRevision())
            .as("fencing token = create revision of our key")
            .isEqualTo(lease.fencingToken());
        assertThat(kvs.get(0).getLease()).as("the key is attached to a lease").isNotZero();
        leases.add(kvs.get(0).getLease());
      }
      assertThat(leases).as("etcd leases used by one client's 50 locks").hasSize(1);
      for (Lease l : held) {
        assertThat(l.release()).isTrue();
      }
      assertThat(keysOf("layout/0")).as("keys left after release").isEmpty();
    }
  }

  @Test
  void handOffsBetweenClientsAreWokenByTheWatchOnThePredecessor() throws Exception {
    try (LockClient a = Locks.connect(uri("ttl=5s"));
        LockClient b = Locks.connect(uri("ttl=5s"))) {
      List<Long> micros = new ArrayList<>();
      for (int i = 0; i < 50; i++) {
        Lease lease = a.lock("handoff").acquire(Duration.ofSeconds(10));
        var waiter = b.lock("handoff").acquireAsync(Duration.ofSeconds(30));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (keysOf("handoff").size() < 2) { // the waiter has queued its key
          if (System.nanoTime() - deadline > 0) {
            throw new TimeoutException("the waiter never queued its key");
          }
          Thread.sleep(1);
        }
        Thread.sleep(
            20); // let it start its watch and park: we measure the wake-up, not the queueing
        long released = System.nanoTime();
        assertThat(lease.release()).isTrue();
        Lease next = waiter.get(10, TimeUnit.SECONDS);
        micros.add(TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - released));
        assertThat(next.release()).isTrue();
      }
      java.util.Collections.sort(micros);
      LOG.info(
          "50 hand-offs between two clients, release to the waiter's grant: median {} us, p90 {}"
              + " us, max {} us",
          micros.get(25),
          micros.get(45),
          micros.get(49));
      assertThat(micros).hasSize(50);
    }
  }

  /**
   * etcd keeps every key name in its index until compaction and a lock's prefix read walks them
   * all, so a new key per acquisition made each acquire slower than the last: names are reused.
   */
  @Test
  void acquisitionsReuseTheirKeyNamesSoEtcdsIndexDoesNotGrow() throws Exception {
    long from =
        ETCD.admin()
                .getKVClient()
                .get(KeyNames.bytes("/itest/none"))
                .get(10, TimeUnit.SECONDS)
                .getHeader()
                .getRevision()
            + 1;
    java.util.Map<String, Integer> creates = new java.util.concurrent.ConcurrentHashMap<>();
    java.util.concurrent.atomic.AtomicInteger deletes =
        new java.util.concurrent.atomic.AtomicInteger();
    String prefix = KeyNames.lockPrefix("/itest", "reuse");
    try (var watch =
            ETCD.admin()
                .getWatchClient()
                .watch(
                    KeyNames.bytes(prefix),
                    io.etcd.jetcd.options.WatchOption.builder()
                        .isPrefix(true)
                        .withRevision(from)
                        .build(),
                    io.etcd.jetcd.Watch.listener(
                        r ->
                            r.getEvents()
                                .forEach(
                                    e -> {
                                      if (e.getEventType()
                                          == io.etcd.jetcd.watch.WatchEvent.EventType.PUT) {
                                        creates.merge(
                                            e.getKeyValue().getKey().toString(), 1, Integer::sum);
                                      } else {
                                        deletes.incrementAndGet();
                                      }
                                    })));
        LockClient client = Locks.connect(uri("ttl=5s"))) {
      List<LeaseLostException> lost = java.util.Collections.synchronizedList(new ArrayList<>());
      for (int i = 0; i < 100; i++) {
        Lease lease = client.lock("reuse").acquire(Duration.ofSeconds(10));
        lease.lost().thenAccept(lost::add);
        assertThat(lease.release()).isTrue();
      }
      // Four threads of the one client queue on the lock at once: each waiting attempt needs a key
      // of its own.
      List<Thread> threads = new ArrayList<>();
      List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
      for (int t = 0; t < 4; t++) {
        Thread thread =
            new Thread(
                () -> {
                  try {
                    for (int i = 0; i < 50; i++) {
                      Lease lease = client.lock("reuse").acquire(Duration.ofSeconds(10));
                      lease.lost().thenAccept(lost::add);
                      assertThat(lease.release()).isTrue();
                    }
                  } catch (Throwable e) {
                    failures.add(e);
                  }
                });
        threads.add(thread);
        thread.start();
      }
      for (Thread thread : threads) {
        thread.join();
      }
      assertThat(failures).isEmpty();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (deletes.get() < 300 && System.nanoTime() - deadline < 0) {
        Thread.sleep(10);
      }
      assertThat(deletes.get())
          .as("deletes seen by the watch (one per acquisition)")
          .isEqualTo(300);
      assertThat(creates.values().stream().mapToInt(Integer::intValue).sum())
          .as("keys created")
          .isEqualTo(300);
      assertThat(creates.keySet())
          .as("distinct key names for 300 acquisitions, at most 4 at a time")
          .hasSizeBetween(1, 4);
      assertThat(lost)
          .as("losses reported: the delete of a released key is not the loss of its successor")
          .isEmpty();
      assertThat(keysOf("reuse")).isEmpty();
    }
  }

  @Test
  void aWaiterThatGivesUpDeletesItsKey() throws Exception {
    try (LockClient a = Locks.connect(uri("ttl=5s"));
        LockClient b = Locks.connect(uri("ttl=5s"))) {
      Lease lease = a.lock("withdraw").acquire(Duration.ofSeconds(10));
      assertThat(b.lock("withdraw").tryAcquire(Duration.ofMillis(200))).isEmpty();
      assertThat(keysOf("withdraw"))
          .as("keys after the waiter timed out: only the holder's")
          .hasSize(1);
      assertThat(lease.release()).isTrue();
    }
  }

  @Test
  void aWaiterInterruptedWhileItsCreateIsInFlightLeavesNoKey() throws Exception {
    try (LockClient holder = Locks.connect(uri("ttl=10s"));
        LockClient waiter = Locks.connect(uri("ttl=10s&request-timeout=5s"))) {
      Lease lease = holder.lock("in-flight").acquire(Duration.ofSeconds(10));
      java.util.concurrent.atomic.AtomicReference<Throwable> outcome =
          new java.util.concurrent.atomic.AtomicReference<>();
      Thread t;
      ETCD.cluster().single().process.pause(); // the waiter's create waits in the server's socket
      try {
        t =
            new Thread(
                () -> {
                  try {
                    waiter.lock("in-flight").acquire(Duration.ofSeconds(30));
                  } catch (Throwable e) {
                    outcome.set(e);
                  }
                });
        t.start();
        Thread.sleep(300);
        t.interrupt();
        Thread.sleep(300); // the withdrawal's delete, unfixed, would now be on its way too
      } finally {
        ETCD.cluster().single().process.resume();
      }
      t.join(TimeUnit.SECONDS.toMillis(15));
      assertThat(t.isAlive()).isFalse();
      assertThat(outcome.get()).isInstanceOf(InterruptedException.class);
      assertThat(keysOf("in-flight"))
          .as("keys after the interrupted waiter withdrew: only the holder's")
          .hasSize(1);
      assertThat(lease.release()).isTrue();
      assertThat(waiter.lock("in-flight").tryAcquire()).as("the free lock, at once").isPresent();
    }
  }

  @Test
  void serverPausedBeyondTheTtlReportsTheLossThenANewLeaseServes() throws Exception {
    try (LockClient client = Locks.connect(uri("ttl=2s&request-timeout=1s"))) {
      Lease lease = client.lock("paused").acquire(Duration.ofSeconds(10));
      long token = lease.fencingToken();
      ETCD.cluster().single().process.pause();
      LeaseLostException loss;
      try {
        loss = lease.lost().toCompletableFuture().get(10, TimeUnit.SECONDS);
      } finally {
        ETCD.cluster().single().process.resume();
      }
      assertThat(loss.reason())
          .isIn(LeaseLostException.Reason.SESSION_LOST, LeaseLostException.Reason.RENEWAL_FAILED);
      assertThat(lease.isValid()).isFalse();
      // After the outage the same client takes locks again, on a new lease.
      Lease again = client.lock("paused").acquire(Duration.ofSeconds(20));
      assertThat(again.fencingToken()).isGreaterThan(token);
      assertThat(again.release()).isTrue();
    }
  }

  @Test
  void locksSurviveAServerRestartWithinTheTtl() throws Exception {
    try (LockClient holder = Locks.connect(uri("ttl=10s&request-timeout=2s"));
        LockClient other = Locks.connect(uri("ttl=10s"))) {
      Lease lease = holder.lock("restart").acquire(Duration.ofSeconds(10));
      ETCD.cluster().single().process.kill();
      ETCD.cluster().single().process.restart();
      ETCD.cluster().awaitHealthy(Duration.ofSeconds(30));
      assertThat(other.lock("restart").tryAcquire(Duration.ofSeconds(1)))
          .as("the lock after etcd restarted")
          .isEmpty();
      assertThat(lease.isValid()).isTrue();
      assertThat(lease.release()).isTrue();
      Lease next = other.lock("restart").acquire(Duration.ofSeconds(10));
      assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
      next.release();
    }
  }

  @Test
  void tlsAgainstAPlainServerFailsWithinTheConnectTimeout() {
    assertTimeoutPreemptively(
        Duration.ofSeconds(20),
        () ->
            assertThatThrownBy(() -> Locks.connect(uri("tls=true&connect-timeout=1s")))
                .isInstanceOf(BackendUnavailableException.class)
                .hasMessageContaining(ETCD.hosts())
                .hasMessageContaining("`tls` (true)"));
  }

  @Test
  void wrongCredentialsAreRefusedClearlyAndRightOnesWork() throws Exception {
    try (EtcdCluster secured = EtcdCluster.start(1, "auth")) {
      secured.enableRootAuth("right-pw");
      String hosts = secured.hosts();
      assertTimeoutPreemptively(
          Duration.ofSeconds(20),
          () ->
              assertThatThrownBy(
                      () -> Locks.connect("etcd://root:wrong-pw@" + hosts + "?connect-timeout=2s"))
                  .isInstanceOf(BackendUnavailableException.class)
                  .hasMessageContaining(hosts)
                  .hasMessageContaining("user 'root'")
                  .satisfies(e -> assertThat(e.getMessage()).doesNotContain("wrong-pw")));
      try (LockClient client =
          Locks.connect("etcd://root:right-pw@" + hosts + "?connect-timeout=5s")) {
        Lease lease = client.lock("authed").acquire(Duration.ofSeconds(10));
        assertThat(lease.release()).isTrue();
      }
    }
  }

  @Test
  void closingRevokesTheLeaseSoNothingIsLeftBehind() throws Exception {
    LockClient client = Locks.connect(uri("ttl=30s"));
    keep(client.lock("closed/held").acquire(Duration.ofSeconds(10)));
    try (LockClient other = Locks.connect(uri("ttl=30s"))) {
      keep(other.lock("closed/waited").acquire(Duration.ofSeconds(10)));
      // a waiter of the closing client whose key is queued behind other's
      var waiting = client.lock("closed/waited").acquireAsync(Duration.ofSeconds(60));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (keysOf("closed/waited").size() < 2) {
        if (System.nanoTime() - deadline > 0) {
          throw new TimeoutException("the waiter never queued its key");
        }
        Thread.sleep(5);
      }
      client.close();
      assertThat(waiting).isCompletedExceptionally();
      assertThat(keysOf("closed/held")).as("keys of the closed client's held lock").isEmpty();
      assertThat(keysOf("closed/waited")).as("keys of lock closed/waited: only other's").hasSize(1);
    }
  }
}
