package dev.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockException;
import dev.locksmith.Locks;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Leader/server failover (FAULTS.md row 7): a 3-node ensemble, four clients contending for one
 * lock, and the server the current holder is connected to killed mid-contention. Every hold is
 * recorded as the kit's rule 1.1 does; no two holds that were valid to their end may overlap,
 * tokens keep rising across the failover, and the lock keeps being handed on afterwards.
 */
class ZooKeeperFailoverIT {
  @RegisterExtension
  static final ZooKeeperServerExtension ZK =
      ZooKeeperServerExtension.threeMembersInThisJvm("zk-failover")
          .setting("4lw.commands.whitelist", "*");

  private static final Pattern SESSION = Pattern.compile("sid=0x([0-9a-f]+)");

  /**
   * One holding as observed by a worker; {@code valid} is whether the lease was still valid at its
   * end.
   */
  private record Hold(int client, long token, long start, long end, boolean valid) {
    @Override
    public String toString() {
      return "client "
          + client
          + " token "
          + token
          + " ["
          + start
          + ".."
          + end
          + "]"
          + (valid ? "" : " (lost)");
    }
  }

  @Test
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  void killingTheHoldersServerDuringContentionNeverLetsHoldsOverlap() throws Exception {
    TestingCluster cluster = ZK.cluster();
    String connect = ZK.connectString();
    String uri = "zookeeper://" + connect + "?session-timeout=6s&connection-timeout=3s";
    String name = "failover/" + System.nanoTime();
    String parent = "/" + ZooKeeperSettings.DEFAULT_NAMESPACE + "/" + NodeNames.encode(name);

    List<LockClient> clients = new ArrayList<>();
    ConcurrentLinkedQueue<Hold> holds = new ConcurrentLinkedQueue<>();
    ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    AtomicInteger unavailable = new AtomicInteger();
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> workers = new ArrayList<>();
    try (CuratorFramework admin =
        CuratorFrameworkFactory.builder()
            .connectString(connect)
            .sessionTimeoutMs(30_000)
            .connectionTimeoutMs(5_000)
            .retryPolicy(new RetryNTimes(50, 100))
            .build()) {
      admin.start();
      for (int c = 0; c < 4; c++) {
        LockClient client = Locks.connect(uri);
        clients.add(client);
        int index = c;
        Thread t =
            new Thread(
                () -> {
                  while (!stop.get()) {
                    try (Lease lease = client.lock(name).acquire(Duration.ofSeconds(30))) {
                      long start = System.nanoTime();
                      long busyUntil = start + TimeUnit.MILLISECONDS.toNanos(2);
                      while (System.nanoTime() < busyUntil) {
                        Thread.onSpinWait(); // the protected work
                      }
                      long end = System.nanoTime();
                      holds.add(new Hold(index, lease.fencingToken(), start, end, lease.isValid()));
                    } catch (LockException e) {
                      unavailable
                          .incrementAndGet(); // the ensemble is electing or our server is gone:
                      // try again
                    } catch (InterruptedException e) {
                      return;
                    } catch (Throwable e) {
                      errors.add(e);
                      return;
                    }
                  }
                },
                "failover-" + c);
        t.setDaemon(true);
        workers.add(t);
        t.start();
      }
      await(Duration.ofSeconds(30), "50 holds before the failover", () -> holds.size() >= 50);

      InstanceSpec victim = null;
      long holderSession = 0;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (victim == null && System.nanoTime() < deadline) {
        Optional<Long> session = holderSession(admin, parent);
        if (session.isPresent()) {
          holderSession = session.get();
          victim = serverOf(holderSession, cluster);
        }
      }
      assertThat(victim).as("found the server the holder is connected to").isNotNull();
      int before = holds.size();
      long killedAt = System.nanoTime();
      assertThat(cluster.killServer(victim)).isTrue();

      await(
          Duration.ofSeconds(60),
          "50 more holds after killing " + victim.getConnectString(),
          () -> holds.stream().filter(h -> h.start > killedAt).count() >= 50);

      // then the leader, once the ensemble is whole again: every client is cut off during the
      // election
      assertThat(cluster.restartServer(victim)).isTrue();
      InstanceSpec leader = null;
      deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (leader == null && System.nanoTime() < deadline) {
        leader = leaderOf(cluster);
      }
      assertThat(leader).as("the ensemble has a leader again").isNotNull();
      long leaderKilledAt = System.nanoTime();
      assertThat(cluster.killServer(leader)).isTrue();
      await(
          Duration.ofSeconds(60),
          "50 more holds after killing the leader " + leader.getConnectString(),
          () -> holds.stream().filter(h -> h.start > leaderKilledAt).count() >= 50);
      stop.set(true);
      for (Thread t : workers) {
        t.join(TimeUnit.SECONDS.toMillis(40));
        assertThat(t.isAlive()).as("worker %s stopped", t.getName()).isFalse();
      }
      assertThat(errors).as("unexpected errors in the workers").isEmpty();

      List<Hold> sorted = new ArrayList<>(holds);
      sorted.sort(Comparator.comparingLong(h -> h.start));
      List<Hold> valid =
          sorted.stream().filter(h -> h.valid).collect(java.util.stream.Collectors.toList());
      for (int i = 1; i < valid.size(); i++) {
        Hold a = valid.get(i - 1);
        Hold b = valid.get(i);
        if (b.start - a.end < 0) {
          fail("mutual exclusion broken across the failover: holds overlapped: " + a + " and " + b);
        }
        if (b.token <= a.token) {
          fail(
              "fencing broken across the failover: token "
                  + b.token
                  + " followed token "
                  + a.token);
        }
      }
      System.out.printf(
          "failover: %d holds (%d before the kill, %d lost to the failover), %d acquire/release"
              + " calls failed while the ensemble recovered; killed %s holding session 0x%x, then"
              + " the leader %s%n",
          sorted.size(),
          before,
          sorted.size() - valid.size(),
          unavailable.get(),
          victim.getConnectString(),
          holderSession,
          leader.getConnectString());
    } finally {
      stop.set(true);
      for (Thread t : workers) {
        t.interrupt();
      }
      for (LockClient c : clients) {
        c.close();
      }
    }
  }

  /**
   * @return the session of the node first in line, if the lock is held right now
   */
  private static Optional<Long> holderSession(CuratorFramework admin, String parent)
      throws Exception {
    try {
      List<String> children = new ArrayList<>(admin.getChildren().forPath(parent));
      children.sort(NodeNames.BY_SEQUENCE);
      if (children.isEmpty()) {
        return Optional.empty();
      }
      Stat stat = admin.checkExists().forPath(parent + "/" + children.get(0));
      return stat == null ? Optional.empty() : Optional.of(stat.getEphemeralOwner());
    } catch (KeeperException.NoNodeException e) {
      return Optional.empty();
    }
  }

  /**
   * Asks each server for its connections (the {@code cons} four-letter word) and returns the one
   * serving the session.
   */
  private static InstanceSpec serverOf(long session, TestingCluster cluster) throws Exception {
    for (InstanceSpec spec : cluster.getInstances()) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", spec.getPort()), 2000);
        s.setSoTimeout(2000);
        OutputStream out = s.getOutputStream();
        out.write("cons".getBytes(StandardCharsets.US_ASCII));
        out.flush();
        InputStream in = s.getInputStream();
        String text = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        Matcher m = SESSION.matcher(text);
        while (m.find()) {
          if (Long.parseUnsignedLong(m.group(1), 16) == session) {
            return spec;
          }
        }
      }
    }
    return null;
  }

  /**
   * @return the server whose {@code srvr} four-letter word says it leads, or null during an
   *     election
   */
  private static InstanceSpec leaderOf(TestingCluster cluster) {
    for (InstanceSpec spec : cluster.getInstances()) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", spec.getPort()), 2000);
        s.setSoTimeout(2000);
        s.getOutputStream().write("srvr".getBytes(StandardCharsets.US_ASCII));
        s.getOutputStream().flush();
        if (new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII)
            .contains("Mode: leader")) {
          return spec;
        }
      } catch (java.io.IOException e) {
        // down or not serving yet
      }
    }
    return null;
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
}
