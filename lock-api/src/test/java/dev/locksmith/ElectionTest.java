package dev.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link Election} on local:, with leases far longer than any hand-over the tests allow. */
class ElectionTest {
  private final String space = "election-" + UUID.randomUUID();
  private final List<LockClient> clients = new ArrayList<>();

  private LockClient client(String lease) {
    LockClient c = Locks.connect("local:" + space + "?lease=" + lease);
    clients.add(c);
    return c;
  }

  @AfterEach
  void closeAll() {
    clients.forEach(LockClient::close);
  }

  @Test
  void anElectionsOptionsGiveTheLeadersLeaseAndItIsRenewedWhateverTheySay() throws Exception {
    LockClient c = client("30s");
    Election shortLease =
        c.election(
            "options",
            LockOptions.builder().lease(Duration.ofMillis(1_500)).autoRenew(false).build());
    try (Election.Leadership l = shortLease.campaign("web-1", Duration.ofSeconds(5))) {
      assertThat(shortLease.leader().orElseThrow().remaining().orElseThrow())
          .as("the options' lease, not the client's 30 s")
          .isLessThanOrEqualTo(Duration.ofMillis(1_500));
      // past two leases: only renewal keeps it (renewed every 500 ms: a second late loses it)
      Thread.sleep(3_200);
      assertThat(l.isValid()).as("renewed, though the options said autoRenew(false)").isTrue();
      assertThat(shortLease.leader().orElseThrow().term()).hasValue(l.term());
    }
    assertThat(c.election("options").leader()).isEmpty();
    assertThatThrownBy(() -> c.election("options", null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`options` was null");
  }

  @Test
  void theLeaderIsReadWithItsIdentityAndTermAndResigningHandsOverAtOnce() throws Exception {
    Election a = client("30s").election("scheduler");
    Election b = client("30s").election("scheduler");
    assertThat(a.leader()).isEmpty();
    Election.Leadership first = a.campaign("web-1", Duration.ofSeconds(5));
    assertThat(first.identity()).isEqualTo("web-1");
    assertThat(first.election()).isEqualTo("scheduler");
    Election.Leader read = b.leader().orElseThrow();
    assertThat(read.identity()).contains("web-1");
    assertThat(read.term()).hasValue(first.term());
    assertThat(read.holder().orElseThrow().thread()).isEqualTo("web-1");
    assertThat(read.remaining()).isPresent();

    CompletableFuture<Election.Leadership> second =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return b.campaign("web-2", Duration.ofSeconds(10));
              } catch (InterruptedException e) {
                throw new IllegalStateException(e);
              }
            });
    Thread.sleep(100);
    assertThat(second).isNotDone();
    long resignedAt = System.nanoTime();
    assertThat(first.resign()).isTrue();
    Election.Leadership next = second.get(5, TimeUnit.SECONDS);
    // not the 30 s lease: the resignation handed over
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - resignedAt)).isLessThan(3_000);
    assertThat(next.term()).isGreaterThan(first.term());
    assertThat(first.resign()).isFalse();
    assertThat(a.leader().orElseThrow().identity()).contains("web-2");
    next.close();
    assertThat(a.leader()).isEmpty();
  }

  @Test
  void aCampaignThatTimesOutDoesNotLead() throws Exception {
    Election a = client("30s").election("scheduler");
    Election b = client("30s").election("scheduler");
    try (Election.Leadership l = a.campaign("web-1", Duration.ZERO)) {
      assertThatThrownBy(() -> b.campaign("web-2", Duration.ofMillis(100)))
          .isInstanceOf(LockTimeoutException.class);
      assertThat(b.leader().orElseThrow().identity()).contains("web-1");
      assertThat(l.isValid()).isTrue();
    }
  }

  @Test
  void aDeposedLeaderIsToldAndTheNextTermIsHigher() throws Exception {
    LockClient c = client("600ms");
    Election a = c.election("scheduler");
    Election.Leadership l = a.campaign("web-1", Duration.ZERO);
    assertThat(c.breakLock("scheduler", "test: depose the leader")).isTrue();
    LeaseLostException lost = l.lost().toCompletableFuture().get(5, TimeUnit.SECONDS);
    assertThat(lost).isNotNull();
    assertThat(l.isValid()).isFalse();
    try (Election.Leadership next =
        client("30s").election("scheduler").campaign("web-2", Duration.ZERO)) {
      assertThat(next.term()).isGreaterThan(l.term());
      assertThat(l.resign()).isFalse(); // the deposed leader's resignation frees nothing
      assertThat(a.leader().orElseThrow().identity()).contains("web-2");
    }
  }

  @Test
  void anObserverSeesEachLeaderOnceInOrderAndNoLeader() throws Exception {
    Election a = client("30s").election("scheduler");
    Election watcher = client("30s").election("scheduler");
    List<Optional<Election.Leader>> seen = new CopyOnWriteArrayList<>();
    try (Election.Observation o = watcher.observe(seen::add)) {
      awaitSize(seen, 1);
      assertThat(seen.get(0)).isEmpty();
      Election.Leadership one = a.campaign("web-1", Duration.ZERO);
      awaitSize(seen, 2);
      assertThat(seen.get(1).orElseThrow().identity()).contains("web-1");
      one.resign();
      awaitSize(seen, 3);
      assertThat(seen.get(2)).isEmpty();
      Election.Leadership two = a.campaign("web-2", Duration.ZERO);
      awaitSize(seen, 4);
      assertThat(seen.get(3).orElseThrow().identity()).contains("web-2");
      assertThat(seen.get(3).orElseThrow().term().getAsLong())
          .isGreaterThan(seen.get(1).orElseThrow().term().getAsLong());
      Thread.sleep(4 * Election.OBSERVE_EVERY.toMillis());
      assertThat(seen).hasSize(4); // the same leader is not delivered again
      two.close();
    }
    int after = seen.size();
    a.campaign("web-3", Duration.ZERO).close();
    Thread.sleep(4 * Election.OBSERVE_EVERY.toMillis());
    assertThat(seen).hasSize(after); // closed: no call after close() returned
  }

  @Test
  void anObserverOfABackendThatWatchesReadsWhenToldNotEveryFiftyMilliseconds() throws Exception {
    // local: watches every grant and release (HolderWatch.seesGrants), so an idle observer reads
    // only when told, when a lease may run out, and once a second; one that polled would read
    // about 16 times in 800 ms
    Election a = client("30s").election("watched");
    List<Optional<Election.Leader>> seen = new CopyOnWriteArrayList<>();
    try (Election.Observation o = client("30s").election("watched").observe(seen::add)) {
      awaitSize(seen, 1);
      Thread.sleep(800);
      assertThat(o.reads.get()).as("reads of an idle observer in 800 ms").isBetween(1, 3);
      int before = o.reads.get();
      Election.Leadership one = a.campaign("web-1", Duration.ZERO);
      awaitSize(seen, 2); // told of the grant: within the 5 s wait, not the 1 s safety read only
      assertThat(seen.get(1).orElseThrow().identity()).contains("web-1");
      assertThat(o.reads.get() - before).as("reads for one grant").isBetween(1, 3);
      one.resign();
      awaitSize(seen, 3);
      assertThat(seen.get(2)).isEmpty();
    }
  }

  @Test
  void aCandidateCampaignsUnderItsIdentityThroughEveryAcquire() throws Exception {
    LockClient c = client("30s");
    Election e = c.election("scheduler");
    DistributedLock candidate = e.candidate("async-1");
    Lease lease = candidate.acquireAsync(Duration.ofSeconds(5)).get(5, TimeUnit.SECONDS);
    assertThat(e.leader().orElseThrow().identity()).contains("async-1");
    assertThat(e.leader().orElseThrow().term()).hasValue(lease.fencingToken());
    assertThat(lease.release()).isTrue();
    assertThat(e.leader()).isEmpty();
    try (Lease l = e.candidate("blocking-2").acquire(Duration.ZERO)) {
      assertThat(e.leader().orElseThrow().identity()).contains("blocking-2");
    }
    assertThat(e.candidate("view-3").asLock().tryLock()).isTrue();
    assertThat(e.leader().orElseThrow().identity()).contains("view-3");
    e.candidate("view-3").asLock().unlock();
    // an asynchronous acquire of a plain lock names the thread that asked, not the client's
    String me = Thread.currentThread().getName();
    try (Lease l = c.lock("plain").acquireAsync(Duration.ZERO).get(5, TimeUnit.SECONDS)) {
      assertThat(c.lock("plain").state().holderIdentity().orElseThrow().thread())
          .isEqualTo(Holder.parse(Holder.ownerId("a", me, 0, "1-x", 1)).orElseThrow().thread());
    }
    assertThatThrownBy(() -> e.candidate("no way"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`identity` was 'no way'");
  }

  @Test
  void aLatchCampaignsUnderItsIdentity() throws Exception {
    LockClient c = client("30s");
    try (LeaderLatch latch = c.leaderLatch("scheduler").identity("worker_7.eu").start()) {
      assertThat(latch.awaitLeadership(Duration.ofSeconds(5))).isTrue();
      assertThat(c.election("scheduler").leader().orElseThrow().identity()).contains("worker_7.eu");
    }
  }

  @Test
  void badInputNamesTheParameterAndWhatIsValid() {
    Election e = client("30s").election("scheduler");
    assertThatThrownBy(() -> e.campaign(null, Duration.ZERO))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`identity` was null");
    assertThatThrownBy(() -> e.campaign("", Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`identity` was ''")
        .hasMessageContaining("1 to 40 characters");
    assertThatThrownBy(() -> e.campaign("web 1", Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`identity` was 'web 1'")
        .hasMessageContaining("U+0020 at index 3");
    assertThatThrownBy(() -> e.campaign("x".repeat(41), Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("(41 characters)");
    assertThatThrownBy(() -> e.campaign("web:1", Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("U+003A");
    assertThatThrownBy(() -> e.campaign("web-1", null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`timeout` was null");
    assertThatThrownBy(() -> e.campaign("web-1", Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`timeout` was '-1s'");
    assertThatThrownBy(() -> e.observe(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`listener` was null");
    assertThatThrownBy(() -> client("30s").election(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`name` was null");
    assertThatThrownBy(() -> client("30s").leaderLatch("x").identity("a/b"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`identity` was 'a/b'");
    // nothing was written by a rejected campaign
    assertThat(e.leader()).isEmpty();
  }

  private static void awaitSize(List<?> list, int size) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (list.size() < size) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("expected " + size + " calls within 5 s, saw " + list);
      }
      Thread.sleep(5);
    }
  }
}
