package dev.locksmith.etcd;

import static dev.locksmith.tck.Kept.keep;
import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.Locks;
import dev.locksmith.spi.Abandonable;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.RecordingContext;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.LeaseOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Lease control as etcd sees it: which etcd lease carries a lock's key after extend and
 * releaseAfter, that the create revision (token, queue order) stays, that nobody else's key is
 * touched, and how late etcd's own expiry frees a lock whose client is gone (whole-second TTLs, the
 * server's minimum TTL, its expiry sweep), measured and logged.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EtcdLeaseControlIT {
  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(EtcdLeaseControlIT.class);

  /**
   * How late etcd may end a key of a lease whose client is gone: the TTL's rounding is added
   * separately.
   */
  private static final Duration SWEEP_BOUND = Duration.ofSeconds(1);

  @RegisterExtension
  static final EtcdServerExtension ETCD = EtcdServerExtension.oneMember("leasectl");

  private static LockClient connect() {
    return Locks.connect("etcd://" + ETCD.hosts() + "/leasectl?ttl=2s");
  }

  private static LockOptions unrenewed(Duration lease) {
    return LockOptions.builder().lease(lease).autoRenew(false).build();
  }

  private static List<KeyValue> keysOf(String lockName) throws Exception {
    return ETCD.admin()
        .getKVClient()
        .get(
            KeyNames.bytes(KeyNames.lockPrefix("/leasectl", lockName)),
            GetOption.builder().isPrefix(true).withSortField(GetOption.SortTarget.CREATE).build())
        .get(10, TimeUnit.SECONDS)
        .getKvs();
  }

  private static KeyValue onlyKeyOf(String lockName) throws Exception {
    List<KeyValue> kvs = keysOf(lockName);
    assertThat(kvs).as("keys of lock %s", lockName).hasSize(1);
    return kvs.get(0);
  }

  /**
   * @return the lease's granted TTL in seconds, or -1 if etcd no longer has it
   */
  private static long grantedTtl(long leaseId) throws Exception {
    try {
      var r =
          ETCD.admin()
              .getLeaseClient()
              .timeToLive(leaseId, LeaseOption.DEFAULT)
              .get(10, TimeUnit.SECONDS);
      return r.getTTL() < 0 ? -1 : r.getGrantedTTL();
    } catch (java.util.concurrent.ExecutionException e) {
      if (EtcdCalls.leaseNotFound(e)) {
        return -1;
      }
      throw e;
    }
  }

  /** The lease the client's session keys hang on: the one named in the key. */
  private static long sessionLeaseIn(KeyValue kv) {
    String k = kv.getKey().toString(StandardCharsets.UTF_8);
    return Long.parseUnsignedLong(k.substring(k.lastIndexOf('/') + 1, k.lastIndexOf('-')), 16);
  }

  @Test
  void theServersMinimumTtlIsOneSecondWithTheTestHeartbeat() throws Exception {
    // etcd raises a shorter TTL to 1.5 election timeouts, rounded up to whole seconds: with the
    // tests'
    // --heartbeat-interval 50 --election-timeout 500 that is 750 ms, so 1 s (etcd's defaults give 2
    // s).
    var grant = ETCD.admin().getLeaseClient().grant(1).get(10, TimeUnit.SECONDS);
    assertThat(grant.getTTL()).as("TTL etcd grants when asked for 1 s").isEqualTo(1);
    ETCD.admin().getLeaseClient().revoke(grant.getID()).get(10, TimeUnit.SECONDS);
    assertThat(EtcdLeaseControl.ttlSeconds(Duration.ofMillis(1))).isEqualTo(1);
    assertThat(EtcdLeaseControl.ttlSeconds(Duration.ofSeconds(2))).isEqualTo(2);
    assertThat(EtcdLeaseControl.ttlSeconds(Duration.ofMillis(2001))).isEqualTo(3);
  }

  @Test
  void anUnrenewedLockMovesToALeaseOfItsOwnKeepingItsCreateRevisionAndQueue() throws Exception {
    String name = "extend-order";
    try (LockClient a = connect();
        LockClient b = connect()) {
      Lease held = a.lock(name, unrenewed(Duration.ofSeconds(10))).acquire(Duration.ofSeconds(10));
      KeyValue first = onlyKeyOf(name);
      assertThat(first.getCreateRevision())
          .as("token = create revision")
          .isEqualTo(held.fencingToken());
      assertThat(first.getLease())
          .as("right after the grant the key is on a lease of its own, not the client's session")
          .isNotEqualTo(sessionLeaseIn(first));
      assertThat(grantedTtl(first.getLease()))
          .as("TTL of that lease, for a 10 s lease")
          .isEqualTo(10);
      assertThat(first.getValue().toString(StandardCharsets.UTF_8)).as("value").isNotEmpty();

      CompletableFuture<Lease> waiter = b.lock(name).acquireAsync(Duration.ofSeconds(30));
      awaitKeys(name, 2);
      assertThat(held.extend(Duration.ofMillis(2500))).as("extend of our own lease").isTrue();
      List<KeyValue> after = keysOf(name);
      assertThat(after).hasSize(2);
      KeyValue moved = after.get(0);
      assertThat(moved.getKey()).as("the holder's key is still first").isEqualTo(first.getKey());
      assertThat(moved.getCreateRevision())
          .as("create revision after extend")
          .isEqualTo(first.getCreateRevision());
      assertThat(moved.getModRevision())
          .as("mod revision after extend")
          .isGreaterThan(first.getModRevision());
      assertThat(moved.getValue()).as("value after extend").isEqualTo(first.getValue());
      assertThat(moved.getLease())
          .as("lease after extend")
          .isNotEqualTo(first.getLease())
          .isNotEqualTo(sessionLeaseIn(moved));
      assertThat(grantedTtl(moved.getLease()))
          .as("TTL of the new lease for 2.5 s: rounded up")
          .isEqualTo(3);
      awaitLeaseGone(first.getLease());
      assertThat(waiter).as("the waiter while the holder is extended").isNotDone();

      assertThat(held.release()).isTrue();
      Lease next = waiter.get(10, TimeUnit.SECONDS);
      assertThat(next.fencingToken()).as("the waiter's token").isGreaterThan(held.fencingToken());
      awaitLeaseGone(moved.getLease());
      assertThat(next.release()).isTrue();
    }
  }

  @Test
  void extendAfterTheKeyWasTakenAnswersFalseAndLeavesTheTakersKeyAndLeaseAlone() throws Exception {
    String name = "extend-taken";
    try (LockClient a = connect();
        LockClient b = connect()) {
      Lease stale = a.lock(name, unrenewed(Duration.ofSeconds(60))).acquire(Duration.ofSeconds(10));
      ETCD.admin()
          .getKVClient()
          .delete(
              KeyNames.bytes(KeyNames.lockPrefix("/leasectl", name)),
              DeleteOption.builder().isPrefix(true).build())
          .get(10, TimeUnit.SECONDS);
      Lease taker = b.lock(name, unrenewed(Duration.ofSeconds(30))).acquire(Duration.ofSeconds(10));
      KeyValue takers = onlyKeyOf(name);
      long takersTtl = grantedTtl(takers.getLease());
      assertThat(takersTtl).as("TTL of the taker's own lease").isEqualTo(30);

      assertThat(stale.extend(Duration.ofSeconds(5)))
          .as("extend by the holder whose key was deleted")
          .isFalse();
      assertThat(stale.releaseAfter(Duration.ofSeconds(5)))
          .as("releaseAfter by the holder whose key was deleted")
          .isFalse();

      KeyValue now = onlyKeyOf(name);
      assertThat(now.getKey()).isEqualTo(takers.getKey());
      assertThat(now.getModRevision())
          .as("mod revision of the taker's key")
          .isEqualTo(takers.getModRevision());
      assertThat(now.getValue()).as("value of the taker's key").isEqualTo(takers.getValue());
      assertThat(now.getLease()).as("lease of the taker's key").isEqualTo(takers.getLease());
      assertThat(grantedTtl(now.getLease())).as("TTL of the taker's lease").isEqualTo(takersTtl);
      assertThat(taker.release()).isTrue();
    }
  }

  @Test
  void aHoldSurvivesCloseAndEtcdEndsItWithinTheRoundedTtlPlusTheSweep() throws Exception {
    holdOutlivesItsClient("hold-close", Duration.ofMillis(1500), LockClient::close);
  }

  @Test
  void aHoldSurvivesAbandonAndEtcdEndsItWithinTheRoundedTtlPlusTheSweep() throws Exception {
    holdOutlivesItsClient("hold-abandon", Duration.ofSeconds(2), c -> ((Abandonable) c).abandon());
  }

  private interface Ending {
    void end(LockClient client) throws Exception;
  }

  private void holdOutlivesItsClient(String name, Duration keep, Ending ending) throws Exception {
    LockClient holder = connect();
    try (LockClient other = connect()) {
      Lease lease = holder.lock(name).acquire(Duration.ofSeconds(10));
      long asked = System.nanoTime();
      assertThat(lease.releaseAfter(keep)).isTrue();
      KeyValue hold = onlyKeyOf(name);
      assertThat(hold.getCreateRevision())
          .as("create revision of the hold")
          .isEqualTo(lease.fencingToken());
      assertThat(hold.getValue().toString(StandardCharsets.UTF_8))
          .as("value of the hold")
          .startsWith(EtcdLeaseControl.HOLD_PREFIX);
      assertThat(hold.getLease()).as("the hold's lease").isNotEqualTo(sessionLeaseIn(hold));
      long ttl = EtcdLeaseControl.ttlSeconds(keep);
      assertThat(grantedTtl(hold.getLease())).as("TTL of the hold's lease").isEqualTo(ttl);
      ending.end(holder);
      assertThat(other.lock(name).state().isHeld()).as("state during the hold").isTrue();
      assertThat(other.lock(name).tryAcquire())
          .as("the lock right after the holder's client ended")
          .isEmpty();

      Duration bound = Duration.ofSeconds(ttl).plus(SWEEP_BOUND);
      Optional<Lease> next = other.lock(name).tryAcquire(bound.plusSeconds(2));
      long took = System.nanoTime() - asked;
      LOG.info(
          "a hold of {} ms (etcd TTL {} s) whose client ended was free after {} ms",
          keep.toMillis(),
          ttl,
          TimeUnit.NANOSECONDS.toMillis(took));
      assertThat(next).as("the lock after the hold's etcd lease ran out").isPresent();
      assertThat(took)
          .as("ns until free: not before the hold's end")
          .isGreaterThanOrEqualTo(keep.toNanos());
      assertThat(took)
          .as("ns until free: within the TTL rounded up + 1 s")
          .isLessThanOrEqualTo(bound.toNanos());
      assertThat(next.get().release()).isTrue();
    } finally {
      holder.close();
    }
  }

  @Test
  void aLiveClientEndsItsHoldOnTimeAndDeletesItsLease() throws Exception {
    String name = "hold-live";
    Duration keep = Duration.ofMillis(1200);
    try (LockClient holder = connect();
        LockClient other = connect()) {
      Lease lease = holder.lock(name).acquire(Duration.ofSeconds(10));
      long asked = System.nanoTime();
      assertThat(lease.releaseAfter(keep)).isTrue();
      long holdLease = onlyKeyOf(name).getLease();
      Optional<Lease> next = other.lock(name).tryAcquire(Duration.ofSeconds(5));
      long took = System.nanoTime() - asked;
      LOG.info(
          "a hold of {} ms with its client alive was free after {} ms",
          keep.toMillis(),
          TimeUnit.NANOSECONDS.toMillis(took));
      assertThat(next).isPresent();
      assertThat(took)
          .as("ns until free")
          .isGreaterThanOrEqualTo(keep.toNanos())
          .isLessThan(keep.plusMillis(500).toNanos());
      awaitLeaseGone(holdLease);
      // the holder takes the lock again after its hold: its key name is free again
      assertThat(next.get().release()).isTrue();
      Lease again = holder.lock(name).acquire(Duration.ofSeconds(5));
      assertThat(again.release()).isTrue();
    }
  }

  @Test
  void anUnrenewedLockOfAVanishedClientIsFreedByEtcdAtItsLeaseNotAtTheSessionTtl()
      throws Exception {
    String name = "unrenewed-abandoned";
    Duration lease = Duration.ofMillis(300);
    LockClient holder = Locks.connect("etcd://" + ETCD.hosts() + "/leasectl?ttl=30s");
    try (LockClient other = connect()) {
      keep(holder.lock(name, unrenewed(lease)).acquire(Duration.ofSeconds(10)));
      long granted = System.nanoTime();
      ((Abandonable) holder).abandon();
      Optional<Lease> next = other.lock(name).tryAcquire(Duration.ofSeconds(10));
      long took = System.nanoTime() - granted;
      LOG.info(
          "a {} ms lease without renewal whose client vanished (session TTL 30 s) was free after {}"
              + " ms",
          lease.toMillis(),
          TimeUnit.NANOSECONDS.toMillis(took));
      assertThat(next).isPresent();
      assertThat(took)
          .as("ns until free: within the TTL rounded up (1 s) + 1 s, not the session's 30 s")
          .isLessThanOrEqualTo(Duration.ofSeconds(1).plus(SWEEP_BOUND).toNanos());
      assertThat(next.get().release()).isTrue();
    } finally {
      holder.close();
    }
  }

  @Test
  void aWaiterBehindAHoldIsToldToLookAgainByTheHoldsEnd() throws Exception {
    String name = "hold-busy";
    Duration keep = Duration.ofMillis(3500);
    RecordingContext context = new RecordingContext("busy-probe", Duration.ofHours(1));
    String uri = "etcd://" + ETCD.hosts() + "/leasectl?ttl=2s";
    BackendConfig config = new BackendConfig(LockUri.parse(uri), Map.of("ttl", "2s"), List.of());
    try (LockClient holder = connect();
        LockBackend backend = new EtcdLockProvider().open(config, context)) {
      Lease lease = holder.lock(name).acquire(Duration.ofSeconds(10));
      assertThat(lease.releaseAfter(keep)).isTrue();
      long set = System.nanoTime();
      LockAttempt attempt = backend.attempt(name, "busy-probe:1", Duration.ofSeconds(10), () -> {});
      try {
        Poll poll = attempt.poll();
        long left = keep.toNanos() - (System.nanoTime() - set);
        assertThat(poll.isGranted()).as("a poll during the hold").isFalse();
        assertThat(poll.retryAfter().toNanos())
            .as("retry-after of a busy poll behind a hold (recheck 1 h)")
            .isPositive()
            .isLessThanOrEqualTo(left);
        LOG.info(
            "a poll {} ms into a hold of {} ms was told to look again after {} ms",
            keep.toMillis() - left / 1_000_000,
            keep.toMillis(),
            poll.retryAfter().toMillis());
      } finally {
        attempt.abandon();
      }
    }
  }

  private static void awaitKeys(String name, int count) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (keysOf(name).size() < count) {
      assertThat(System.nanoTime() - deadline)
          .as("waiting for %d keys of %s", count, name)
          .isNegative();
      Thread.sleep(5);
    }
  }

  private static void awaitLeaseGone(long leaseId) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (grantedTtl(leaseId) >= 0) {
      assertThat(System.nanoTime() - deadline)
          .as("waiting for etcd lease %x to be revoked", leaseId)
          .isNegative();
      Thread.sleep(5);
    }
  }
}
