package dev.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.Guarantees;
import dev.locksmith.HeldLock;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.RecordingContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Semaphores and read-write locks on a real ZooKeeper server in this JVM (curator-test), driving
 * two backends (two clients) directly, as the core would: poll, sleep until woken or the retry is
 * due, release. Checks the count across clients, a crashed or expired client's permits coming free,
 * the refusal of another count, shared readers, exclusive writers, arrival order (a reader behind a
 * waiting writer waits), a writer's withdrawal waking the readers behind it, tokens rising per
 * grant, and a lock, a semaphore and a read-write lock of one name staying apart.
 */
class ZooKeeperSemaphoreIT {
  private static final Duration LEASE = Duration.ofSeconds(30);

  @RegisterExtension
  static final ZooKeeperServerExtension ZK =
      ZooKeeperServerExtension.inThisJvm("zk-semaphore").withAdmin(null, 30_000);

  /**
   * A 6 s session: a client that stalls for a second and a half at the JVM's start (seen once:
   * SUSPENDED 1.3 s into a 2 s session, at the first test of a fresh clone's run) then neither
   * loses its connection nor a wake-up. The crash test uses 2 s, for the session to end soon.
   */
  private static ZooKeeperBackend open(RecordingContext context) {
    return open(context, "6s");
  }

  private static ZooKeeperBackend open(RecordingContext context, String sessionTimeout) {
    String uri =
        "zookeeper://"
            + ZK.connectString()
            + "?session-timeout="
            + sessionTimeout
            + "&connection-timeout=2s";
    LockUri parsed = LockUri.parse(uri);
    return (ZooKeeperBackend)
        new ZooKeeperLockProvider()
            .open(new BackendConfig(parsed, parsed.query(), List.of()), context);
  }

  private static String name() {
    return "semaphore-it/" + UUID.randomUUID();
  }

  /** One acquisition as the core runs it: the wake releases a permit the loop sleeps on. */
  private static final class Waiting {
    final ZooKeeperBackend backend;
    final String name;
    final Claim claim;
    final String ownerId;
    final Semaphore woken = new Semaphore(0);
    final AtomicInteger wakes = new AtomicInteger();
    final LockAttempt attempt;

    Waiting(ZooKeeperBackend backend, RecordingContext context, String name, Claim claim, int n) {
      this.backend = backend;
      this.name = name;
      this.claim = claim;
      this.ownerId = context.clientId() + ":" + n;
      this.attempt =
          backend.attempt(
              name,
              claim,
              ownerId,
              LEASE,
              () -> {
                wakes.incrementAndGet();
                woken.release();
              });
    }

    /**
     * Polls until granted or {@code within} has passed, sleeping as the core does between polls.
     */
    Poll pollUntilGranted(Duration within) throws InterruptedException {
      long deadline = System.nanoTime() + within.toNanos();
      while (true) {
        Poll p = attempt.poll();
        if (p.isGranted()) {
          return p;
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return null;
        }
        woken.tryAcquire(
            Math.min(left, Math.min(p.retryAfter().toNanos(), TimeUnit.SECONDS.toNanos(1))),
            TimeUnit.NANOSECONDS);
      }
    }

    Poll granted() throws InterruptedException {
      Poll p = pollUntilGranted(Duration.ofSeconds(10));
      if (p == null) {
        fail(ownerId + " was not granted " + claim + " of '" + name + "' within 10 s");
      }
      return p;
    }

    boolean release(Poll grant) {
      return backend.release(
          new BackendLease(name, claim, ownerId, grant.fencingToken(), LEASE, grant.state()));
    }
  }

  private static void await(Duration within, String what, BooleanSupplier condition)
      throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        fail("expected within " + within.toMillis() + " ms: " + what);
      }
      Thread.sleep(5);
    }
  }

  private static String path(Poll grant) {
    return "/" + ZooKeeperSettings.DEFAULT_NAMESPACE + ((ZooKeeperBackend.Held) grant.state()).path;
  }

  private static List<String> children(String name, Claim.Kind kind) throws Exception {
    try {
      return ZK.admin()
          .getChildren()
          .forPath("/" + ZooKeeperSettings.DEFAULT_NAMESPACE + NodeNames.parent(name, kind));
    } catch (org.apache.zookeeper.KeeperException.NoNodeException e) {
      return List.of();
    }
  }

  /**
   * One lease as the contenders saw it: taken after {@code polledAt}, given back before {@code
   * releasedAt}.
   */
  private static final class Span {
    final long token;
    final long polledAt;
    final long releasedAt;

    Span(long token, long polledAt, long releasedAt) {
      this.token = token;
      this.polledAt = polledAt;
      this.releasedAt = releasedAt;
    }
  }

  @Test
  void neverMoreThanThePermitsAcrossTwoClientsAndTokensRisePerGrant() throws Exception {
    RecordingContext ca = new RecordingContext();
    RecordingContext cb = new RecordingContext();
    String name = name();
    Claim three = Claim.permit(3);
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    List<Span> spans = Collections.synchronizedList(new ArrayList<>());
    AtomicInteger owners = new AtomicInteger();
    ExecutorService threads = Executors.newFixedThreadPool(8);
    try (ZooKeeperBackend a = open(ca);
        ZooKeeperBackend b = open(cb)) {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        ZooKeeperBackend backend = t % 2 == 0 ? a : b;
        RecordingContext context = t % 2 == 0 ? ca : cb;
        done.add(
            threads.submit(
                () -> {
                  for (int i = 0; i < 6; i++) {
                    Waiting w =
                        new Waiting(backend, context, name, three, owners.incrementAndGet());
                    long polledAt = System.nanoTime();
                    Poll grant = w.granted();
                    int now = inside.incrementAndGet();
                    most.accumulateAndGet(now, Math::max);
                    if (i == 0) {
                      // the first holders keep their permits until three are held at once (or 10 s
                      // passed): on a loaded machine 15 ms holds may never overlap, and the count
                      // below would measure the scheduler, not the semaphore
                      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                      while (most.get() < 3 && System.nanoTime() - until < 0) {
                        Thread.sleep(2);
                      }
                    }
                    Thread.sleep(15);
                    inside.decrementAndGet();
                    long releasedAt = System.nanoTime();
                    assertThat(w.release(grant)).as("release of a held permit").isTrue();
                    spans.add(new Span(grant.fencingToken(), polledAt, releasedAt));
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      threads.shutdownNow();
    }
    assertThat(most.get()).as("most permits held at once (3 allowed, 8 contenders)").isEqualTo(3);
    assertThat(spans).hasSize(48);
    for (Span x : spans) {
      for (Span y : spans) {
        if (x.releasedAt - y.polledAt < 0) {
          assertThat(y.token)
              .as("a grant asked for after another lease ended has the higher token")
              .isGreaterThan(x.token);
        }
      }
    }
    assertThat(spans.stream().map(s -> s.token).distinct().count())
        .as("distinct tokens")
        .isEqualTo(48);
    assertThat(children(name, Claim.Kind.PERMIT)).as("nodes left").isEmpty();
  }

  @Test
  void aCrashedClientsPermitsComeFreeWhenItsSessionEndsAndAnExpiredSessionIsReported()
      throws Exception {
    RecordingContext ca = new RecordingContext();
    RecordingContext cb = new RecordingContext();
    RecordingContext cc = new RecordingContext();
    String name = name();
    Claim two = Claim.permit(2);
    ZooKeeperBackend crashing = open(ca, "2s");
    try (ZooKeeperBackend expiring = open(cb);
        ZooKeeperBackend waiting = open(cc)) {
      new Waiting(crashing, ca, name, two, 1).granted();
      Waiting expired = new Waiting(expiring, cb, name, two, 1);
      expired.granted();
      Waiting third = new Waiting(waiting, cc, name, two, 1);
      assertThat(third.pollUntilGranted(Duration.ofMillis(300)))
          .as("a third permit of two")
          .isNull();

      // expire one holder's session for real: attach to it from a second handle and close that
      ZooKeeper zk = expiring.curator().getZookeeperClient().getZooKeeper();
      java.util.concurrent.CountDownLatch attached = new java.util.concurrent.CountDownLatch(1);
      ZooKeeper twin =
          new ZooKeeper(
              ZK.connectString(),
              2000,
              event -> {
                if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                  attached.countDown();
                }
              },
              zk.getSessionId(),
              zk.getSessionPasswd());
      assertThat(attached.await(10, TimeUnit.SECONDS)).isTrue();
      twin.close();
      await(
          Duration.ofSeconds(10),
          "the expired session's permit is reported lost",
          () -> cb.sawLoss(expired.ownerId));
      assertThat(third.pollUntilGranted(Duration.ofSeconds(5)))
          .as("the permit the expired session held")
          .isNotNull();

      Waiting fourth = new Waiting(waiting, cc, name, two, 2);
      assertThat(fourth.pollUntilGranted(Duration.ofMillis(300)))
          .as("while the crashed client's session lives")
          .isNull();
      long crashedAt = System.nanoTime();
      crashing.abandon();
      assertThat(fourth.pollUntilGranted(Duration.ofSeconds(8)))
          .as("the crashed client's permit, once its session ends")
          .isNotNull();
      assertThat(Duration.ofNanos(System.nanoTime() - crashedAt))
          .as("freed by the 2 s session timeout, not sooner")
          .isGreaterThan(Duration.ofMillis(1000));
      assertThat(ca.calls).as("a crashed backend reports nothing").isEmpty();
    } finally {
      crashing.close();
    }
  }

  @Test
  void anotherCountWhilePermitsAreHeldIsRefusedAndLeavesNoNodeThenTheCountMayChange()
      throws Exception {
    RecordingContext ca = new RecordingContext();
    RecordingContext cb = new RecordingContext();
    String name = name();
    try (ZooKeeperBackend a = open(ca);
        ZooKeeperBackend b = open(cb)) {
      Waiting two = new Waiting(a, ca, name, Claim.permit(2), 1);
      Poll held = two.granted();
      Waiting five = new Waiting(b, cb, name, Claim.permit(5), 1);
      assertThatThrownBy(five.attempt::poll)
          .isInstanceOf(IllegalStateException.class)
          .hasMessage(Claim.permitsInUse(name, 5, 2).getMessage());
      five.attempt.abandon();
      assertThat(children(name, Claim.Kind.PERMIT)).as("the refused attempt's node").hasSize(1);
      assertThat(two.release(held)).isTrue();
      Poll again = new Waiting(b, cb, name, Claim.permit(5), 2).granted();
      assertThat(again.fencingToken()).isGreaterThan(held.fencingToken());
    }
  }

  @Test
  void readersShareAcrossClientsAndAWriterWaitsForAllOfThemAndIsWokenByTheLast() throws Exception {
    RecordingContext ca = new RecordingContext();
    RecordingContext cb = new RecordingContext();
    String name = name();
    try (ZooKeeperBackend a = open(ca);
        ZooKeeperBackend b = open(cb)) {
      Waiting r1 = new Waiting(a, ca, name, Claim.read(), 1);
      Waiting r2 = new Waiting(b, cb, name, Claim.read(), 1);
      Waiting r3 = new Waiting(a, ca, name, Claim.read(), 2);
      Poll g1 = r1.granted();
      Poll g2 = r2.granted();
      Poll g3 = r3.granted();
      Waiting writer = new Waiting(b, cb, name, Claim.write(), 2);
      assertThat(writer.attempt.poll().isGranted())
          .as("a writer while three readers hold")
          .isFalse();
      assertThat(r1.release(g1)).isTrue();
      assertThat(r3.release(g3)).isTrue();
      // A poll within half a recheck of the previous one, with no event seen yet, answers from what
      // that one read: the
      // watch on the released r3 may then not have fired yet, and nothing would watch r2 when it
      // goes. The core polls
      // again on that late wake; this test does not, so it lets the window pass and the poll read
      // the children anew.
      Thread.sleep(ca.recheck().toMillis() / 2 + 100);
      assertThat(writer.attempt.poll().isGranted()).as("a writer while one reader holds").isFalse();
      int wakesBefore = writer.wakes.get();
      assertThat(r2.release(g2)).isTrue();
      await(
          Duration.ofSeconds(5),
          "the last reader's release wakes the writer",
          () -> writer.wakes.get() > wakesBefore);
      Poll w = writer.attempt.poll();
      assertThat(w.isGranted()).as("the writer once no reader holds").isTrue();
      assertThat(w.fencingToken())
          .isGreaterThan(
              Math.max(g1.fencingToken(), Math.max(g2.fencingToken(), g3.fencingToken())));
      Waiting reader = new Waiting(a, ca, name, Claim.read(), 3);
      assertThat(reader.pollUntilGranted(Duration.ofMillis(300)))
          .as("a reader while the writer holds")
          .isNull();
      Waiting writer2 = new Waiting(a, ca, name, Claim.write(), 4);
      assertThat(writer2.pollUntilGranted(Duration.ofMillis(100)))
          .as("a second writer while the writer holds")
          .isNull();
      assertThat(writer.release(w)).isTrue();
      Poll r = reader.granted();
      assertThat(r.fencingToken()).isGreaterThan(w.fencingToken());
      assertThat(writer2.pollUntilGranted(Duration.ofMillis(300)))
          .as("the second writer while the reader holds")
          .isNull();
      assertThat(reader.release(r)).isTrue();
      assertThat(writer2.granted().fencingToken()).isGreaterThan(r.fencingToken());
    }
  }

  @Test
  void aReaderArrivingBehindAWaitingWriterWaitsAndItsWithdrawalLetsTheReaderIn() throws Exception {
    RecordingContext ca = new RecordingContext();
    RecordingContext cb = new RecordingContext();
    String name = name();
    try (ZooKeeperBackend a = open(ca);
        ZooKeeperBackend b = open(cb)) {
      Waiting first = new Waiting(a, ca, name, Claim.read(), 1);
      Poll held = first.granted();
      Waiting writer = new Waiting(b, cb, name, Claim.write(), 1);
      assertThat(writer.attempt.poll().isGranted()).isFalse();
      Waiting late = new Waiting(a, ca, name, Claim.read(), 2);
      assertThat(late.pollUntilGranted(Duration.ofMillis(300)))
          .as("a reader behind a waiting writer, while only readers hold")
          .isNull();
      int wakesBefore = late.wakes.get();
      writer.attempt.abandon();
      await(
          Duration.ofSeconds(5),
          "the writer's withdrawal wakes the reader behind it",
          () -> late.wakes.get() > wakesBefore);
      Poll in = late.attempt.poll();
      assertThat(in.isGranted()).as("the reader once the writer withdrew").isTrue();
      assertThat(children(name, Claim.Kind.WRITE)).as("nodes: the two readers'").hasSize(2);
      assertThat(first.release(held)).isTrue();
      assertThat(late.release(in)).isTrue();
    }
  }

  @Test
  void aWaitingWriterIsServedBeforeAReaderThatCameAfterIt() throws Exception {
    RecordingContext ca = new RecordingContext();
    String name = name();
    try (ZooKeeperBackend a = open(ca)) {
      Waiting first = new Waiting(a, ca, name, Claim.read(), 1);
      Poll held = first.granted();
      Waiting writer = new Waiting(a, ca, name, Claim.write(), 2);
      assertThat(writer.attempt.poll().isGranted()).isFalse();
      Waiting late = new Waiting(a, ca, name, Claim.read(), 3);
      assertThat(late.attempt.poll().isGranted()).isFalse();
      assertThat(first.release(held)).isTrue();
      assertThat(late.pollUntilGranted(Duration.ofMillis(300)))
          .as("the late reader, while the writer is first in line")
          .isNull();
      Poll w = writer.granted();
      assertThat(late.pollUntilGranted(Duration.ofMillis(100)))
          .as("the late reader while the writer holds")
          .isNull();
      assertThat(writer.release(w)).isTrue();
      assertThat(late.granted().fencingToken()).isGreaterThan(w.fencingToken());
    }
  }

  @Test
  void readersGrantedOutOfTheirNodesOrderStillGetRisingTokens() throws Exception {
    RecordingContext ca = new RecordingContext();
    String name = name();
    try (ZooKeeperBackend a = open(ca)) {
      Waiting writer = new Waiting(a, ca, name, Claim.write(), 1);
      Poll w = writer.granted();
      Waiting older = new Waiting(a, ca, name, Claim.read(), 2);
      Waiting newer = new Waiting(a, ca, name, Claim.read(), 3);
      assertThat(older.attempt.poll().isGranted()).isFalse(); // creates the older node
      assertThat(newer.attempt.poll().isGranted()).isFalse();
      assertThat(writer.release(w)).isTrue();
      Poll second = newer.granted();
      Poll third = older.granted();
      assertThat(((ZooKeeperBackend.Held) third.state()).czxid)
          .as("the older node was made first")
          .isLessThan(((ZooKeeperBackend.Held) second.state()).czxid);
      assertThat(second.fencingToken()).isGreaterThan(w.fencingToken());
      assertThat(third.fencingToken())
          .as("the later grant's token, though its node is older")
          .isGreaterThan(second.fencingToken());
    }
  }

  @Test
  void aPermitsNodeDeletedBehindItsBackIsALostLease() throws Exception {
    RecordingContext ca = new RecordingContext();
    try (ZooKeeperBackend a = open(ca)) {
      Waiting w = new Waiting(a, ca, name(), Claim.permit(2), 1);
      Poll grant = w.granted();
      Thread.sleep(ZooKeeperBackend.WATCH_DELAY.toMillis() * 3); // let the watch on the node be set
      ZK.admin().delete().forPath(path(grant));
      await(Duration.ofSeconds(5), "the deletion is reported", () -> ca.sawLoss(w.ownerId));
      assertThat(w.release(grant)).as("release of a node already gone").isFalse();
    }
  }

  @Test
  void aLockASemaphoreAndAReadWriteLockOfOneNameNeverMeet() throws Exception {
    RecordingContext ca = new RecordingContext();
    String name = name();
    try (ZooKeeperBackend a = open(ca)) {
      assertThat(pollOnce(a.attempt(name, ca.clientId() + ":1", LEASE, () -> {})))
          .as("the lock")
          .isTrue();
      assertThat(new Waiting(a, ca, name, Claim.permit(1), 2).attempt.poll().isGranted())
          .as("its semaphore of 1")
          .isTrue();
      assertThat(new Waiting(a, ca, name, Claim.write(), 3).attempt.poll().isGranted())
          .as("its write lock")
          .isTrue();
      assertThat(children(name, Claim.Kind.EXCLUSIVE)).hasSize(1);
      assertThat(children(name, Claim.Kind.PERMIT)).hasSize(1);
      assertThat(children(name, Claim.Kind.WRITE)).hasSize(1);
    }
  }

  /**
   * Counted with Curator's tracer: an uncontended permit or read side, acquired and released, sends
   * four requests, one more than a lock: the create (in the background) with the children read sent
   * right behind it, the multi that makes the token, and the delete. Released within {@link
   * ZooKeeperBackend#WATCH_DELAY}, no watch is set on the node.
   */
  @Test
  void anUncontendedPermitOrReadSendsFourRequestsAndTokensRise() throws Exception {
    RecordingContext ca = new RecordingContext();
    try (ZooKeeperBackend a = open(ca)) {
      String name = name();
      for (Claim claim : List.of(Claim.permit(2), Claim.read())) {
        Waiting warm = new Waiting(a, ca, name, claim, 0);
        assertThat(warm.release(warm.granted())).isTrue(); // the parent nodes exist from now on
      }
      Map<String, Integer> traced = new java.util.concurrent.ConcurrentHashMap<>();
      a.curator()
          .getZookeeperClient()
          .setTracerDriver(
              new org.apache.curator.drivers.TracerDriver() {
                @Override
                public void addTrace(String trace, long time, TimeUnit unit) {
                  traced.merge(trace, 1, Integer::sum);
                }

                @Override
                public void addCount(String counter, int increment) {}
              });
      long receivedBefore = ZooKeeperEnsembleFixture.received(ZK.port());
      int n = 10;
      List<Long> tokens = new ArrayList<>();
      for (int i = 1; i <= n; i++) {
        Waiting w = new Waiting(a, ca, name, i % 2 == 0 ? Claim.permit(2) : Claim.read(), i);
        Poll grant = w.attempt.poll();
        assertThat(grant.isGranted()).as("uncontended acquire %d", i).isTrue();
        tokens.add(grant.fencingToken());
        assertThat(w.release(grant)).isTrue();
      }
      Thread.sleep(
          3
              * ZooKeeperBackend.WATCH_DELAY
                  .toMillis()); // a watch of a lease held too long is set by now
      a.curator()
          .checkExists()
          .forPath("/"); // answered in order: every request sent before has been answered
      Map<String, Integer> all = new java.util.TreeMap<>(traced);
      Integer watches = all.remove("ExistsBuilderImpl-Background");
      assertThat(watches == null ? 0 : watches)
          .as("own-node watches over %d holds of about a millisecond", n)
          .isLessThanOrEqualTo(2);
      // the release's delete goes on ZooKeeper's own handle, which the tracer does not see: the
      // server counts it
      assertThat(all)
          .as(
              "operations through Curator over %d uncontended acquire + release, then one exists",
              n)
          .isEqualTo(
              Map.of(
                  "CreateBuilderImpl-Background",
                  n,
                  "GetChildrenBuilderImpl-Foreground",
                  n,
                  "CuratorMultiTransactionImpl-Foreground",
                  n,
                  "ExistsBuilderImpl-Foreground",
                  1));
      long received = ZooKeeperEnsembleFixture.received(ZK.port()) - receivedBefore;
      assertThat(received)
          .as(
              "requests the server received over %d uncontended acquire + release, then one exists",
              n)
          .isBetween(4L * n + 1, 4L * n + 1 + (watches == null ? 0 : watches) + 2);
      assertThat(tokens)
          .as("tokens of a semaphore and a read-write lock: zxids of their grants")
          .isSorted()
          .doesNotHaveDuplicates();
    }
  }

  /** The tokens of a listing's holders, in order. */
  private static List<Long> tokens(HeldLock held) {
    List<Long> tokens = new ArrayList<>();
    held.holders().forEach(h -> tokens.add(h.fencingToken().getAsLong()));
    return tokens;
  }

  @Test
  void aListingShowsEveryHoldingWithItsTokenAndOwnerAndNeverAWaiter() throws Exception {
    RecordingContext ca = new RecordingContext();
    RecordingContext cb = new RecordingContext();
    String name = name();
    try (ZooKeeperBackend a = open(ca);
        ZooKeeperBackend b = open(cb)) {
      assertThat(a.inspectHolders(name, Guarantees.Primitive.SEMAPHORE)).isNull();
      assertThat(a.inspectHolders(name, Guarantees.Primitive.READ_WRITE_LOCK)).isNull();
      Waiting p1 = new Waiting(a, ca, name, Claim.permit(2), 1);
      Waiting p2 = new Waiting(b, cb, name, Claim.permit(2), 2);
      Poll g1 = p1.granted();
      Poll g2 = p2.granted();
      Waiting p3 = new Waiting(b, cb, name, Claim.permit(2), 3);
      assertThat(pollOnce(p3.attempt)).as("a third permit of two").isFalse();
      assertThat(children(name, Claim.Kind.PERMIT)).hasSize(3);
      HeldLock sem = b.inspectHolders(name, Guarantees.Primitive.SEMAPHORE);
      assertThat(sem.kind()).isEqualTo(HeldLock.Kind.SEMAPHORE);
      assertThat(tokens(sem)).containsExactly(g1.fencingToken(), g2.fencingToken());
      assertThat(sem.holders())
          .extracting(h -> h.holder().orElse(null))
          .containsExactly(p1.ownerId, p2.ownerId);
      assertThat(sem.holders()).allMatch(h -> h.remaining().isEmpty());
      assertThat(a.listNames(name, null, 10, Guarantees.Primitive.SEMAPHORE).names())
          .containsExactly(name);
      assertThat(a.listNames(name, null, 10, Guarantees.Primitive.READ_WRITE_LOCK).names())
          .as("no read-write lock of that name")
          .isEmpty();
      assertThat(a.listNames(name, null, 10).names()).as("no lock of that name").isEmpty();
      assertThat(p1.release(g1)).isTrue();
      // the waiter is first in the queue's grant now, but has not taken it: not a holder yet
      assertThat(tokens(a.inspectHolders(name, Guarantees.Primitive.SEMAPHORE)))
          .containsExactly(g2.fencingToken());
      Poll g3 = p3.granted();
      assertThat(tokens(a.inspectHolders(name, Guarantees.Primitive.SEMAPHORE)))
          .containsExactly(g2.fencingToken(), g3.fencingToken());
      assertThat(p2.release(g2)).isTrue();
      assertThat(p3.release(g3)).isTrue();
      assertThat(a.inspectHolders(name, Guarantees.Primitive.SEMAPHORE)).isNull();

      Waiting r1 = new Waiting(a, ca, name, Claim.read(), 4);
      Waiting r2 = new Waiting(b, cb, name, Claim.read(), 5);
      Poll gr1 = r1.granted();
      Poll gr2 = r2.granted();
      Waiting w = new Waiting(b, cb, name, Claim.write(), 6);
      assertThat(pollOnce(w.attempt)).as("a writer while two readers hold").isFalse();
      Waiting late = new Waiting(a, ca, name, Claim.read(), 7);
      assertThat(pollOnce(late.attempt)).as("a reader behind a waiting writer").isFalse();
      HeldLock read = a.inspectHolders(name, Guarantees.Primitive.READ_WRITE_LOCK);
      assertThat(read.kind()).isEqualTo(HeldLock.Kind.READ);
      assertThat(tokens(read)).containsExactly(gr1.fencingToken(), gr2.fencingToken());
      assertThat(read.holders())
          .extracting(h -> h.holder().orElse(null))
          .containsExactly(r1.ownerId, r2.ownerId);
      assertThat(a.listNames(name, null, 10, Guarantees.Primitive.READ_WRITE_LOCK).names())
          .containsExactly(name);
      assertThat(r1.release(gr1)).isTrue();
      assertThat(r2.release(gr2)).isTrue();
      Poll gw = w.granted();
      HeldLock write = a.inspectHolders(name, Guarantees.Primitive.READ_WRITE_LOCK);
      assertThat(write.kind()).isEqualTo(HeldLock.Kind.WRITE);
      assertThat(tokens(write)).containsExactly(gw.fencingToken());
      assertThat(write.holders().get(0).holder()).contains(w.ownerId);
      assertThat(w.release(gw)).isTrue();
      Poll gl = late.granted();
      assertThat(tokens(a.inspectHolders(name, Guarantees.Primitive.READ_WRITE_LOCK)))
          .containsExactly(gl.fencingToken());
      assertThat(late.release(gl)).isTrue();
      assertThat(a.inspectHolders(name, Guarantees.Primitive.READ_WRITE_LOCK)).isNull();
    }
  }

  private static boolean pollOnce(LockAttempt attempt) throws InterruptedException {
    return attempt.poll().isGranted();
  }
}
