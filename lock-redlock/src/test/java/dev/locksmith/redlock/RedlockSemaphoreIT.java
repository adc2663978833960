package dev.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.Locks;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.Jedis;

/**
 * Semaphores (N slots, each a Redlock lock) and read-write locks (per-server scripts, a majority
 * for every grant) over five real servers: what the protocol keeps true, through the API and, where
 * the API cannot reach (a lease whose validity ended, a waiting writer that never withdraws), at
 * the SPI.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RedlockSemaphoreIT {
  private static final LockOptions ONE_PER_ACQUIRE =
      LockOptions.builder().reentrant(false).lease(Duration.ofSeconds(5)).build();
  private static RedlockServers servers;

  @BeforeAll
  static void startServers() {
    servers = RedlockServers.start("claims", 5);
  }

  @AfterAll
  static void stopServers() {
    servers.close();
  }

  private static LockClient connect() {
    return Locks.connect(servers.uri() + "?connect-timeout=1s");
  }

  private static RedlockBackend open(String clientId, Duration recheck) {
    BackendConfig config = new BackendConfig(LockUri.parse(servers.uri()), Map.of(), List.of());
    BackendContext context =
        new BackendContext() {
          @Override
          public String clientId() {
            return clientId;
          }

          @Override
          public Duration recheck() {
            return recheck;
          }

          @Override
          public void leaseLost(String ownerId, LeaseLostException.Reason reason, String detail) {}

          @Override
          public void allLeasesLost(String detail) {}

          @Override
          public void leaseValidUntil(String ownerId, long validUntilNanos) {}
        };
    return (RedlockBackend) new RedlockLockProvider().open(config, context);
  }

  /**
   * @return the live slots of a semaphore on server i
   */
  private static Set<String> slots(int i, String name) {
    try (Jedis admin = servers.get(i).admin()) {
      return new TreeSet<>(admin.zrange(RedlockServers.CLAIM_KEYS.semaphoreSlots(name), 0, -1));
    }
  }

  /**
   * @return ZADDs on {@code key}, summed over the servers, while {@code during} runs and for 200 ms
   *     after (so that the servers outside a majority answer too), told by Redis's keyspace
   *     notifications for sorted sets
   */
  private static long zaddsOn(String key, Runnable during) throws Exception {
    AtomicInteger zadds = new AtomicInteger();
    List<Integer> all = new ArrayList<>();
    for (int i = 0; i < servers.size(); i++) {
      all.add(i);
    }
    try (KeyspaceEvents ignored =
        new KeyspaceEvents(
            all,
            "Kz",
            (channel, message) -> {
              if (message.equals("zadd")) {
                zadds.incrementAndGet();
              }
            },
            key)) {
      during.run();
      Thread.sleep(200);
      return zadds.get();
    }
  }

  /**
   * Redis's keyspace notifications of some keys on some of the servers, while open: each server's
   * events reach the listener in the order that server made them. Closing unsubscribes and turns
   * the notifications off again.
   */
  private static final class KeyspaceEvents implements AutoCloseable {
    private final List<Integer> on;
    private final List<redis.clients.jedis.JedisPubSub> listeners = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();

    /**
     * @param flags Redis's {@code notify-keyspace-events} classes, such as {@code Kz} (sorted sets)
     * @param listener takes each event's channel and its name ({@code zadd}, {@code set}, ...)
     */
    KeyspaceEvents(
        List<Integer> on,
        String flags,
        java.util.function.BiConsumer<String, String> listener,
        String... keys)
        throws InterruptedException {
      this.on = on;
      java.util.concurrent.CountDownLatch subscribed =
          new java.util.concurrent.CountDownLatch(on.size() * keys.length);
      String[] channels = new String[keys.length];
      for (int k = 0; k < keys.length; k++) {
        channels[k] = "__keyspace@0__:" + keys[k];
      }
      for (int server : on) {
        try (Jedis admin = servers.get(server).admin()) {
          admin.configSet("notify-keyspace-events", flags);
        }
        redis.clients.jedis.JedisPubSub pubSub =
            new redis.clients.jedis.JedisPubSub() {
              @Override
              public void onMessage(String channel, String message) {
                listener.accept(channel, message);
              }

              @Override
              public void onSubscribe(String channel, int count) {
                subscribed.countDown();
              }
            };
        Thread t =
            new Thread(
                () -> {
                  try (Jedis sub = servers.get(server).admin()) {
                    sub.subscribe(pubSub, channels);
                  }
                },
                "keyspace-" + server);
        t.setDaemon(true);
        t.start();
        listeners.add(pubSub);
        threads.add(t);
      }
      assertThat(subscribed.await(5, TimeUnit.SECONDS))
          .as("subscribed to keyspace events on servers %s", on)
          .isTrue();
    }

    @Override
    public void close() throws InterruptedException {
      for (redis.clients.jedis.JedisPubSub l : listeners) {
        if (l.isSubscribed()) {
          l.unsubscribe();
        }
      }
      for (Thread t : threads) {
        t.join(5000);
      }
      for (int server : on) {
        try (Jedis admin = servers.get(server).admin()) {
          admin.configSet("notify-keyspace-events", "");
        }
      }
    }
  }

  private static long count(int i, String key) {
    try (Jedis admin = servers.get(i).admin()) {
      return admin.zcard(key);
    }
  }

  /**
   * A refused tryAcquire() answers only once it has given back what a minority granted it: left to
   * the background, its slot could refuse the next caller's tryAcquire() on the servers outside a
   * release's majority (the kit's rule 18.2 failed that way once: a permit released, and the next
   * tryAcquire() found the semaphore still full).
   */
  @Test
  void aRefusedTryAcquireHasGivenBackItsSlotsWhenItAnswers() throws Exception {
    assertGivenBackWhenTheCallReturns(
        "sem-refused-gives-back",
        "a 4th permit of 3, refused by three of five",
        semaphore -> semaphore.tryAcquire());
  }

  /**
   * A waiter that gives up returns only once what its rounds took is given back: left to the
   * background, a withdrawn waiter's slot made the kit's rule 18.4 find the semaphore full right
   * after every permit had been released.
   */
  @Test
  void aWaiterThatTimesOutHasGivenBackItsSlotsWhenItReturns() throws Exception {
    assertGivenBackWhenTheCallReturns(
        "sem-timed-out-gives-back",
        "a 4th permit of 3, waited for 150 ms",
        semaphore -> semaphore.tryAcquire(Duration.ofMillis(150)));
  }

  /**
   * A release answers only once every server that answers within `server-timeout` has freed the
   * slot, not once a majority has: several permits released on bare majorities left a majority of
   * servers each holding one of them, and the kit's rule 18.6 then found the old count still in use
   * after every permit was released (rule 18.2: the semaphore still full after a release). Server 4
   * holds writes back for 150 ms (CLIENT PAUSE WRITE), well within the 500 ms `server-timeout` of a
   * 5 s lease, and still answers reads, so the check right after the release sees its state then.
   */
  @Test
  void aReleaseHasFreedItsSlotOnEveryServerThatAnsweredWhenItReturns() throws Exception {
    String name = "sem-release-waits-for-all";
    try (LockClient a = connect();
        Jedis admin4 = servers.get(4).admin()) {
      Lease held =
          a.semaphore(name, 3, ONE_PER_ACQUIRE)
              .tryAcquire()
              .orElseThrow(() -> new AssertionError("a permit of 3 refused"));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (slots(4, name)
          .isEmpty()) { // granted on a majority: server 4's grant may still be on its way
        assertThat(System.nanoTime() - deadline).as("server 4's grant of the permit").isNegative();
        Thread.sleep(5);
      }
      admin4.clientPause(150, redis.clients.jedis.args.ClientPauseMode.WRITE);
      assertThat(held.release()).as("release").isTrue();
      assertThat(admin4.zrange(RedlockServers.CLAIM_KEYS.semaphoreSlots(name), 0, -1))
          .as(
              "slots on server 4, whose writes were held back for 150 ms, when the release"
                  + " returned: its release must have been waited for")
          .isEmpty();
    }
  }

  /**
   * Copies a semaphore's slots, owners and count, with their expiries, from a server holding all 3
   * slots to others.
   */
  private static void copySemaphoreToServers(String name, int... targets) {
    List<String> keys =
        List.of(
            RedlockServers.CLAIM_KEYS.semaphoreSlots(name),
            RedlockServers.CLAIM_KEYS.semaphoreOwners(name),
            RedlockServers.CLAIM_KEYS.semaphorePermits(name));
    int source = -1;
    for (int i = 0; i < servers.size() && source < 0; i++) {
      if (slots(i, name).size() == 3) {
        source = i;
      }
    }
    assertThat(source).as("a server holding all 3 slots of '%s'", name).isNotNegative();
    try (Jedis from = servers.get(source).admin()) {
      for (int target : targets) {
        if (target == source) {
          continue;
        }
        try (Jedis to = servers.get(target).admin()) {
          for (String key : keys) {
            byte[] dump = from.dump(key);
            if (dump == null) {
              to.del(key);
              continue;
            }
            long ttl = from.pttl(key);
            to.restore(
                key,
                Math.max(0, ttl),
                dump,
                redis.clients.jedis.params.RestoreParams.restoreParams().replace());
          }
        }
      }
    }
    for (int target : targets) {
      assertThat(slots(target, name)).as("slots of '%s' on server %d", name, target).hasSize(3);
    }
  }

  /** A call on a semaphore that is refused. */
  private interface RefusedCall {
    Optional<Lease> apply(DistributedLock semaphore) throws InterruptedException;
  }

  /**
   * Holds 3 permits of 3; then servers 0 and 1 lose the slots (a restart without persistence), so
   * they grant any slot while the other three refuse, and server 0 answers late, held up by a 300
   * ms pause. The call is refused; a marker written on server 0 once it has returned must come
   * after every give-back there, by the order of server 0's keyspace events (one server's
   * notifications reach a subscriber in the order it made them).
   */
  private void assertGivenBackWhenTheCallReturns(String name, String call, RefusedCall refused)
      throws Exception {
    String slotsKey = RedlockServers.CLAIM_KEYS.semaphoreSlots(name);
    String marker = "marker-" + name;
    try (LockClient a = connect();
        LockClient b = connect()) {
      List<Lease> held = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        held.add(
            a.semaphore(name, 3, ONE_PER_ACQUIRE)
                .tryAcquire()
                .orElseThrow(() -> new AssertionError("a permit of 3 refused")));
      }
      // A permit needs a majority only: on a loaded machine a minority server can miss one (its
      // call not sent in time),
      // and then grant a 4th permit with servers 0 and 1. Servers 2 to 4 get the full semaphore of
      // a server that has it.
      copySemaphoreToServers(name, 2, 3, 4);
      for (int i = 0; i < 2; i++) {
        try (Jedis admin = servers.get(i).admin()) {
          admin.del(slotsKey, RedlockServers.CLAIM_KEYS.semaphoreOwners(name));
        }
      }
      List<String> events = new java.util.concurrent.CopyOnWriteArrayList<>();
      java.util.concurrent.ScheduledExecutorService resumer =
          Executors.newSingleThreadScheduledExecutor();
      // connected before the pause: a connection made to a paused server waits for its handshake
      // until the server resumes
      try (KeyspaceEvents ignored =
              new KeyspaceEvents(
                  List.of(0),
                  "Kz$",
                  (channel, message) -> events.add(channel.endsWith(marker) ? "marker" : message),
                  slotsKey,
                  marker);
          Jedis markerWriter = servers.get(0).admin()) {
        markerWriter.ping();
        servers.pause(0);
        try {
          resumer.schedule(() -> servers.resume(0), 300, TimeUnit.MILLISECONDS);
          assertThat(refused.apply(b.semaphore(name, 3, ONE_PER_ACQUIRE))).as(call).isEmpty();
          // Sent now, the marker reaches server 0 before a give-back that is still to be sent: one
          // left to the background
          // goes only once the acquire's answer from server 0, still paused or just resumed, is
          // back.
          markerWriter.set(marker, "1");
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
          while (!events.contains("marker")) {
            assertThat(System.nanoTime() - deadline)
                .as("the marker's event; seen %s", events)
                .isNegative();
            Thread.sleep(5);
          }
          List<String> before = events.subList(0, events.indexOf("marker"));
          assertThat(before)
              .as(
                  "server 0's events before the marker: its grants of the refused permit (at least"
                      + " one) and as many give-backs; seen %s",
                  events)
              .contains("zadd");
          assertThat(before.stream().filter("zrem"::equals).count())
              .as("give-backs on server 0 before the marker, against its grants; seen %s", events)
              .isEqualTo(before.stream().filter("zadd"::equals).count());
          assertThat(slots(1, name))
              .as("slots on server 1 when the refused call returned")
              .isEmpty();
        } finally {
          resumer.shutdown();
          resumer.awaitTermination(5, TimeUnit.SECONDS);
          servers.resume(0);
          markerWriter.del(marker);
        }
      }
      for (Lease l : held) {
        l.release();
      }
    }
  }

  @Test
  void semaphoreGrantsExactlyItsPermitsAcrossClientsEachOnItsOwnSlotWithRisingTokens()
      throws Exception {
    String name = "sem-exact";
    try (LockClient a = connect();
        LockClient b = connect()) {
      List<Lease> held = new ArrayList<>();
      long last = 0;
      for (LockClient c : List.of(a, b, a)) {
        Lease lease =
            c.semaphore(name, 3, ONE_PER_ACQUIRE)
                .tryAcquire()
                .orElseThrow(() -> new AssertionError("a free permit was refused"));
        assertThat(lease.fencingToken()).as("token of a later grant").isGreaterThan(last);
        last = lease.fencingToken();
        held.add(lease);
      }
      assertThat(b.semaphore(name, 3, ONE_PER_ACQUIRE).tryAcquire())
          .as("a 4th permit of 3")
          .isEmpty();
      assertThat(a.semaphore(name, 3, ONE_PER_ACQUIRE).tryAcquire())
          .as("a 4th permit of 3")
          .isEmpty();
      // an acquire answers once a majority granted it: a server outside that majority may show
      // the third permit's slot a moment later; and a refused 4th permit's round gives back, in
      // the background, a slot a minority of servers granted it (and that server may then have
      // refused the third permit's late write there: a permit needs a majority, not every server)
      Set<String> three = Set.of("0", "1", "2");
      int showingAll = 0;
      for (int i = 0; i < servers.size(); i++) {
        int server = i;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        while (!slots(server, name).equals(three) && System.nanoTime() - deadline < 0) {
          Thread.sleep(5);
        }
        showingAll += slots(server, name).equals(three) ? 1 : 0;
      }
      assertThat(showingAll)
          .as("servers whose live slots are the three permits'")
          .isGreaterThanOrEqualTo(servers.size() / 2 + 1);
      assertThat(held.get(1).release()).isTrue();
      Lease next =
          b.semaphore(name, 3, ONE_PER_ACQUIRE)
              .tryAcquire()
              .orElseThrow(() -> new AssertionError("a released permit was not given again"));
      assertThat(next.fencingToken()).isGreaterThan(last);
      next.release();
      held.get(0).release();
      held.get(2).release();
      // release answers once a majority released; the rest follow by themselves
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      for (int i = 0; i < servers.size(); i++) {
        while (!slots(i, name).isEmpty()) {
          assertThat(System.nanoTime() - deadline)
              .as("slots left on server %d after every release: %s", i, slots(i, name))
              .isNegative();
          Thread.sleep(5);
        }
      }
    }
  }

  @Test
  void contendedSemaphoreNeverHasMoreHoldersThanPermitsAndUsesThemAll() throws Exception {
    String name = "sem-contended";
    int permits = 2;
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    AtomicInteger grants = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try (LockClient a = connect();
        LockClient b = connect()) {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        LockClient c = t % 2 == 0 ? a : b;
        done.add(
            pool.submit(
                () -> {
                  for (int k = 0; k < 8; k++) {
                    try (Lease lease =
                        c.semaphore(name, permits, ONE_PER_ACQUIRE)
                            .acquire(Duration.ofSeconds(20))) {
                      int now = inside.incrementAndGet();
                      most.accumulateAndGet(now, Math::max);
                      grants.incrementAndGet();
                      Thread.sleep(5);
                      inside.decrementAndGet();
                    }
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(grants.get()).isEqualTo(64);
    assertThat(most.get())
        .as("most holders at once of a semaphore of %d", permits)
        .isEqualTo(permits);
  }

  @Test
  void anotherCountWhileHeldIsRefusedNamingBothAndTakesNothingAndIsAcceptedOnceFree()
      throws Exception {
    String name = "sem-count";
    try (LockClient a = connect();
        LockClient b = connect()) {
      Lease held = a.semaphore(name, 3, ONE_PER_ACQUIRE).acquire(Duration.ofSeconds(5));
      assertThatThrownBy(() -> b.semaphore(name, 5, ONE_PER_ACQUIRE).tryAcquire())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("`permits` was 5")
          .hasMessageContaining("in use with 3 permits");
      assertThatThrownBy(() -> b.semaphore(name, 5, ONE_PER_ACQUIRE).acquire(Duration.ofSeconds(5)))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("in use with 3 permits");
      // A server outside the majority that granted a's permit may not have had its slot yet when b
      // asked: b's round
      // then took a slot there, and gives it back in the background (and a's late write there was
      // refused: a permit
      // needs a majority, not every server). Once that settles, b holds nothing anywhere.
      int holdingA = 0;
      for (int i = 0; i < servers.size(); i++) {
        int server = i;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        while (slots(server, name).size() > 1 && System.nanoTime() - deadline < 0) {
          Thread.sleep(5);
        }
        assertThat(slots(i, name).size())
            .as("slots on server %d after the refused count", i)
            .isLessThanOrEqualTo(1);
        holdingA += slots(i, name).size();
      }
      assertThat(holdingA)
          .as("servers holding a's permit")
          .isGreaterThanOrEqualTo(servers.size() / 2 + 1);
      held.release();
      Lease five =
          b.semaphore(name, 5, ONE_PER_ACQUIRE)
              .tryAcquire()
              .orElseThrow(() -> new AssertionError("a new count once free was refused"));
      five.release();
    }
  }

  @Test
  void permitOfAHolderThatStopsRenewingComesBackAndRenewalKeepsOne() throws Exception {
    String name = "sem-expiry";
    LockOptions shortUnrenewed =
        LockOptions.builder()
            .lease(Duration.ofMillis(600))
            .autoRenew(false)
            .reentrant(false)
            .build();
    // Renewed every third of its lease: the 1.3 s left between two renewals are slack enough for
    // a loaded machine (with a 600 ms lease, a renewal 400 ms late lost it: CI failed this way)
    LockOptions renewed =
        LockOptions.builder().lease(Duration.ofSeconds(2)).reentrant(false).build();
    try (LockClient a = connect();
        LockClient b = connect()) {
      Lease lapsing = a.semaphore(name, 1, shortUnrenewed).acquire(Duration.ofSeconds(5));
      Lease next = b.semaphore(name, 1, renewed).acquire(Duration.ofSeconds(10));
      assertThat(lapsing.isValid())
          .as("the unrenewed lease once the next holder has the permit")
          .isFalse();
      assertThat(next.fencingToken()).isGreaterThan(lapsing.fencingToken());
      Thread.sleep(2_600); // past its lease: renewal keeps it
      assertThat(next.isValid()).isTrue();
      assertThat(a.semaphore(name, 1, renewed).tryAcquire())
          .as("a second permit of 1 while renewed")
          .isEmpty();
      assertThat(next.release()).isTrue();
    }
  }

  @Test
  void releaseOfASlotThatRanOutAndWasGrantedAgainFreesNothing() throws Exception {
    String name = "sem-owner-check";
    try (RedlockBackend backend = open("owner-check", Duration.ofSeconds(1))) {
      Duration shortLease = Duration.ofMillis(300);
      Poll first = backend.attempt(name, Claim.permit(1), "owner-a", shortLease, () -> {}).poll();
      assertThat(first.isGranted()).isTrue();
      Thread.sleep(400);
      Poll second =
          backend
              .attempt(name, Claim.permit(1), "owner-b", Duration.ofSeconds(10), () -> {})
              .poll();
      assertThat(second.isGranted()).as("the slot after its lease ran out").isTrue();
      BackendLease stale =
          new BackendLease(
              name, Claim.permit(1), "owner-a", first.fencingToken(), shortLease, first.state());
      BackendLease live =
          new BackendLease(
              name,
              Claim.permit(1),
              "owner-b",
              second.fencingToken(),
              Duration.ofSeconds(10),
              second.state());
      assertThat(backend.release(stale))
          .as("release of the lease whose slot was granted again")
          .isFalse();
      List<Renewal> renewals = backend.renew(List.of(stale, live));
      assertThat(renewals.get(0).kind())
          .as("renewal of the lease whose slot was granted again")
          .isEqualTo(Renewal.Kind.LOST);
      assertThat(renewals.get(1).kind())
          .as("renewal of the slot's holder, in the same batch")
          .isEqualTo(Renewal.Kind.RENEWED);
      for (int i = 0; i < servers.size(); i++) {
        // the second grant answered once a majority had it: a server outside it follows a moment
        // later
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        while (!slots(i, name).equals(Set.of("0")) && System.nanoTime() - deadline < 0) {
          Thread.sleep(5);
        }
        assertThat(slots(i, name)).as("slots on server %d", i).containsExactly("0");
      }
      assertThat(backend.extend(live, Duration.ofSeconds(20))).as("extend of a permit").isTrue();
      assertThat(backend.release(live)).isTrue();
    }
  }

  @Test
  void readersOfTwoClientsShareAndAWriterWaitsForThemAheadOfNewReadersWithHigherTokens()
      throws Exception {
    String name = "rw-share";
    try (LockClient a = connect();
        LockClient b = connect();
        LockClient c = connect();
        LockClient d = connect()) {
      Lease r1 =
          a.readWriteLock(name)
              .readLock()
              .tryAcquire()
              .orElseThrow(() -> new AssertionError("first reader refused"));
      Lease r2 =
          b.readWriteLock(name)
              .readLock()
              .tryAcquire()
              .orElseThrow(() -> new AssertionError("second reader refused"));
      // a writer that does not wait marks nothing: a mark made only to be withdrawn would keep out
      // a reader that asks
      // before the withdrawal lands (RedlockAttempt's pollWithoutWaiting)
      long marks =
          zaddsOn(
              RedlockServers.CLAIM_KEYS.writersWaiting(name),
              () ->
                  assertThat(c.readWriteLock(name).writeLock().tryAcquire())
                      .as("writer while two read")
                      .isEmpty());
      assertThat(marks)
          .as("marks set on the servers by a refused tryAcquire() of the write lock")
          .isZero();
      Future<Lease> writer =
          Executors.newSingleThreadExecutor()
              .submit(() -> c.readWriteLock(name).writeLock().acquire(Duration.ofSeconds(20)));
      // on every server: the writer marks them all at once, and a reader refused by a majority
      // needs the mark on
      // three of five (waiting for server 0 alone let a reader in now and then, granted by the four
      // not yet marked)
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      for (int i = 0; i < servers.size(); i++) {
        while (count(i, RedlockServers.CLAIM_KEYS.writersWaiting(name)) == 0) {
          assertThat(System.nanoTime() - deadline)
              .as("the waiting writer's mark never appeared on server %d", i)
              .isNegative();
          Thread.sleep(5);
        }
      }
      assertThat(d.readWriteLock(name).readLock().tryAcquire(Duration.ofMillis(300)))
          .as("a new reader while a writer waits (writer preference)")
          .isEmpty();
      r1.release();
      r2.release();
      Lease w = writer.get(10, TimeUnit.SECONDS);
      assertThat(w.fencingToken())
          .as("write token above the read tokens")
          .isGreaterThan(Math.max(r1.fencingToken(), r2.fencingToken()));
      // the marks go at once where the writer was granted, and in the background where it was
      // refused
      long unmarkedBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
      for (int i = 0; i < servers.size(); i++) {
        while (count(i, RedlockServers.CLAIM_KEYS.writersWaiting(name)) != 0) {
          assertThat(System.nanoTime() - unmarkedBy)
              .as("writer marks left on server %d 1s after the grant", i)
              .isNegative();
          Thread.sleep(5);
        }
      }
      assertThat(b.readWriteLock(name).readLock().tryAcquire())
          .as("a reader while the writer holds")
          .isEmpty();
      assertThat(a.readWriteLock(name).writeLock().tryAcquire()).as("a second writer").isEmpty();
      w.release();
      Lease r3 =
          b.readWriteLock(name)
              .readLock()
              .tryAcquire()
              .orElseThrow(() -> new AssertionError("reader after the writer left"));
      assertThat(r3.fencingToken())
          .as("read token above the earlier write token")
          .isGreaterThan(w.fencingToken());
      r3.release();
    }
  }

  @Test
  void aWriterThatWithdrawsLetsReadersInAtOnceAndOneThatVanishesWithinItsMarksLife()
      throws Exception {
    String name = "rw-marks";
    Duration recheck = Duration.ofMillis(200);
    try (RedlockBackend backend = open("marks", recheck)) {
      Duration lease = Duration.ofSeconds(10);
      Poll reader = backend.attempt(name, Claim.read(), "reader-1", lease, () -> {}).poll();
      assertThat(reader.isGranted()).isTrue();
      LockAttempt writer = backend.attempt(name, Claim.write(), "writer-1", lease, () -> {});
      assertThat(writer.poll().isGranted()).as("writer while a reader holds").isFalse();
      assertThat(
              backend.attempt(name, Claim.read(), "reader-2", lease, () -> {}).poll().isGranted())
          .as("reader while a writer waits")
          .isFalse();
      writer.abandon();
      long markLife = backend.writerMarkMillis(lease);
      long start = System.nanoTime();
      awaitGranted(
          backend.attempt(name, Claim.read(), "reader-3", lease, () -> {}),
          Duration.ofMillis(markLife / 2),
          "reader after the waiting writer withdrew");
      assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(markLife);

      // a writer that vanishes without withdrawing: its marks lapse by themselves
      LockAttempt ghost = backend.attempt(name, Claim.write(), "writer-2", lease, () -> {});
      assertThat(ghost.poll().isGranted()).isFalse();
      assertThat(
              backend.attempt(name, Claim.read(), "reader-4", lease, () -> {}).poll().isGranted())
          .as("reader right after a writer marked itself")
          .isFalse();
      awaitGranted(
          backend.attempt(name, Claim.read(), "reader-5", lease, () -> {}),
          Duration.ofMillis(markLife * 3),
          "reader once the vanished writer's marks lapsed");
    }
  }

  private static void awaitGranted(LockAttempt attempt, Duration within, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (!attempt.poll().isGranted()) {
      assertThat(System.nanoTime() - deadline)
          .as("%s: still refused after %d ms", what, within.toMillis())
          .isNegative();
      Thread.sleep(20);
    }
  }

  @Test
  void lockSemaphoreAndReadWriteLockOfOneNameAreApart() throws Exception {
    String name = "apart";
    try (LockClient a = connect();
        LockClient b = connect()) {
      Lease lock = a.lock(name).acquire(Duration.ofSeconds(5));
      Lease permit = a.semaphore(name, 1, ONE_PER_ACQUIRE).acquire(Duration.ofSeconds(5));
      Lease write = a.readWriteLock(name).writeLock().acquire(Duration.ofSeconds(5));
      assertThat(b.lock(name).tryAcquire()).isEmpty();
      assertThat(b.semaphore(name, 1, ONE_PER_ACQUIRE).tryAcquire()).isEmpty();
      assertThat(b.readWriteLock(name).readLock().tryAcquire()).isEmpty();
      permit.release();
      write.release();
      assertThat(b.lock(name).tryAcquire())
          .as("the lock, once the semaphore and read-write lock are free")
          .isEmpty();
      b.semaphore(name, 1, ONE_PER_ACQUIRE)
          .tryAcquire()
          .orElseThrow(() -> new AssertionError("semaphore"))
          .release();
      b.readWriteLock(name)
          .writeLock()
          .tryAcquire()
          .orElseThrow(() -> new AssertionError("write lock"))
          .release();
      lock.release();
    }
  }

  @Test
  void withTwoOfFiveDownPermitsAndSidesStillHoldTheirBounds() throws Exception {
    String name = "minority-down";
    servers.kill(3, 4);
    try (LockClient a = connect();
        LockClient b = connect()) {
      Lease p1 = a.semaphore(name, 2, ONE_PER_ACQUIRE).acquire(Duration.ofSeconds(5));
      Lease p2 = b.semaphore(name, 2, ONE_PER_ACQUIRE).acquire(Duration.ofSeconds(5));
      Optional<Lease> third =
          a.semaphore(name, 2, ONE_PER_ACQUIRE).tryAcquire(Duration.ofMillis(300));
      assertThat(third).as("a 3rd permit of 2 with two servers down").isEmpty();
      Lease r = a.readWriteLock(name).readLock().acquire(Duration.ofSeconds(5));
      assertThat(b.readWriteLock(name).writeLock().tryAcquire(Duration.ofMillis(300)))
          .as("writer while a reader holds")
          .isEmpty();
      r.release();
      Lease w = b.readWriteLock(name).writeLock().acquire(Duration.ofSeconds(5));
      assertThat(w.fencingToken()).isGreaterThan(r.fencingToken());
      w.release();
      p1.release();
      p2.release();
    } finally {
      servers.restart(3, 4);
    }
  }
}
