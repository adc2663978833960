package dev.locksmith.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockException;
import dev.locksmith.Locks;
import dev.locksmith.tck.HoldLog;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A three-member etcd cluster on loopback: the leader dies during contention, and the whole cluster
 * pauses.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class EtcdFailoverIT {
  private static final Logger LOG = LoggerFactory.getLogger(EtcdFailoverIT.class);

  @RegisterExtension
  static final EtcdServerExtension ETCD = EtcdServerExtension.threeMembers("cluster");

  private static String uri(String options) {
    return "etcd://" + ETCD.hosts() + "?" + options;
  }

  @Test
  void killingTheLeaderDuringContentionNeverLetsTwoHoldersOverlap() throws Exception {
    List<LockClient> clients = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      clients.add(Locks.connect(uri("ttl=5s&request-timeout=3s")));
    }
    String name = "failover";
    HoldLog holds = new HoldLog();
    ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
    AtomicInteger counter = new AtomicInteger();
    AtomicInteger failedAttempts = new AtomicInteger();
    AtomicInteger lostWhileHeld = new AtomicInteger();
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> workers = new ArrayList<>();
    try {
      for (int w = 0; w < 6; w++) {
        int me = w;
        LockClient c = clients.get(w % clients.size());
        Thread t =
            new Thread(
                () -> {
                  while (!stop.get()) {
                    try (Lease lease = c.lock(name).acquire(Duration.ofSeconds(30))) {
                      long start = System.nanoTime();
                      int seen = counter.get();
                      Thread.yield();
                      counter.set(seen + 1);
                      long end = System.nanoTime();
                      if (!lease.isValid()) {
                        lostWhileHeld.incrementAndGet();
                      }
                      holds.record(me, lease.fencingToken(), start, end);
                    } catch (LockException e) {
                      failedAttempts
                          .incrementAndGet(); // the cluster is electing a leader: try again
                    } catch (InterruptedException e) {
                      return;
                    } catch (Throwable e) {
                      unexpected.add(e);
                      return;
                    }
                  }
                },
                "failover-worker-" + w);
        t.setDaemon(true);
        t.start();
        workers.add(t);
      }
      awaitHolds(holds, 150, "holds before the leader is killed");
      EtcdCluster.Member leader = ETCD.cluster().leader(ETCD.admin());
      int before = holds.size();
      LOG.info("killing etcd leader {} after {} holds", leader.name, before);
      long killedAt = System.nanoTime();
      leader.process.kill();
      awaitHolds(holds, before + 150, "holds after the leader was killed");
      LOG.info(
          "{} more holds within {} ms of the kill; {} attempts failed meanwhile",
          holds.size() - before,
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt),
          failedAttempts.get());
      stop.set(true);
      for (Thread t : workers) {
        t.join(TimeUnit.SECONDS.toMillis(40));
        assertThat(t.isAlive()).as("%s stopped", t.getName()).isFalse();
      }
      assertThat(unexpected).as("unexpected failures of workers").isEmpty();
      holds.assertNoOverlap();
      holds.assertTokensIncrease();
      assertThat(counter.get()).as("unguarded increments, one per hold").isEqualTo(holds.size());
      assertThat(lostWhileHeld.get()).as("holds whose lease was lost during the failover").isZero();
      leader.process.restart();
      ETCD.cluster().awaitHealthy(Duration.ofSeconds(30));
    } finally {
      stop.set(true);
      workers.forEach(Thread::interrupt);
      clients.forEach(LockClient::close);
    }
  }

  @Test
  void theWholeClusterPausedBeyondTheTtlReportsTheLoss() throws Exception {
    try (LockClient client = Locks.connect(uri("ttl=2s&request-timeout=1s"))) {
      Lease lease = client.lock("cluster-paused").acquire(Duration.ofSeconds(10));
      ETCD.cluster().members.forEach(m -> m.process.pause());
      long pausedAt = System.nanoTime();
      try {
        var loss = lease.lost().toCompletableFuture().get(15, TimeUnit.SECONDS);
        LOG.info(
            "loss reported {} ms after the cluster paused: {}",
            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - pausedAt),
            loss.getMessage());
      } finally {
        ETCD.cluster().members.forEach(m -> m.process.resume());
      }
      assertThat(lease.isValid()).isFalse();
      ETCD.cluster().awaitHealthy(Duration.ofSeconds(30));
      Lease again = client.lock("cluster-paused").acquire(Duration.ofSeconds(30));
      assertThat(again.fencingToken()).isGreaterThan(lease.fencingToken());
      assertThat(again.release()).isTrue();
    }
  }

  private static void awaitHolds(HoldLog holds, int count, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (holds.size() < count) {
      if (System.nanoTime() - deadline > 0) {
        fail("expected " + count + " " + what + " within 60 s, saw " + holds.size());
      }
      Thread.sleep(10);
    }
  }
}
