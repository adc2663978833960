package dev.locksmith.bench;

import dev.locksmith.Election;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.election.LeaderKey;
import io.etcd.jetcd.election.LeaderResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * A child JVM of {@link ElectionsRun}: hand-overs of one election between two contenders, each with
 * a client (connection, session) of its own, watched by an observer with a third. Per hand-over:
 * the leader resigns at t0; the hand-over time is t0 to the moment the waiting contender's campaign
 * returns leading; the observe time is t0 to the moment the observer is told that contender leads.
 * Implementations take turns in interleaved rounds (order reversed every other round) after a
 * warm-up round each.
 *
 * <p>Arguments: rounds, hand-overs per round, implementation ids (comma-separated). Prints, after
 * {@code #RESULT}, {@code <id>.<round>.handoverP50Us}, {@code handoverP99Us}, {@code observeP50Us},
 * {@code observeP99Us}, and {@code firstError} if one failed.
 */
public final class ElectionRounds {
  private ElectionRounds() {}

  /** One contender: campaigns until it leads, resigns. */
  interface Contender extends AutoCloseable {
    void campaign() throws Exception;

    void resign() throws Exception;

    @Override
    void close() throws Exception;
  }

  /** One implementation: contenders and an observer on one election of its own. */
  interface Subject extends AutoCloseable {
    Contender contender(String identity) throws Exception;

    /** Starts observing; {@code leader} is told each leader's identity, null for none. */
    AutoCloseable observe(Consumer<String> leader) throws Exception;
  }

  /**
   * @param args rounds, hand-overs per round, ids
   * @throws Exception if a subject cannot be opened
   */
  public static void main(String[] args) throws Exception {
    int rounds = Integer.parseInt(args[0]);
    int perRound = Integer.parseInt(args[1]);
    String run = Long.toHexString(ThreadLocalRandom.current().nextLong());
    Properties p = new Properties();
    List<Measured> all = new ArrayList<>();
    try {
      for (String id : args[2].split(",")) {
        all.add(new Measured(id, open(id, "bench-election-" + run + "-" + id)));
      }
      for (Measured m : all) {
        m.round(perRound, null, null); // warm-up
      }
      for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < all.size(); k++) {
          Measured m = all.get(r % 2 == 0 ? k : all.size() - 1 - k);
          LongList handovers = new LongList();
          LongList observed = new LongList();
          m.round(perRound, handovers, observed);
          Percentiles h = new Percentiles(handovers.toArray());
          Percentiles o = new Percentiles(observed.toArray());
          p.setProperty(m.id + "." + r + ".handoverP50Us", Double.toString(h.at(50) / 1e3));
          p.setProperty(m.id + "." + r + ".handoverP99Us", Double.toString(h.at(99) / 1e3));
          p.setProperty(m.id + "." + r + ".observeP50Us", Double.toString(o.at(50) / 1e3));
          p.setProperty(m.id + "." + r + ".observeP99Us", Double.toString(o.at(99) / 1e3));
        }
      }
    } catch (Exception e) {
      p.setProperty("firstError", String.valueOf(e));
    } finally {
      for (Measured m : all) {
        m.close();
      }
    }
    PrintStream out = System.out;
    out.println("#RESULT");
    p.store(out, "elections");
    out.flush();
    System.exit(0);
  }

  /** One implementation under measurement: its two contenders, its observer, who leads. */
  private static final class Measured {
    final String id;
    final Subject subject;
    final Contender[] contenders = new Contender[2];
    final AutoCloseable observation;
    final ExecutorService campaigns = Executors.newSingleThreadExecutor();

    /** The last leader the observer was told of, and when ({@link System#nanoTime()}). */
    volatile String told;

    volatile long toldAt;
    int leader = -1;

    Measured(String id, Subject subject) throws Exception {
      this.id = id;
      this.subject = subject;
      contenders[0] = subject.contender("bench-a");
      contenders[1] = subject.contender("bench-b");
      observation =
          subject.observe(
              identity -> {
                toldAt = System.nanoTime();
                told = identity;
              });
    }

    private static String name(int i) {
      return i == 0 ? "bench-a" : "bench-b";
    }

    void round(int handovers, LongList handoverNanos, LongList observeNanos) throws Exception {
      if (leader < 0) {
        contenders[0].campaign();
        leader = 0;
      }
      for (int i = 0; i < handovers; i++) {
        int next = 1 - leader;
        Contender waiting = contenders[next];
        Future<Long> elected =
            campaigns.submit(
                () -> {
                  waiting.campaign();
                  return System.nanoTime();
                });
        awaitTold(name(leader));
        Thread.sleep(20); // the next contender waits in line
        long t0 = System.nanoTime();
        contenders[leader].resign();
        long at = elected.get(30, TimeUnit.SECONDS);
        long seenAt = awaitTold(name(next));
        leader = next;
        if (handoverNanos != null) {
          handoverNanos.add(at - t0);
          observeNanos.add(Math.max(0, seenAt - t0));
        }
      }
    }

    /**
     * @return when the observer was told {@code identity} leads; waits up to 30 s
     */
    long awaitTold(String identity) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (!identity.equals(told)) {
        if (System.nanoTime() - deadline > 0) {
          throw new IllegalStateException(
              id + ": the observer was not told within 30 s that " + identity + " leads");
        }
        Thread.onSpinWait();
        Thread.sleep(0, 100_000);
      }
      return toldAt;
    }

    void close() {
      campaigns.shutdownNow();
      for (AutoCloseable c : new AutoCloseable[] {observation, contenders[0], contenders[1]}) {
        try {
          if (c != null) {
            c.close();
          }
        } catch (Exception e) {
          // closing after the measurement
        }
      }
      try {
        subject.close();
      } catch (Exception e) {
        // closing after the measurement
      }
    }
  }

  static Subject open(String id, String election) throws Exception {
    switch (id) {
      case "locksmith-election-redis":
        return locksmith("redis://" + Endpoints.require("redis"), election);
      case "locksmith-election-etcd":
        return locksmith("etcd://" + Endpoints.require("etcd"), election);
      case "locksmith-election-zookeeper":
        return locksmith("zookeeper://" + Endpoints.require("zookeeper"), election);
      case "curator-leaderlatch":
        return curator(Endpoints.require("zookeeper"), "/" + election);
      case "jetcd-election":
        return jetcd(Endpoints.require("etcd"), election);
      default:
        throw new IllegalArgumentException("unknown election implementation " + id);
    }
  }

  /** Locksmith: {@code client.election(name)}, campaign / resign, and {@code observe}. */
  static Subject locksmith(String uri, String name) {
    List<LockClient> clients = new ArrayList<>();
    return new Subject() {
      @Override
      public Contender contender(String identity) {
        LockClient c = Locks.connect(uri);
        clients.add(c);
        Election e = c.election(name);
        return new Contender() {
          Election.Leadership leading;

          @Override
          public void campaign() throws Exception {
            leading = e.campaign(identity, Duration.ofSeconds(30));
          }

          @Override
          public void resign() {
            leading.resign();
          }

          @Override
          public void close() {
            if (leading != null) {
              leading.close();
            }
          }
        };
      }

      @Override
      public AutoCloseable observe(Consumer<String> leader) {
        LockClient c = Locks.connect(uri);
        clients.add(c);
        return c.election(name)
            .observe(l -> leader.accept(l.flatMap(Election.Leader::identity).orElse(null)));
      }

      @Override
      public void close() {
        clients.forEach(LockClient::close);
      }
    };
  }

  private static CuratorFramework curatorClient(String endpoint) throws InterruptedException {
    CuratorFramework c =
        CuratorFrameworkFactory.newClient(
            endpoint, 30_000, 10_000, new ExponentialBackoffRetry(100, 3));
    c.start();
    if (!c.blockUntilConnected(20, TimeUnit.SECONDS)) {
      c.close();
      throw new IllegalStateException("Curator did not connect to " + endpoint + " within 20 s");
    }
    return c;
  }

  /**
   * Curator: a {@link LeaderLatch} per campaign (a closed latch cannot start again), closed to
   * resign; the observer is what a Curator user writes for one, a {@link CuratorCache} of the
   * latch's path whose every event reads the leader with {@link LeaderLatch#getLeader()}.
   */
  static Subject curator(String endpoint, String path) {
    List<CuratorFramework> clients = new ArrayList<>();
    return new Subject() {
      @Override
      public Contender contender(String identity) throws Exception {
        CuratorFramework c = curatorClient(endpoint);
        clients.add(c);
        return new Contender() {
          LeaderLatch latch;

          @Override
          public void campaign() throws Exception {
            latch = new LeaderLatch(c, path, identity);
            latch.start();
            latch.await();
          }

          @Override
          public void resign() throws Exception {
            latch.close();
          }

          @Override
          public void close() throws Exception {
            if (latch != null && latch.getState() == LeaderLatch.State.STARTED) {
              latch.close();
            }
          }
        };
      }

      @Override
      public AutoCloseable observe(Consumer<String> leader) throws Exception {
        CuratorFramework c = curatorClient(endpoint);
        clients.add(c);
        LeaderLatch reader = new LeaderLatch(c, path, "bench-observer");
        CuratorCache cache = CuratorCache.build(c, path);
        Runnable read =
            () -> {
              try {
                Participant p = reader.getLeader();
                leader.accept(p.isLeader() ? p.getId() : null);
              } catch (Exception e) {
                leader.accept(null);
              }
            };
        cache.listenable().addListener((type, oldData, data) -> read.run());
        cache.start();
        read.run();
        return cache;
      }

      @Override
      public void close() {
        clients.forEach(CuratorFramework::close);
      }
    };
  }

  /**
   * jetcd: {@code Election.campaign} under a lease of the contender's own (kept alive), {@code
   * resign} with the leader key, and {@code Election.observe} for the observer.
   */
  static Subject jetcd(String endpoint, String name) {
    List<Client> clients = new ArrayList<>();
    List<CloseableClient> keepAlives = new ArrayList<>();
    ByteSequence election = ByteSequence.from(name, StandardCharsets.UTF_8);
    return new Subject() {
      @Override
      public Contender contender(String identity) throws Exception {
        Client c = Client.builder().endpoints("http://" + endpoint).build();
        clients.add(c);
        long lease = c.getLeaseClient().grant(10).get(20, TimeUnit.SECONDS).getID();
        keepAlives.add(
            c.getLeaseClient()
                .keepAlive(
                    lease,
                    new StreamObserver<LeaseKeepAliveResponse>() {
                      @Override
                      public void onNext(LeaseKeepAliveResponse r) {}

                      @Override
                      public void onError(Throwable t) {}

                      @Override
                      public void onCompleted() {}
                    }));
        ByteSequence proposal = ByteSequence.from(identity, StandardCharsets.UTF_8);
        return new Contender() {
          LeaderKey key;

          @Override
          public void campaign() throws Exception {
            key =
                c.getElectionClient()
                    .campaign(election, lease, proposal)
                    .get(30, TimeUnit.SECONDS)
                    .getLeader();
          }

          @Override
          public void resign() throws Exception {
            c.getElectionClient().resign(key).get(30, TimeUnit.SECONDS);
          }

          @Override
          public void close() {}
        };
      }

      @Override
      public AutoCloseable observe(Consumer<String> leader) {
        Client c = Client.builder().endpoints("http://" + endpoint).build();
        clients.add(c);
        c.getElectionClient()
            .observe(
                election,
                new io.etcd.jetcd.Election.Listener() {
                  @Override
                  public void onNext(LeaderResponse r) {
                    leader.accept(
                        Optional.ofNullable(r.getKv())
                            .map(kv -> kv.getValue().toString(StandardCharsets.UTF_8))
                            .orElse(null));
                  }

                  @Override
                  public void onError(Throwable t) {}

                  @Override
                  public void onCompleted() {}
                });
        return () -> {};
      }

      @Override
      public void close() {
        keepAlives.forEach(CloseableClient::close);
        clients.forEach(Client::close);
      }
    };
  }
}
