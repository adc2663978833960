package dev.locksmith.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.Locks;
import dev.locksmith.spi.Abandonable;
import dev.locksmith.tck.TckTimeouts;
import dev.locksmith.tck.compare.TcpProxy;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.integration.leader.Candidate;
import org.springframework.integration.leader.Context;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;

/**
 * Leader election with Spring Integration's {@link LockRegistryLeaderInitiator} over {@link
 * LocksmithLockRegistry}, in two Spring application contexts on one real server, each with a client
 * of its own that reaches the server through a TCP proxy (so a leader can be cut off). A subclass
 * names the server's URI and its expiry slack.
 */
abstract class LeaderElectionContract {
  static final TckTimeouts TIMES = TckTimeouts.fromEnvironment();
  static final Duration LEASE = Duration.ofSeconds(1);
  private static final Pattern HOST_PORT = Pattern.compile("127\\.0\\.0\\.1:(\\d+)");
  private final List<Node> nodes = new ArrayList<>();
  private final String role = "leader-" + UUID.randomUUID();

  /**
   * @return the server's lock URI, with 127.0.0.1:PORT in it
   */
  protected abstract String uri() throws Exception;

  /**
   * @return how long after the lease a vanished holder's lock may stay taken (a session timeout)
   */
  protected abstract Duration expirySlack();

  /** A candidate that records what it was told, and the fencing token it led with. */
  static final class RecordingCandidate implements Candidate {
    final String id;
    final String role;
    final LocksmithLockRegistry registry;
    volatile boolean leader;
    volatile long token;
    volatile long grantedAt;

    RecordingCandidate(String id, String role, LocksmithLockRegistry registry) {
      this.id = id;
      this.role = role;
      this.registry = registry;
    }

    @Override
    public String getRole() {
      return role;
    }

    @Override
    public String getId() {
      return id;
    }

    @Override
    public void onGranted(Context ctx) {
      // called on the thread that holds the lock: its fencing token is visible here
      token = registry.obtain(role).fencingToken().orElse(-1);
      grantedAt = System.nanoTime();
      leader = true;
    }

    @Override
    public void onRevoked(Context ctx) {
      leader = false;
    }
  }

  /**
   * One application: a Spring context with its own client, proxy, registry and leader initiator.
   */
  final class Node implements AutoCloseable {
    final TcpProxy proxy;
    final LockClient client;
    final RecordingCandidate candidate;
    final AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();

    Node(String id) throws Exception {
      String uri = uri();
      Matcher m = HOST_PORT.matcher(uri);
      assertThat(m.find()).as("a 127.0.0.1:PORT in " + uri).isTrue();
      proxy = new TcpProxy(new InetSocketAddress("127.0.0.1", Integer.parseInt(m.group(1))));
      client = Locks.connect(m.replaceFirst("127.0.0.1:" + proxy.address().getPort()));
      LocksmithLockRegistry registry =
          new LocksmithLockRegistry(
              client, LockOptions.builder().lease(LEASE).autoRenew(true).build());
      candidate = new RecordingCandidate(id, role, registry);
      context.registerBean("lockRegistry", LocksmithLockRegistry.class, () -> registry);
      context.registerBean(
          "leaderInitiator",
          LockRegistryLeaderInitiator.class,
          () -> {
            LockRegistryLeaderInitiator initiator =
                new LockRegistryLeaderInitiator(registry, candidate);
            initiator.setHeartBeatMillis(200);
            initiator.setBusyWaitMillis(50);
            return initiator;
          });
      context.refresh(); // starts the initiator (a SmartLifecycle)
    }

    @Override
    public void close() throws Exception {
      proxy.blackhole(false);
      context.close();
      client.close();
      proxy.close();
    }
  }

  private Node node(String id) throws Exception {
    Node n = new Node(id);
    nodes.add(n);
    return n;
  }

  @AfterEach
  void closeNodes() throws Exception {
    for (Node n : nodes) {
      n.close();
    }
  }

  static boolean await(Duration within, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        return false;
      }
      Thread.sleep(10);
    }
    return true;
  }

  /** Where the initiators' threads are, for a failure message. */
  private static String electionThreads() {
    StringBuilder b = new StringBuilder();
    Thread.getAllStackTraces()
        .forEach(
            (t, stack) -> {
              if (t.getName().startsWith("lock-leadership")) {
                b.append(t.getName()).append(" ").append(t.getState()).append('\n');
                for (int i = 0; i < Math.min(25, stack.length); i++) {
                  b.append("    at ").append(stack[i]).append('\n');
                }
              }
            });
    return b.toString();
  }

  private Node awaitOneLeader(Node a, Node b) throws InterruptedException {
    assertThat(await(Duration.ofSeconds(10), () -> a.candidate.leader || b.candidate.leader))
        .as("a leader is elected")
        .isTrue();
    return a.candidate.leader ? a : b;
  }

  @Test
  @DisplayName("of two applications exactly one leads, with a fencing token")
  void exactlyOneLeader() throws Exception {
    Node a = node("a");
    Node b = node("b");
    Node leader = awaitOneLeader(a, b);
    assertThat(leader.candidate.token).isPositive();
    long end = System.nanoTime() + Duration.ofMillis(1500).toNanos();
    while (System.nanoTime() - end
        < 0) { // through several heart beats: the leader keeps it, the other never joins it
      assertThat(a.candidate.leader && b.candidate.leader).as("both lead at once").isFalse();
      assertThat(leader.candidate.leader).as("the leader stays leader").isTrue();
      Thread.sleep(20);
    }
  }

  @Test
  @DisplayName(
      "when the leader's client dies, the other application leads within lease + tolerance, with a"
          + " higher token")
  void leaderCrashHandsOver() throws Exception {
    Node a = node("a");
    Node b = node("b");
    Node leader = awaitOneLeader(a, b);
    Node other = leader == a ? b : a;
    long before = leader.candidate.token;
    long crash = System.nanoTime();
    ((Abandonable) leader.client).abandon(); // a crash: renewals stop, nothing released
    Duration bound = LEASE.plus(expirySlack()).plus(TIMES.tolerance());
    assertThat(await(bound, () -> other.candidate.leader))
        .as("the other leads within " + bound.toMillis() + " ms")
        .isTrue();
    assertThat(other.candidate.token).as("the new leader's fencing token").isGreaterThan(before);
    assertThat((other.candidate.grantedAt - crash) / 1_000_000)
        .as("not before the old lease could run out")
        .isPositive();
  }

  @Test
  @DisplayName(
      "a leader cut off from the server loses leadership, and the new leader's token is higher")
  void pausedLeaderLosesLeadership() throws Exception {
    Node a = node("a");
    Node b = node("b");
    Node leader = awaitOneLeader(a, b);
    Node other = leader == a ? b : a;
    long before = leader.candidate.token;
    leader.proxy.blackhole(true); // its renewals stop reaching the server
    Duration bound = LEASE.plus(expirySlack()).plus(TIMES.tolerance());
    assertThat(await(bound, () -> other.candidate.leader))
        .as("the other leads within " + bound.toMillis() + " ms")
        .isTrue();
    assertThat(other.candidate.token).as("the new leader's fencing token").isGreaterThan(before);
    // the old leader learns it lost once its lease runs out and it cannot win the lock back
    Duration revoked = bound.plus(Duration.ofSeconds(5));
    assertThat(await(revoked, () -> !leader.candidate.leader))
        .as(
            () ->
                "the cut-off leader is revoked within "
                    + revoked.toMillis()
                    + " ms; its election threads:\n"
                    + electionThreads())
        .isTrue();
    leader.proxy.blackhole(false);
    assertThat(
            await(Duration.ofSeconds(2), () -> other.candidate.leader && !leader.candidate.leader))
        .as("after healing, the new leader keeps leading")
        .isTrue();
  }
}
