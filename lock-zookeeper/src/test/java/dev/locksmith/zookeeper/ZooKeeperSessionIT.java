package dev.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.RecordingContext;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The session rules, against a real ZooKeeper server in this JVM (curator-test), driving the
 * backend directly so every callback into the core can be checked: SUSPENDED puts a lease in doubt
 * and RECONNECTED confirms it, an expired session is a lost lease, a crashed client's node stays
 * until its session times out, a withdrawn waiter leaves nothing, and ACLs and credentials are
 * applied.
 */
class ZooKeeperSessionIT {

  @RegisterExtension
  static final ZooKeeperServerExtension ZK =
      ZooKeeperServerExtension.inThisJvm("zk-session").withAdmin(null, 30_000);

  private static ZooKeeperBackend open(RecordingContext context, String query) {
    String uri = "zookeeper://" + ZK.connectString() + "?" + query;
    LockUri parsed = LockUri.parse(uri);
    return (ZooKeeperBackend)
        new ZooKeeperLockProvider()
            .open(new BackendConfig(parsed, parsed.query(), List.of()), context);
  }

  private static Poll pollUntilGranted(LockAttempt attempt) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      Poll p = attempt.poll();
      if (p.isGranted()) {
        return p;
      }
      Thread.sleep(5); // a retry loop as the core runs it, not a wait for a condition
    }
    throw new AssertionError("not granted within 10 s");
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

  private static String lockName() {
    return "session-it/" + UUID.randomUUID();
  }

  private static String nodePath(Poll grant) {
    return "/" + ZooKeeperSettings.DEFAULT_NAMESPACE + ((ZooKeeperBackend.Held) grant.state()).path;
  }

  @Test
  void suspendedPutsTheLeaseInDoubtAndReconnectedConfirmsIt() throws Exception {
    RecordingContext context = new RecordingContext();
    try (ZooKeeperBackend backend = open(context, "session-timeout=9s&connection-timeout=2s")) {
      LockAttempt attempt =
          backend.attempt(lockName(), context.clientId() + ":1", Duration.ofSeconds(1), () -> {});
      Poll grant = pollUntilGranted(attempt);
      assertThat(grant.isSessionGrant()).isTrue();
      ZK.testingServer().stop();
      try {
        await(
            Duration.ofSeconds(10),
            "the lease is put in doubt once the connection is suspended",
            () -> context.saw("validUntil", context.clientId() + ":1", false));
      } finally {
        ZK.testingServer().restart();
      }
      await(
          Duration.ofSeconds(15),
          "the lease is confirmed after reconnecting (node still there, same session)",
          () -> context.saw("validUntil", context.clientId() + ":1", true));
      assertThat(context.sawLoss(context.clientId() + ":1"))
          .as("loss reported for a lease that survived: %s", context.calls)
          .isFalse();
      assertThat(ZK.admin().checkExists().forPath(nodePath(grant)))
          .as("our node after the reconnect")
          .isNotNull();
    }
  }

  @Test
  void anExpiredSessionIsALostLeaseAndTheBackendRecovers() throws Exception {
    RecordingContext context = new RecordingContext();
    try (ZooKeeperBackend backend = open(context, "session-timeout=4s&connection-timeout=2s")) {
      String name = lockName();
      Poll grant =
          pollUntilGranted(
              backend.attempt(name, context.clientId() + ":1", Duration.ofSeconds(1), () -> {}));
      ZooKeeper zk = backend.curator().getZookeeperClient().getZooKeeper();
      // the classic way to expire a session for real: attach to it from a second handle and close
      // that
      CountDownLatch attached = new CountDownLatch(1);
      ZooKeeper twin =
          new ZooKeeper(
              ZK.connectString(),
              4000,
              event -> {
                if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                  attached.countDown();
                }
              },
              zk.getSessionId(),
              zk.getSessionPasswd());
      assertThat(attached.await(10, TimeUnit.SECONDS))
          .as("attached to the backend's session")
          .isTrue();
      twin.close();
      await(
          Duration.ofSeconds(10),
          "the expired session is reported as a lost lease",
          () -> context.sawLoss(context.clientId() + ":1"));
      assertThat(context.calls.stream().filter(c -> c.kind.endsWith("ost")).map(c -> c.reason))
          .allMatch(
              r ->
                  r == LeaseLostException.Reason.SESSION_LOST
                      || r == LeaseLostException.Reason.TAKEN);
      assertThat(ZK.admin().checkExists().forPath(nodePath(grant)))
          .as("the node of the expired session")
          .isNull();
      Poll again =
          pollUntilGranted(
              backend.attempt(name, context.clientId() + ":2", Duration.ofSeconds(1), () -> {}));
      assertThat(again.fencingToken())
          .as("token after the session was replaced")
          .isGreaterThan(grant.fencingToken());
    }
  }

  @Test
  void anAbandonedClientKeepsItsNodeUntilTheSessionTimesOut() throws Exception {
    RecordingContext context = new RecordingContext();
    ZooKeeperBackend backend = open(context, "session-timeout=2s&connection-timeout=2s");
    Poll grant =
        pollUntilGranted(
            backend.attempt(
                lockName(), context.clientId() + ":1", Duration.ofSeconds(1), () -> {}));
    long session = backend.curator().getZookeeperClient().getZooKeeper().getSessionId();
    backend.abandon();
    Stat stat = ZK.admin().checkExists().forPath(nodePath(grant));
    assertThat(stat).as("the node right after abandon(): a crash does not delete it").isNotNull();
    assertThat(stat.getEphemeralOwner()).isEqualTo(session);
    await(
        Duration.ofSeconds(6),
        "the node goes when the session times out",
        () -> {
          try {
            return ZK.admin().checkExists().forPath(nodePath(grant)) == null;
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        });
    assertThat(context.calls).as("an abandoned backend reports nothing").isEmpty();
  }

  @Test
  void aWithdrawnWaiterLeavesNothingAndTheHolderStays() throws Exception {
    RecordingContext context = new RecordingContext();
    try (ZooKeeperBackend backend = open(context, "session-timeout=4s")) {
      String name = lockName();
      Poll grant =
          pollUntilGranted(
              backend.attempt(name, context.clientId() + ":1", Duration.ofSeconds(1), () -> {}));
      LockAttempt waiter =
          backend.attempt(name, context.clientId() + ":2", Duration.ofSeconds(1), () -> {});
      assertThat(waiter.poll().isGranted()).isFalse();
      String parent = "/" + ZooKeeperSettings.DEFAULT_NAMESPACE + "/" + NodeNames.encode(name);
      assertThat(ZK.admin().getChildren().forPath(parent)).hasSize(2);
      waiter.abandon();
      assertThat(ZK.admin().getChildren().forPath(parent))
          .as("children after the waiter withdrew")
          .hasSize(1);
      assertThat(ZK.admin().checkExists().forPath(nodePath(grant))).isNotNull();
      assertThat(context.sawLoss(context.clientId() + ":1")).isFalse();
    }
  }

  @Test
  void anInterruptedCreateLeavesNoNodeOnceAbandoned() throws Exception {
    RecordingContext context = new RecordingContext();
    try (ZooKeeperBackend backend = open(context, "session-timeout=4s")) {
      String name = lockName();
      String parent = "/" + ZooKeeperSettings.DEFAULT_NAMESPACE + "/" + NodeNames.encode(name);
      pollUntilGranted(
          backend.attempt(name, context.clientId() + ":1", Duration.ofSeconds(1), () -> {}));
      LockAttempt waiter =
          backend.attempt(name, context.clientId() + ":2", Duration.ofSeconds(1), () -> {});
      // the create is sent, then the wait for its reply is interrupted: the node exists but we
      // never heard of it
      Thread.currentThread().interrupt();
      try {
        assertThatThrownBy(waiter::poll).isInstanceOf(InterruptedException.class);
      } finally {
        Thread.interrupted();
      }
      waiter.abandon();
      assertThat(ZK.admin().getChildren().forPath(parent))
          .as("children after the interrupted waiter withdrew")
          .hasSize(1);
    }
  }

  /**
   * A create cut off from the server (a silent network, through a proxy) until its session is gone:
   * Curator gives the create up, then looks in the background for the node it may have made, to
   * delete it, a clean-up it never gives up on. With a plain elapsed-time retry policy that
   * clean-up came straight back on the same thread each time it was told no, recursing until the
   * stack overflowed and logging every step (millions of lines in one test run). Now it tries again
   * once a second while the server is out of reach, and the client works again once the link is
   * back.
   */
  @Test
  void aCreateCutOffFromTheServerDoesNotSpinItsCleanUp() throws Exception {
    RecordingContext context = new RecordingContext();
    java.io.ByteArrayOutputStream logged = new java.io.ByteArrayOutputStream();
    java.io.PrintStream err = System.err;
    try (dev.locksmith.tck.compare.TcpProxy proxy =
        new dev.locksmith.tck.compare.TcpProxy(
            new java.net.InetSocketAddress("127.0.0.1", ZK.port()))) {
      String uri =
          "zookeeper://127.0.0.1:"
              + proxy.address().getPort()
              + "?session-timeout=4s&connection-timeout=1s";
      LockUri parsed = LockUri.parse(uri);
      try (ZooKeeperBackend backend =
          (ZooKeeperBackend)
              new ZooKeeperLockProvider()
                  .open(new BackendConfig(parsed, parsed.query(), List.of()), context)) {
        String name = lockName();
        pollUntilGranted(
            backend.attempt(name, context.clientId() + ":1", Duration.ofSeconds(30), () -> {}));
        System.setErr(new java.io.PrintStream(logged, true));
        try {
          proxy.blackhole(true); // nothing reaches the server or comes back, as in a partition
          LockAttempt cut =
              backend.attempt(name, context.clientId() + ":2", Duration.ofSeconds(30), () -> {});
          assertThatThrownBy(cut::poll)
              .as("a poll cut off from the server")
              .isInstanceOf(BackendUnavailableException.class);
          cut.abandon();
          // the connection is lost after 2/3 of the session timeout, and the clean-up starts then
          Thread.sleep(6_000);
        } finally {
          System.setErr(err);
        }
        // never the whole log in a message: millions of lines would choke the test report
        String log = logged.toString(java.nio.charset.StandardCharsets.UTF_8);
        String first = log.lines().limit(12).collect(java.util.stream.Collectors.joining("\n"));
        long lines = log.lines().count();
        assertThat(log.contains("StackOverflowError"))
            .as(
                "a StackOverflowError logged while cut off (%d lines; the first:%n%s)",
                lines, first)
            .isFalse();
        assertThat(lines).as("lines logged while cut off; the first:%n%s", first).isLessThan(200);
        proxy.blackhole(false);
        String after = lockName();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        Poll again = null;
        for (int n = 3; again == null || !again.isGranted(); n++) {
          if (System.nanoTime() - deadline > 0) {
            fail("no acquire granted within 20 s of the link coming back");
          }
          try {
            again =
                backend
                    .attempt(after, context.clientId() + ":" + n, Duration.ofSeconds(30), () -> {})
                    .poll();
          } catch (BackendUnavailableException reconnecting) {
            Thread.sleep(100); // still reconnecting: the session it had is gone
          }
        }
      }
    } finally {
      System.setErr(err);
    }
  }

  /**
   * @return a live count of the backend's ZooKeeper operations by Curator's trace name, from now on
   */
  private static Map<String, Integer> traceOperations(ZooKeeperBackend backend) {
    Map<String, Integer> traced = new java.util.concurrent.ConcurrentHashMap<>();
    backend
        .curator()
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
    return traced;
  }

  /**
   * Counted: an uncontended acquire + release of a lock sends two requests, as the raw floor: one
   * transaction that creates our node and writes the lock's node, whose stat in the answer counts
   * one child (ours), so the lock is ours without reading the children; then the delete. Nothing
   * else is sent when the lock is given back within {@link ZooKeeperBackend#WATCH_DELAY}: the watch
   * on the holder's node is set only once the lease has been held that long. The server's {@code
   * Received} counts the requests (the transaction and the delete go on ZooKeeper's own handle,
   * which Curator's tracer does not see); the tracer shows that the final exists is all that went
   * through Curator: no create and no children read.
   */
  @Test
  void anUncontendedAcquireAndReleaseSendsTwoRequests() throws Exception {
    RecordingContext context = new RecordingContext();
    try (ZooKeeperBackend backend = open(context, "session-timeout=30s")) {
      String name = lockName();
      Poll warm =
          pollUntilGranted(
              backend.attempt(name, context.clientId() + ":warm", Duration.ofSeconds(1), () -> {}));
      assertThat(
              backend.release(
                  new dev.locksmith.spi.BackendLease(
                      name,
                      context.clientId() + ":warm",
                      warm.fencingToken(),
                      Duration.ofSeconds(1),
                      warm.state())))
          .isTrue();
      Map<String, Integer> traced = traceOperations(backend);
      long readAgainBefore = backend.childrenReadAgain.get();
      long receivedBefore = ZooKeeperEnsembleFixture.received(ZK.port());
      int n = 20;
      List<Long> tokens = new java.util.ArrayList<>();
      for (int i = 0; i < n; i++) {
        String owner = context.clientId() + ":" + i;
        Poll grant = backend.attempt(name, owner, Duration.ofSeconds(1), () -> {}).poll();
        assertThat(grant.isGranted()).as("uncontended acquire %d", i).isTrue();
        tokens.add(grant.fencingToken());
        assertThat(
                backend.release(
                    new dev.locksmith.spi.BackendLease(
                        name, owner, grant.fencingToken(), Duration.ofSeconds(1), grant.state())))
            .isTrue();
      }
      Thread.sleep(
          3
              * ZooKeeperBackend.WATCH_DELAY
                  .toMillis()); // any watch of a lease held too long is set by now
      // answered in order: any request sent before this one (a background exists included) has been
      // answered
      backend.curator().checkExists().forPath("/");
      Map<String, Integer> all = new java.util.TreeMap<>(traced);
      // a hold stalled past WATCH_DELAY on a busy machine gets its exists, as it should: allowed,
      // but not for most
      Integer watches = all.remove("ExistsBuilderImpl-Background");
      assertThat(watches == null ? 0 : watches)
          .as("own-node watches set over %d holds of about a millisecond", n)
          .isLessThanOrEqualTo(2);
      long received = ZooKeeperEnsembleFixture.received(ZK.port()) - receivedBefore;
      assertThat(all)
          .as(
              "operations through Curator over %d uncontended acquire + release, then one exists",
              n)
          .isEqualTo(Map.of("ExistsBuilderImpl-Foreground", 1));
      // two per acquire + release and the exists; the own-node watches allowed above, and a ping or
      // two of the idle
      // clients, may come on top; three per acquire + release would be 20 more
      assertThat(received)
          .as(
              "requests the server received over %d uncontended acquire + release, then one exists",
              n)
          .isBetween(2L * n + 1, 2L * n + 1 + (watches == null ? 0 : watches) + 2);
      assertThat(backend.childrenReadAgain.get() - readAgainBefore)
          .as("children reads sent behind a create that missed its node")
          .isZero();
      assertThat(tokens)
          .as("czxid tokens from the creates")
          .isSorted()
          .doesNotHaveDuplicates()
          .allMatch(t -> t > 0);
      assertThat(context.calls)
          .as("no lease reported lost by a release's own child event")
          .noneMatch(c -> c.kind.equals("lost") || c.kind.equals("allLost"));
    }
  }

  /**
   * The waiter next behind the holder is granted on the holder's deletion without reading the
   * children again (counted), and the next grant's token is above the last. A release with a hold
   * writes the holder's node before deleting it, so that waiter is told "changed", reads, finds the
   * hold, and waits: granting it on the delete would break the hold.
   */
  @Test
  void theWaiterNextBehindIsGrantedOnTheDeleteWithoutARereadButNotPastAHold() throws Exception {
    RecordingContext ca = new RecordingContext();
    RecordingContext cb = new RecordingContext();
    try (ZooKeeperBackend a = open(ca, "session-timeout=30s");
        ZooKeeperBackend b = open(cb, "session-timeout=30s")) {
      String name = lockName();
      for (boolean hold : new boolean[] {false, true}) {
        Poll held =
            pollUntilGranted(
                a.attempt(name, ca.clientId() + ":" + hold, Duration.ofSeconds(30), () -> {}));
        java.util.concurrent.Semaphore woken = new java.util.concurrent.Semaphore(0);
        LockAttempt waiter =
            b.attempt(name, cb.clientId() + ":" + hold, Duration.ofSeconds(30), woken::release);
        assertThat(waiter.poll().isGranted()).as("the waiter while the holder holds").isFalse();
        long unreadBefore = b.handOffsUnread.get();
        dev.locksmith.spi.BackendLease lease =
            new dev.locksmith.spi.BackendLease(
                name,
                ca.clientId() + ":" + hold,
                held.fencingToken(),
                Duration.ofSeconds(30),
                held.state());
        if (hold) {
          assertThat(a.releaseAfter(lease, Duration.ofMillis(800))).isTrue();
        } else {
          assertThat(a.release(lease)).isTrue();
        }
        assertThat(woken.tryAcquire(5, TimeUnit.SECONDS))
            .as("the waiter woken by the holder's release")
            .isTrue();
        Poll next = waiter.poll();
        if (hold) {
          assertThat(next.isGranted())
              .as("the waiter right after a release that left a hold of 800 ms")
              .isFalse();
          assertThat(b.handOffsUnread.get() - unreadBefore)
              .as("grants without a read past a hold")
              .isZero();
          Poll after = pollUntilGranted(waiter);
          assertThat(after.fencingToken()).isGreaterThan(held.fencingToken());
          assertThat(
                  b.release(
                      new dev.locksmith.spi.BackendLease(
                          name,
                          cb.clientId() + ":" + hold,
                          after.fencingToken(),
                          Duration.ofSeconds(30),
                          after.state())))
              .isTrue();
        } else {
          assertThat(next.isGranted())
              .as("the waiter next behind, on the holder's delete")
              .isTrue();
          assertThat(b.handOffsUnread.get() - unreadBefore)
              .as("grants on the head's delete without a read")
              .isEqualTo(1);
          assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
          assertThat(
                  b.release(
                      new dev.locksmith.spi.BackendLease(
                          name,
                          cb.clientId() + ":" + hold,
                          next.fencingToken(),
                          Duration.ofSeconds(30),
                          next.state())))
              .isTrue();
        }
      }
    }
  }

  /**
   * A waiter further back watches its predecessor; once that one is granted after waiting, it
   * writes its node, which wakes the waiter while it holds: the waiter reads, is next behind, and
   * is granted on the delete without another read. Without the write, nothing would wake it before
   * the release and it would read the children on the hand-off's path.
   */
  @Test
  void aWaiterFurtherBackIsToldItsPredecessorHoldsAndIsGrantedOnItsDeleteWithoutARead()
      throws Exception {
    RecordingContext ca = new RecordingContext();
    RecordingContext cb = new RecordingContext();
    RecordingContext cc = new RecordingContext();
    try (ZooKeeperBackend a = open(ca, "session-timeout=30s");
        ZooKeeperBackend b = open(cb, "session-timeout=30s");
        ZooKeeperBackend c = open(cc, "session-timeout=30s")) {
      String name = lockName();
      Duration lease = Duration.ofSeconds(30);
      Poll first = pollUntilGranted(a.attempt(name, ca.clientId() + ":1", lease, () -> {}));
      java.util.concurrent.Semaphore secondWoken = new java.util.concurrent.Semaphore(0);
      LockAttempt second = b.attempt(name, cb.clientId() + ":1", lease, secondWoken::release);
      assertThat(second.poll().isGranted()).as("the second while the first holds").isFalse();
      java.util.concurrent.Semaphore thirdWoken = new java.util.concurrent.Semaphore(0);
      LockAttempt third = c.attempt(name, cc.clientId() + ":1", lease, thirdWoken::release);
      assertThat(third.poll().isGranted()).as("the third, two nodes ahead of it").isFalse();
      assertThat(
              a.release(
                  new dev.locksmith.spi.BackendLease(
                      name, ca.clientId() + ":1", first.fencingToken(), lease, first.state())))
          .isTrue();
      assertThat(secondWoken.tryAcquire(5, TimeUnit.SECONDS))
          .as("the second woken by the first's release")
          .isTrue();
      Poll secondGrant = second.poll();
      assertThat(secondGrant.isGranted()).as("the second, next behind the first").isTrue();
      assertThat(thirdWoken.tryAcquire(5, TimeUnit.SECONDS))
          .as("the third woken by the second's grant, while it holds")
          .isTrue();
      assertThat(third.poll().isGranted()).as("the third while the second holds").isFalse();
      long unreadBefore = c.handOffsUnread.get();
      thirdWoken.drainPermits();
      assertThat(
              b.release(
                  new dev.locksmith.spi.BackendLease(
                      name,
                      cb.clientId() + ":1",
                      secondGrant.fencingToken(),
                      lease,
                      secondGrant.state())))
          .isTrue();
      assertThat(thirdWoken.tryAcquire(5, TimeUnit.SECONDS))
          .as("the third woken by the second's release")
          .isTrue();
      Poll thirdGrant = third.poll();
      assertThat(thirdGrant.isGranted()).as("the third on the second's delete").isTrue();
      assertThat(c.handOffsUnread.get() - unreadBefore)
          .as("grants on the head's delete without a read")
          .isEqualTo(1);
      assertThat(thirdGrant.fencingToken()).isGreaterThan(secondGrant.fencingToken());
      assertThat(
              c.release(
                  new dev.locksmith.spi.BackendLease(
                      name,
                      cc.clientId() + ":1",
                      thirdGrant.fencingToken(),
                      lease,
                      thirdGrant.state())))
          .isTrue();
    }
  }

  /**
   * A node ahead of ours named for our owner id is a create of ours whose answer was lost and that
   * was made after all: the attempt deletes it and does not wait behind it (here another session
   * makes it, as the lost create would have, before the attempt's own create).
   */
  @Test
  void aNodeAheadNamedForOurOwnerIsDeletedNotWaitedFor() throws Exception {
    RecordingContext context = new RecordingContext();
    try (ZooKeeperBackend backend = open(context, "session-timeout=30s")) {
      String name = lockName();
      String owner = context.clientId() + ":1";
      String parent = "/" + ZooKeeperSettings.DEFAULT_NAMESPACE + "/" + NodeNames.encode(name);
      String lost =
          ZK.admin()
              .create()
              .creatingParentContainersIfNeeded()
              .withMode(org.apache.zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL)
              .forPath(parent + "/_c_" + UUID.randomUUID() + "-" + NodeNames.waiterBase(owner));
      Poll grant = backend.attempt(name, owner, Duration.ofSeconds(30), () -> {}).poll();
      assertThat(grant.isGranted())
          .as("the first poll, behind a node named for its own owner id")
          .isTrue();
      await(
          Duration.ofSeconds(5),
          "the lost create's node deleted",
          () -> {
            try {
              return ZK.admin().checkExists().forPath(lost) == null;
            } catch (Exception e) {
              throw new IllegalStateException(e);
            }
          });
      assertThat(
              backend.release(
                  new dev.locksmith.spi.BackendLease(
                      name, owner, grant.fencingToken(), Duration.ofSeconds(30), grant.state())))
          .isTrue();
    }
  }

  /**
   * The first acquire of a name finds no parent node: the read sent behind the create is answered
   * before Curator has made the parent and created our node again, so it cannot show our node; the
   * attempt reads again (counted), and the grant is as good as any other. A read that does not show
   * our node never grants.
   */
  @Test
  void aReadBehindTheCreateThatMissedTheNodeIsSentAgainBeforeAnyGrant() throws Exception {
    RecordingContext context = new RecordingContext();
    try (ZooKeeperBackend backend = open(context, "session-timeout=30s")) {
      String name = lockName(); // a fresh name: no parent node yet
      long before = backend.childrenReadAgain.get();
      Poll first =
          backend.attempt(name, context.clientId() + ":1", Duration.ofSeconds(1), () -> {}).poll();
      assertThat(first.isGranted()).as("the first acquire of a fresh name").isTrue();
      assertThat(backend.childrenReadAgain.get() - before)
          .as("children reads sent again")
          .isEqualTo(1);
      // a second client queues behind the holder: its read behind the create shows both nodes, it
      // is not granted
      Poll second =
          backend.attempt(name, context.clientId() + ":2", Duration.ofSeconds(1), () -> {}).poll();
      assertThat(second.isGranted()).as("a second acquirer while the first holds").isFalse();
      assertThat(backend.childrenReadAgain.get() - before)
          .as("children reads sent again, the parent existing")
          .isEqualTo(1);
      String parent = "/" + ZooKeeperSettings.DEFAULT_NAMESPACE + "/" + NodeNames.encode(name);
      assertThat(ZK.admin().getChildren().forPath(parent)).hasSize(2);
      assertThat(first.fencingToken()).isPositive();
    }
  }

  /**
   * The holder's node deleted behind its back is a lost lease, whether it is deleted before its
   * watch is set (the exists that sets it finds it gone, about {@link ZooKeeperBackend#WATCH_DELAY}
   * after the grant) or after (the watch fires), with or without a waiter.
   */
  @Test
  void aDeletedHolderNodeIsALostLeaseWithOrWithoutWaiters() throws Exception {
    RecordingContext context = new RecordingContext();
    try (ZooKeeperBackend backend = open(context, "session-timeout=30s")) {
      String alone = context.clientId() + ":alone";
      Poll grant =
          pollUntilGranted(backend.attempt(lockName(), alone, Duration.ofSeconds(1), () -> {}));
      ZK.admin().delete().forPath(nodePath(grant)); // at once: before the watch is set
      await(
          Duration.ofSeconds(10),
          "the deletion of a holder's node before its watch is set is reported",
          () -> context.sawLoss(alone));

      String name = lockName();
      String holder = context.clientId() + ":holder";
      Map<String, Integer> traced = traceOperations(backend);
      Poll held = pollUntilGranted(backend.attempt(name, holder, Duration.ofSeconds(1), () -> {}));
      CountDownLatch woken = new CountDownLatch(1);
      LockAttempt waiter =
          backend.attempt(
              name, context.clientId() + ":waiter", Duration.ofSeconds(1), woken::countDown);
      assertThat(waiter.poll().isGranted()).isFalse();
      await(
          Duration.ofSeconds(10),
          "the holder's node is watched once held for WATCH_DELAY: " + traced,
          () -> traced.getOrDefault("ExistsBuilderImpl-Background", 0) == 1);
      assertThat(context.sawLoss(holder))
          .as("a waiter's arrival is not a loss: %s", context.calls)
          .isFalse();
      // the server set the watch before answering, so this deletion fires it
      ZK.admin().delete().forPath(nodePath(held));
      await(
          Duration.ofSeconds(10),
          "the deletion of a contended holder's node is reported",
          () -> context.sawLoss(holder));
      assertThat(context.calls.stream().filter(c -> c.kind.equals("lost")).map(c -> c.reason))
          .containsOnly(LeaseLostException.Reason.TAKEN);
      assertThat(woken.await(10, TimeUnit.SECONDS))
          .as("the waiter is woken by its predecessor's deletion")
          .isTrue();
      assertThat(pollUntilGranted(waiter).fencingToken()).isGreaterThan(held.fencingToken());
      waiter.abandon();
    }
  }

  @Test
  void renewChecksEveryNodeInOneBatch() throws Exception {
    RecordingContext context = new RecordingContext();
    try (ZooKeeperBackend backend = open(context, "session-timeout=4s")) {
      assertThat(backend.renewsBySession()).isTrue();
      List<dev.locksmith.spi.BackendLease> leases = new java.util.ArrayList<>();
      for (int i = 1; i <= 3; i++) {
        String owner = context.clientId() + ":" + i;
        Poll grant =
            pollUntilGranted(backend.attempt(lockName(), owner, Duration.ofSeconds(1), () -> {}));
        leases.add(
            new dev.locksmith.spi.BackendLease(
                "x" + i, owner, grant.fencingToken(), Duration.ofSeconds(1), grant.state()));
      }
      ZK.admin()
          .delete()
          .forPath(
              "/"
                  + ZooKeeperSettings.DEFAULT_NAMESPACE
                  + ((ZooKeeperBackend.Held) leases.get(1).state()).path);
      assertThat(backend.renew(leases))
          .extracting(dev.locksmith.spi.Renewal::kind)
          .containsExactly(
              dev.locksmith.spi.Renewal.Kind.RENEWED,
              dev.locksmith.spi.Renewal.Kind.LOST,
              dev.locksmith.spi.Renewal.Kind.RENEWED);
      assertThat(backend.release(leases.get(1))).as("release of a deleted node").isFalse();
      assertThat(backend.release(leases.get(0))).isTrue();
      assertThat(backend.release(leases.get(0))).as("a second release").isFalse();
    }
  }

  @Test
  void theWaiterIsWokenByItsPredecessorAlone() throws Exception {
    RecordingContext context = new RecordingContext();
    try (ZooKeeperBackend backend = open(context, "session-timeout=4s")) {
      String name = lockName();
      LockAttempt first =
          backend.attempt(name, context.clientId() + ":1", Duration.ofSeconds(1), () -> {});
      pollUntilGranted(first);
      CountDownLatch secondWoken = new CountDownLatch(1);
      CountDownLatch thirdWoken = new CountDownLatch(1);
      LockAttempt second =
          backend.attempt(
              name, context.clientId() + ":2", Duration.ofSeconds(1), secondWoken::countDown);
      LockAttempt third =
          backend.attempt(
              name, context.clientId() + ":3", Duration.ofSeconds(1), thirdWoken::countDown);
      assertThat(second.poll().isGranted()).isFalse();
      assertThat(third.poll().isGranted()).isFalse();
      first.abandon(); // frees the lock: only the next in line is told
      assertThat(secondWoken.await(10, TimeUnit.SECONDS)).as("the next waiter is woken").isTrue();
      assertThat(thirdWoken.getCount())
          .as("the waiter after it is not woken (no herd)")
          .isEqualTo(1);
      assertThat(second.poll().isGranted()).isTrue();
      assertThat(third.poll().isGranted()).isFalse();
      second.abandon();
      third.abandon();
    }
  }

  @Test
  void nodesGetTheConfiguredAclAndWrongCredentialsAreRefusedAtConnect() throws Exception {
    String namespace = "acl-" + UUID.randomUUID().toString().substring(0, 8);
    String base = "zookeeper://%s@" + ZK.connectString() + "?acl=creator&namespace=" + namespace;
    String name = lockName();
    try (LockClient alice = Locks.connect(String.format(base, "alice:right"))) {
      Lease lease = alice.lock(name).acquire(Duration.ofSeconds(10));
      String parent = "/" + namespace + "/" + NodeNames.encode(name);
      assertThatThrownBy(() -> ZK.admin().getChildren().forPath(parent))
          .as("reading the lock without credentials")
          .isInstanceOf(org.apache.zookeeper.KeeperException.NoAuthException.class);
      List<ACL> acl;
      try (CuratorFramework asAlice =
          CuratorFrameworkFactory.builder()
              .connectString(ZK.connectString())
              .retryPolicy(new RetryOneTime(100))
              .authorization(
                  "digest", "alice:right".getBytes(java.nio.charset.StandardCharsets.UTF_8))
              .build()) {
        asAlice.start();
        acl = asAlice.getACL().forPath(parent);
      }
      assertThat(acl).hasSize(1);
      assertThat(acl.get(0).getId().getScheme()).isEqualTo("digest");
      assertThat(acl.get(0).getId().getId()).startsWith("alice:");
      assertThatThrownBy(() -> Locks.connect(String.format(base, "alice:wrong")))
          .isInstanceOf(BackendUnavailableException.class)
          .hasMessageContaining("NoAuth")
          .hasMessageContaining("alice:****@")
          .hasMessageNotContaining("wrong");
      assertThat(lease.release()).isTrue();
    }
  }
}
