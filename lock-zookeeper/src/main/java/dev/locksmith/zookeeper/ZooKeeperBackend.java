package dev.locksmith.zookeeper;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Guarantees.Promise;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockException;
import dev.locksmith.LockState;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.curator.retry.RetryUntilElapsed;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.Event.EventType;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Locks on ZooKeeper. Each lock name is a container node; each acquirer creates an
 * ephemeral-sequential child named as in Curator's protected mode (a create that succeeded just
 * before a connection loss is found again by its owner id, not duplicated), holds the lock when its
 * child is the lowest, and otherwise watches only the child just before its own. A lock's create
 * goes in one transaction with a write to the lock's node, whose stat counts the children: alone,
 * the lock is granted without reading them; the waiter next behind the head is granted on the
 * head's delete without reading them either. The fencing token is the czxid of the holder's child:
 * ZooKeeper's transaction id of its creation, which only grows, even when the container is removed
 * and the sequence numbers start again.
 *
 * <p>Held locks live as long as the session: SUSPENDED puts every lease in doubt until the earliest
 * moment the server may have expired the session; RECONNECTED lifts the doubt for each lease whose
 * node is still there and still ours; LOST (or a deleted node) is a lost lease.
 *
 * <p><b>Lease control.</b> {@link #extend} writes an expiry into the holder's node ("expires
 * <i>n</i> ms after this write"), and {@link #releaseAfter} replaces the holder's node, in one
 * multi, by a persistent {@link NodeNames#HOLD} node that says the same. Both are judged by the
 * ZooKeeper leader's clock: a write's mtime is set by the leader, and the waiter first in line
 * learns the leader's time now from a write of its own (see {@link #leaderNow()}), then deletes an
 * expired head with a versioned delete, so an extend that lands first wins. Nothing on a client
 * clock decides that a lock is free.
 *
 * <p><b>Semaphores and read-write locks</b> queue the same way under parents of their own ({@link
 * NodeNames#parent}); {@link ClaimQueue} says which nodes ahead stand in a waiter's way, and the
 * token of such a grant is the zxid of a write made with it ({@code fence()}), since their grants
 * need not come in their nodes' order. Extend and release-after are for locks only.
 */
final class ZooKeeperBackend implements LockBackend {
  private static final Logger LOG = LoggerFactory.getLogger(ZooKeeperBackend.class);
  private static final AtomicInteger BACKENDS = new AtomicInteger();

  /**
   * How long a lease is held before its node gets a watch: a node deleted behind the holder's back
   * within this time of the grant is reported lost at most about twice this late.
   */
  static final Duration WATCH_DELAY = Duration.ofMillis(50);

  /**
   * Reads of a lock's children in one poll: an expired head deleted, or one gone between two reads,
   * costs a round.
   */
  private static final int ROUNDS = 4;

  /**
   * What Curator's protected mode puts before a node's random id; our counting create names its
   * nodes alike.
   */
  private static final String PROTECTION_PREFIX = "_c_";

  private static final byte[] NO_DATA = new byte[0];

  static final Guarantees GUARANTEES =
      Guarantees.builder()
          .features(
              Feature.FENCING,
              Feature.FIFO_FAIRNESS,
              Feature.RENEWAL,
              Feature.LOSS_DETECTION,
              Feature.NOTIFIED_WAKEUP,
              Feature.REENTRANCY,
              Feature.SHARED_ACROSS_PROCESSES,
              Feature.STATE_READS,
              Feature.EXTEND,
              Feature.HOLD_AFTER_RELEASE,
              Feature.SEMAPHORES,
              Feature.READ_WRITE_LOCKS)
          // FIFO is declared, and checked by the kit, for locks only
          .except(Guarantees.Primitive.SEMAPHORE, Feature.FIFO_FAIRNESS)
          .except(Guarantees.Primitive.READ_WRITE_LOCK, Feature.FIFO_FAIRNESS)
          .promise(
              Fault.HOLDER_PAUSE,
              Promise.SAFE_WITH_FENCING,
              "a holder paused past the session timeout loses its node; "
                  + "the next holder's node is created later, so its czxid token is greater")
          .promise(
              Fault.HOLDER_CRASH,
              Promise.SAFE,
              "the crashed holder's ephemeral node is deleted when its session times out; with"
                  + " renewal off, a lock's by the first waiter once the leader's clock passes the"
                  + " lease's expiry (a permit's or side's when the session times out)")
          .promise(
              Fault.PAUSE_DURING_ACQUIRE,
              Promise.SAFE_WITH_FENCING,
              "as for a paused holder: the session may expire "
                  + "before the grant is seen, and the next holder's czxid is greater")
          .promise(
              Fault.SERVER_RESTART,
              Promise.SAFE,
              "ZooKeeper logs every node to disk before acknowledging it, so "
                  + "nodes and sessions survive a restart")
          .promise(
              Fault.SERVER_PAUSE,
              Promise.UNAVAILABLE,
              "nothing can be acquired while no quorum answers; holders are "
                  + "told their leases are lost once the session may have expired")
          .promise(
              Fault.PARTITION,
              Promise.SAFE_WITH_FENCING,
              "a cut-off holder is SUSPENDED, its lease counts as lost from the earliest moment the"
                  + " server may expire the session, and LOST is reported; tokens fence the rest")
          .promise(
              Fault.LEADER_FAILOVER,
              Promise.SAFE,
              "nodes are replicated by ZAB; a client reconnects to another server within the"
                  + " session timeout and re-checks its node before trusting the lease again")
          .promise(
              Fault.CLOCK_JUMP,
              Promise.SAFE,
              "session timeouts are measured with monotonic clocks on server and client; expiries"
                  + " of unrenewed leases and holds are on the leader's wall clock, which a jump"
                  + " there moves")
          .promise(
              Fault.RELEASE_AFTER_EXPIRY,
              Promise.SAFE,
              "release deletes only our own node, whose path holds a random "
                  + "protection id and our owner id")
          .promise(
              Fault.AMBIGUOUS_ACQUIRE,
              Promise.SAFE,
              "a node whose create succeeded before a connection loss is found by its owner id (as"
                  + " Curator's protected mode finds one), never made twice; an abandoned attempt"
                  + " deletes it")
          .promise(
              Fault.TOKEN_MONOTONICITY,
              Promise.SAFE,
              "a lock's token is its node's czxid, never the sequence number, which restarts with a"
                  + " new container node; a permit's or side's is the zxid of the write made with"
                  + " its grant")
          .build();

  private final CuratorFramework curator;
  private final ZooKeeperSettings settings;
  private final BackendContext context;

  /** Leases granted and not yet released or lost, by owner id. */
  private final Map<String, Held> held = new ConcurrentHashMap<>();

  /**
   * Granted leases whose node is not watched yet, about in grant order; see {@link
   * #watchHeldNodes}.
   */
  private final Queue<Held> unwatched = new ConcurrentLinkedQueue<>();

  /** Orders "lease in doubt" against "lease confirmed" so a stale confirmation never wins. */
  private final ReentrantLock stateLock = new ReentrantLock();

  private final AtomicLong connectionEpoch = new AtomicLong();
  private final ScheduledExecutorService tasks;
  private final ConnectionStateListener listener = this::stateChanged;

  /**
   * How often the children read sent behind a create did not show the new node and was sent again
   * (for tests and the bench).
   */
  final AtomicLong childrenReadAgain = new AtomicLong();

  /**
   * Hand-offs granted on the head's deletion without reading the children (for tests and the
   * bench).
   */
  final AtomicLong handOffsUnread = new AtomicLong();

  /** This client's scratch node, written to learn the leader's clock ({@link #leaderNow()}). */
  private final String clockPath;

  private volatile boolean connected = true;
  private volatile boolean closed;

  /** A granted lease: what the core hands back in {@link BackendLease#state()}. */
  static final class Held {
    final String name;
    final String ownerId;
    final String path;

    /**
     * The fencing token: the node's czxid for a lock, the zxid of the grant's write for a permit or
     * side.
     */
    final long token;

    /** The czxid of our node: what tells it from a later node of the same path. */
    final long czxid;

    /** What the lease took: a lock, a permit or a side. */
    final Claim.Kind kind;

    /**
     * The watch on our own node (a deletion is a lost lease); re-set by the re-check after a
     * reconnect.
     */
    final Watcher ownWatcher;

    /** {@link System#nanoTime()} of the grant. */
    final long grantedAt;

    /**
     * Whether the node carries an expiry ({@link #extend}): a waiter deletes it once the leader's
     * clock passes it, and that deletion is the lease running out, not a takeover.
     */
    volatile boolean expiring;

    Held(
        String name,
        Claim.Kind kind,
        String ownerId,
        String path,
        long token,
        long czxid,
        Watcher ownWatcher,
        long grantedAt) {
      this.name = name;
      this.kind = kind;
      this.ownerId = ownerId;
      this.path = path;
      this.token = token;
      this.czxid = czxid;
      this.ownWatcher = ownWatcher;
      this.grantedAt = grantedAt;
    }

    /**
     * @return the resource, as messages name it: {@code lock 'a'}, {@code semaphore 'a'}, {@code
     *     read-write lock 'a'}
     */
    String what() {
      return Claim.noun(kind) + " '" + name + "'";
    }

    /**
     * Why a deletion of our node behind our back ends the lease: its expiry, if it had one, else a
     * takeover.
     */
    LeaseLostException.Reason deletedReason() {
      return expiring ? LeaseLostException.Reason.EXPIRED : LeaseLostException.Reason.TAKEN;
    }

    String deletedDetail() {
      return expiring
          ? "its node "
              + path
              + " was deleted on the server once its expiry had passed by the ZooKeeper "
              + "leader's clock"
          : "its node " + path + " was deleted on the server";
    }

    @Override
    public String toString() {
      return path + " (czxid " + czxid + (token != czxid ? ", token " + token : "") + ")";
    }
  }

  private ZooKeeperBackend(
      CuratorFramework curator,
      ZooKeeperSettings settings,
      BackendContext context,
      ScheduledExecutorService tasks) {
    this.curator = curator;
    this.settings = settings;
    this.context = context;
    this.tasks = tasks;
    this.clockPath = "/.clock-" + NodeNames.encode(context.clientId());
  }

  /** Connects, checks that we may create nodes, and starts watching the connection. */
  static ZooKeeperBackend connect(ZooKeeperSettings settings, BackendContext context) {
    int n = BACKENDS.incrementAndGet();
    List<ACL> acls = settings.acl.acls();
    ZKClientConfig zkConfig = new ZKClientConfig();
    // bounds every request, closeSession included, by the connection timeout: without it a close
    // that cannot reach a server waits for a whole connect attempt
    zkConfig.setProperty(
        ZKClientConfig.ZOOKEEPER_REQUEST_TIMEOUT,
        Long.toString(settings.connectionTimeout.toMillis()));
    CuratorFrameworkFactory.Builder builder =
        CuratorFrameworkFactory.builder()
            .connectString(settings.hosts)
            .sessionTimeoutMs(millis(settings.sessionTimeout))
            .connectionTimeoutMs(millis(settings.connectionTimeout))
            // every call gives up once the connection timeout has passed without a connection,
            // except Curator's own clean-ups, which must not spin (see CleanupRetries)
            .retryPolicy(
                new CleanupRetries(new RetryUntilElapsed(millis(settings.connectionTimeout), 50)))
            .namespace(settings.basePath)
            .ensembleTracker(false)
            .zkClientConfig(zkConfig)
            .waitForShutdownTimeoutMs(millis(settings.connectionTimeout))
            .threadFactory(daemon("locksmith-zookeeper-" + n))
            .aclProvider(
                new ACLProvider() {
                  @Override
                  public List<ACL> getDefaultAcl() {
                    return acls;
                  }

                  @Override
                  public List<ACL> getAclForPath(String path) {
                    return acls;
                  }
                });
    if (settings.digest != null) {
      builder.authorization("digest", settings.digest);
    }
    CuratorFramework curator = builder.build();
    ScheduledExecutorService tasks =
        Executors.newSingleThreadScheduledExecutor(daemon("locksmith-zookeeper-state-" + n));
    ZooKeeperBackend backend = new ZooKeeperBackend(curator, settings, context, tasks);
    try {
      curator.start();
      // The connection timeout is the server's time to answer, so it counts from here, where the
      // connection attempt is under way. Building and starting Curator before it is the client's
      // own start-up: in a fresh JVM it loads Curator's and ZooKeeper's classes, which took 1.0-1.3
      // s
      // of a 2 s timeout with three JVMs starting at once (the server answered in under 50 ms),
      // and more on a loaded machine, where a client then failed to reach a server that was fine.
      if (!curator.blockUntilConnected(millis(settings.connectionTimeout), TimeUnit.MILLISECONDS)) {
        // No session was ever made, so there is none to close: a normal close would send
        // closeSession and wait a whole request timeout for an answer that cannot come, which
        // doubled the time the message states. Drop the connection attempt instead, and let
        // ZooKeeper's threads end in the background: one may sleep up to a second between
        // reconnect attempts before it sees the close.
        backend.closeFailedConnect(n);
        throw new BackendUnavailableException(
            "could not connect to ZooKeeper at "
                + settings.hosts
                + " within the `"
                + ZooKeeperSettings.CONNECTION_TIMEOUT
                + "` of "
                + Durations.format(settings.connectionTimeout)
                + ": "
                + diagnose(settings.hosts, diagnosisBudget(settings.connectionTimeout)));
      }
      backend.probe();
      curator.getConnectionStateListenable().addListener(backend.listener);
      long delay = WATCH_DELAY.toNanos();
      tasks.scheduleWithFixedDelay(backend::watchHeldNodes, delay, delay, TimeUnit.NANOSECONDS);
      int negotiated = curator.getZookeeperClient().getZooKeeper().getSessionTimeout();
      if (negotiated != millis(settings.sessionTimeout)) {
        LOG.info(
            "ZooKeeper at {} granted a session timeout of {} ms (asked for {}): its"
                + " minSessionTimeout/maxSessionTimeout bound it",
            settings.hosts,
            negotiated,
            Durations.format(settings.sessionTimeout));
      }
      return backend;
    } catch (InterruptedException e) {
      backend.shutDown(false);
      Thread.currentThread().interrupt();
      throw new BackendUnavailableException(
          "interrupted while connecting to ZooKeeper at " + settings.hosts, e);
    } catch (RuntimeException e) {
      backend.shutDown(false);
      throw e;
    } catch (Exception e) {
      backend.shutDown(false);
      throw new BackendUnavailableException(
          "could not connect to ZooKeeper at " + settings.hosts + ": " + e, e);
    }
  }

  /**
   * A tenth of the connection timeout, from 50 to 500 ms: the diagnosis must not stretch the stated
   * time by more.
   */
  static Duration diagnosisBudget(Duration connectionTimeout) {
    return Duration.ofMillis(Math.max(50, Math.min(500, connectionTimeout.toMillis() / 10)));
  }

  /**
   * Tells a refused connection from a port where something other than ZooKeeper answers, within
   * {@code budget} for all hosts.
   */
  private static String diagnose(String hosts, Duration budget) {
    List<String> found = new ArrayList<>();
    long deadline = System.nanoTime() + budget.toNanos();
    for (String hp : hosts.split(",")) {
      int colon = hp.lastIndexOf(':');
      String host = hp.substring(0, colon).replace("[", "").replace("]", "");
      int port = Integer.parseInt(hp.substring(colon + 1));
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left < 10) {
        found.add(hp + " not checked (no time left)");
        continue;
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(host, port), (int) left);
        found.add(hp + " accepts connections but did not answer as a ZooKeeper server");
      } catch (IOException e) {
        found.add(hp + " refused or did not answer (" + e.getMessage() + ")");
      }
    }
    return String.join("; ", found)
        + ". Check that ZooKeeper runs there and the URI names its client port";
  }

  /**
   * Creates and deletes a node, so wrong credentials or ACLs fail now rather than at the first
   * lock.
   */
  private void probe() throws Exception {
    String path = "/.probe-" + NodeNames.encode(context.clientId());
    try {
      curator
          .create()
          .creatingParentContainersIfNeeded()
          .withMode(CreateMode.EPHEMERAL)
          .forPath(path);
      curator.delete().forPath(path);
    } catch (KeeperException.NoAuthException e) {
      throw new BackendUnavailableException(
          "ZooKeeper at "
              + settings.hosts
              + " refused to create nodes under /"
              + settings.basePath
              + " (NoAuth): they belong to other credentials. Check the user and password of the"
              + " URI ("
              + settings.shownUri
              + "), the `"
              + ZooKeeperSettings.ACL_OPTION
              + "` option, or choose another `"
              + ZooKeeperSettings.NAMESPACE
              + "`",
          e);
    } catch (KeeperException.ConnectionLossException | KeeperException.SessionExpiredException e) {
      throw new BackendUnavailableException(
          "ZooKeeper at " + settings.hosts + " stopped answering while connecting: " + e, e);
    }
  }

  private static int millis(Duration d) {
    return (int) Math.min(Integer.MAX_VALUE, d.toMillis());
  }

  private static ThreadFactory daemon(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  CuratorFramework curator() {
    return curator;
  }

  @Override
  public Guarantees guarantees() {
    return GUARANTEES;
  }

  @Override
  public boolean renewsBySession() {
    return true;
  }

  @Override
  public LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake) {
    return new Attempt(name, Claim.exclusive(), ownerId, wake);
  }

  /**
   * A permit of a semaphore or a side of a read-write lock: a waiter's node under the resource's
   * own parent ({@link NodeNames#parent}), judged by {@link ClaimQueue}, held by the session like a
   * lock's node.
   */
  @Override
  public LockAttempt attempt(
      String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
    return new Attempt(name, claim, ownerId, wake);
  }

  // ------------------------------------------------------------------ connection state

  private void stateChanged(CuratorFramework client, ConnectionState state) {
    if (closed) {
      return;
    }
    long epoch = connectionEpoch.incrementAndGet();
    switch (state) {
      case SUSPENDED:
      case READ_ONLY:
        connected = false;
        long until = System.nanoTime() + inDoubtNanos();
        LOG.warn(
            "connection to ZooKeeper at {} suspended: {} held lease(s) in doubt for {} ms",
            settings.hosts,
            held.size(),
            TimeUnit.NANOSECONDS.toMillis(until - System.nanoTime()));
        putInDoubt(until, epoch);
        // a lease granted just before the suspension may reach the core's books just after it
        schedule(() -> putInDoubt(until, epoch), 200);
        break;
      case CONNECTED:
      case RECONNECTED:
        connected = true;
        schedule(() -> confirmHeld(epoch), 0);
        break;
      case LOST:
        connected = false;
        // every lease of this client lives in this session; the core also catches a grant that
        // raced this signal
        context.allLeasesLost("the ZooKeeper session ended (Curator reported LOST)");
        for (Held h : held.values()) {
          if (held.remove(h.ownerId, h)) {
            deleteInBackground(
                h.path); // gone already if the server expired the session; else free it now
          }
        }
        break;
      default:
        break;
    }
  }

  /**
   * The server expires a session a session timeout after it last heard from the client. The client
   * notices silence after two thirds of the session timeout (ZooKeeper's read timeout), so when
   * SUSPENDED arrives the server may expire us in as little as a third of it.
   */
  private long inDoubtNanos() {
    long sessionMs = settings.sessionTimeout.toMillis();
    try {
      int negotiated = curator.getZookeeperClient().getZooKeeper().getSessionTimeout();
      if (negotiated > 0) {
        sessionMs = negotiated;
      }
    } catch (Exception e) {
      LOG.debug("no negotiated session timeout: {}", e.toString());
    }
    return TimeUnit.MILLISECONDS.toNanos(sessionMs / 3);
  }

  private void putInDoubt(long until, long epoch) {
    stateLock.lock();
    try {
      if (connectionEpoch.get() != epoch) {
        return;
      }
      for (Held h : held.values()) {
        context.leaseValidUntil(h.ownerId, until);
      }
    } finally {
      stateLock.unlock();
    }
  }

  /**
   * After a reconnect: each node must still be there and belong to this session before its lease
   * counts again.
   */
  private void confirmHeld(long epoch) {
    long session;
    try {
      session = curator.getZookeeperClient().getZooKeeper().getSessionId();
    } catch (Exception e) {
      LOG.debug("no session to confirm leases with: {}", e.toString());
      return;
    }
    for (Held h : held.values()) {
      Stat stat;
      try {
        stat = curator.checkExists().usingWatcher(h.ownWatcher).forPath(h.path);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (Exception e) {
        LOG.debug(
            "re-checking {} after reconnecting failed; it stays in doubt: {}", h, e.toString());
        continue;
      }
      if (stat == null || stat.getCzxid() != h.czxid || stat.getEphemeralOwner() != session) {
        if (held.remove(h.ownerId, h)) {
          context.leaseLost(
              h.ownerId,
              stat == null ? h.deletedReason() : LeaseLostException.Reason.SESSION_LOST,
              stat == null
                  ? "its node " + h.path + " was gone after reconnecting"
                  : "its node " + h.path + " belonged to an earlier session after reconnecting");
          if (stat != null && stat.getCzxid() == h.czxid) {
            deleteInBackground(h.path);
          }
        }
        continue;
      }
      stateLock.lock();
      try {
        if (connectionEpoch.get() == epoch && held.get(h.ownerId) == h) {
          context.leaseValidUntil(h.ownerId, Long.MAX_VALUE);
        }
      } finally {
        stateLock.unlock();
      }
    }
  }

  private void schedule(Runnable task, long delayMillis) {
    try {
      tasks.schedule(
          () -> {
            try {
              task.run();
            } catch (RuntimeException e) {
              LOG.warn("ZooKeeper connection handling failed", e);
            }
          },
          delayMillis,
          TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      // closing
    }
  }

  /**
   * Sets the watch on the node of each lease held for {@link #WATCH_DELAY} or longer (run by {@link
   * #tasks} every {@link #WATCH_DELAY}). Released leases are skipped: most locks are given back
   * before this, and then neither a request nor a watch event is spent on loss detection.
   */
  private void watchHeldNodes() {
    try {
      long now = System.nanoTime();
      long delay = WATCH_DELAY.toNanos();
      for (Held h = unwatched.peek();
          h != null && now - h.grantedAt >= delay;
          h = unwatched.peek()) {
        unwatched.poll();
        if (held.get(h.ownerId) == h) {
          watchOwnNode(h);
        }
      }
    } catch (RuntimeException e) {
      LOG.warn("watching the nodes of held ZooKeeper locks failed; retrying", e);
    }
  }

  /** Sets the watch on a lease's node without waiting; a node already gone is a lost lease. */
  private void watchOwnNode(Held h) {
    if (closed) {
      return;
    }
    try {
      curator
          .checkExists()
          .usingWatcher(h.ownWatcher)
          .inBackground(
              (c, e) -> {
                if (e.getResultCode() == KeeperException.Code.NONODE.intValue()
                    && held.remove(h.ownerId, h)) {
                  context.leaseLost(h.ownerId, h.deletedReason(), h.deletedDetail());
                } else if (e.getResultCode() != KeeperException.Code.OK.intValue()) {
                  // no watch: a reconnect re-checks (and watches) the node; until then a deletion
                  // is found by that check
                  LOG.debug(
                      "watching {} failed ({}); the node is re-checked after reconnecting",
                      h,
                      KeeperException.Code.get(e.getResultCode()));
                }
              })
          .forPath(h.path);
    } catch (Exception e) {
      LOG.debug(
          "watching {} failed; the node is re-checked after reconnecting: {}", h, e.toString());
    }
  }

  // ------------------------------------------------------------------ renew and release

  /**
   * Never called by the core for a session backend; answers by checking that each node is still
   * ours, all checks in flight at once.
   */
  @Override
  public List<Renewal> renew(List<BackendLease> leases) {
    AtomicReferenceArray<Renewal> out = new AtomicReferenceArray<>(leases.size());
    CountDownLatch done = new CountDownLatch(leases.size());
    for (int i = 0; i < leases.size(); i++) {
      int index = i;
      Held h = (Held) leases.get(i).state();
      try {
        curator
            .checkExists()
            .inBackground(
                (c, event) -> {
                  Stat stat = event.getStat();
                  int rc = event.getResultCode();
                  if (rc == KeeperException.Code.OK.intValue()
                      && stat != null
                      && stat.getCzxid() == h.czxid) {
                    out.set(index, Renewal.renewed());
                  } else if (rc == KeeperException.Code.OK.intValue()
                      || rc == KeeperException.Code.NONODE.intValue()) {
                    out.set(index, Renewal.lost("node " + h.path + " is gone"));
                  } else {
                    out.set(
                        index,
                        Renewal.failed(
                            KeeperException.create(KeeperException.Code.get(rc), h.path)));
                  }
                  done.countDown();
                })
            .forPath(h.path);
      } catch (Exception e) {
        out.set(index, Renewal.failed(e));
        done.countDown();
      }
    }
    try {
      done.await(callTimeoutMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    List<Renewal> result = new ArrayList<>(leases.size());
    for (int i = 0; i < leases.size(); i++) {
      Renewal r = out.get(i);
      result.add(
          r != null
              ? r
              : Renewal.failed(
                  new BackendUnavailableException(
                      "no answer from ZooKeeper at " + settings.hosts)));
    }
    return result;
  }

  /**
   * The head is the lowest child of the lock's parent node: the {@link NodeNames#HOLD} node if
   * there is one, else the holder's node, whose czxid is the holder's token and whose data names
   * the holder's owner id. A head without an expiry lives as long as its session, so no remaining
   * lease is reported. A head with one is held until the leader's clock passes it and free after;
   * telling which takes a write to this client's scratch node ({@link #leaderNow()}), the only
   * write a state read makes, and only for such a head. A hold reports no token and no holder: no
   * lease holds it.
   */
  @Override
  public LockState inspect(String name) {
    String parent = "/" + NodeNames.encode(name);
    try {
      for (int round = 0; round < 3; round++) {
        List<String> children;
        try {
          children = new ArrayList<>(curator.getChildren().forPath(parent));
        } catch (KeeperException.NoNodeException e) {
          return LockState.free();
        }
        if (children.isEmpty()) {
          return LockState.free();
        }
        children.sort(NodeNames.BY_SEQUENCE);
        String head = children.get(0);
        Stat stat = new Stat();
        byte[] bytes;
        try {
          bytes = curator.getData().storingStatIn(stat).forPath(parent + "/" + head);
        } catch (KeeperException.NoNodeException e) {
          continue; // the holder released between the two reads: read the children again
        }
        NodeData data = NodeData.parse(bytes);
        boolean hold = NodeNames.HOLD.equals(head);
        LockState held =
            hold ? LockState.held() : LockState.held().withFencingToken(stat.getCzxid());
        if (!hold && !data.owner.isEmpty()) {
          held = held.withHolder(data.owner);
        }
        if (!data.expires()) {
          return held;
        }
        long left = data.expiresAt(stat) - leaderNow();
        return left <= 0 ? LockState.free() : held.withRemaining(Duration.ofMillis(left));
      }
      return LockState.held(); // the lock changed hands on every read: held, by whom is not settled
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BackendUnavailableException(
          "interrupted while reading lock '" + name + "' on ZooKeeper at " + settings.hosts, e);
    } catch (LockException e) {
      throw e;
    } catch (Exception e) {
      throw new BackendUnavailableException(
          "could not read lock '" + name + "' on ZooKeeper at " + settings.hosts + ": " + e, e);
    }
  }

  /**
   * The ZooKeeper leader's clock now, in epoch milliseconds: the mtime of a write to this client's
   * ephemeral scratch node (created by the first call, and again after a new session). The leader
   * stamps every write it proposes with its own wall clock, so this is comparable with the mtime of
   * any head node, whichever server each client talks to.
   */
  long leaderNow() throws Exception {
    checkOpen();
    byte[] none = new byte[0];
    try {
      return curator.setData().forPath(clockPath, none).getMtime();
    } catch (KeeperException.NoNodeException e) {
      Stat stat = new Stat();
      try {
        curator
            .create()
            .storingStatIn(stat)
            .creatingParentContainersIfNeeded()
            .withMode(CreateMode.EPHEMERAL)
            .forPath(clockPath, none);
        return stat.getMtime();
      } catch (KeeperException.NodeExistsException raced) {
        return curator
            .setData()
            .forPath(clockPath, none)
            .getMtime(); // another thread of this client created it
      }
    }
  }

  /**
   * Deletes a head node found expired, only if it is still as it was read: an extend (a write to
   * it) that reached the leader after that read makes this fail, so it is never undone.
   *
   * @param head the node's path
   * @param read its stat, from the read that showed it expired
   * @return whether it was deleted; false if it changed or went meanwhile
   */
  boolean deleteExpiredHead(String head, Stat read) throws Exception {
    try {
      curator.delete().withVersion(read.getVersion()).forPath(head);
      return true;
    } catch (KeeperException.BadVersionException e) {
      LOG.debug("{} changed since it was read (extended): reading it again", head);
      return false;
    } catch (KeeperException.NoNodeException e) {
      return false; // released or deleted by someone else meanwhile
    }
  }

  private void checkOpen() {
    if (closed) {
      throw new LockException("the ZooKeeper client for " + settings.shownUri + " is closed");
    }
  }

  /** Milliseconds, rounded up: a lease is never made shorter than asked. */
  private static long ceilMillis(Duration d) {
    long ms = d.toMillis();
    return Math.max(1, d.minusMillis(ms).isZero() ? ms : ms + 1);
  }

  // ------------------------------------------------------------------ lease control

  /**
   * Expiries on the server are kept for locks only: a waiter deletes an expired head, and only a
   * lock's first waiter reads its head's data. For a permit or side every waiter would have to read
   * and judge the expiry of each node in its way, so with {@code autoRenew(false)} the client ends
   * such a lease at its expiry itself, and the server when the session ends.
   */
  private void requireLock(BackendLease lease, String method) {
    if (!lease.claim().isExclusive()) {
      throw new UnsupportedOperationException(
          this
              + " implements "
              + method
              + " for locks only, not for the "
              + lease.claim()
              + " lease on "
              + Claim.noun(lease.claim().kind())
              + " '"
              + lease.name()
              + "'");
    }
  }

  /**
   * Writes "expires {@code newLease} after this write" into our own node: a setData on its path,
   * which holds Curator's random protection id and our owner id, so it succeeds only while the node
   * is still ours. A waiter's delete of an expired node is versioned by what it read, so whichever
   * of the two the leader orders first wins: an extend that lands first makes the delete fail, a
   * delete that lands first makes this answer false.
   */
  @Override
  public boolean extend(BackendLease lease, Duration newLease) {
    requireLock(lease, "extend");
    Held h = (Held) lease.state();
    checkOpen();
    h.expiring = true; // before the write: a waiter's delete racing it is the lease running out
    try {
      Stat stat =
          curator.setData().forPath(h.path, NodeData.expiring(h.ownerId, ceilMillis(newLease)));
      return stat.getCzxid() == h.czxid;
    } catch (KeeperException.NoNodeException e) {
      return false; // expired and deleted by a waiter, revoked, or gone with our session
    } catch (KeeperException.NoAuthException e) {
      throw new BackendUnavailableException(
          "ZooKeeper at " + settings.hosts + " refused to write " + h.path + " (NoAuth)", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BackendUnavailableException(
          "interrupted while extending lock '"
              + h.name
              + "' on ZooKeeper at "
              + settings.hosts
              + "; the old expiry may stand",
          e);
    } catch (Exception e) {
      throw new BackendUnavailableException(
          "could not extend lock '"
              + h.name
              + "' on ZooKeeper at "
              + settings.hosts
              + " within the `"
              + ZooKeeperSettings.CONNECTION_TIMEOUT
              + "` of "
              + Durations.format(settings.connectionTimeout)
              + "; the old expiry may stand: "
              + e,
          e);
    }
  }

  /**
   * One multi: create the persistent {@link NodeNames#HOLD} node ("expires {@code keep} after this
   * write") and delete our own node. If our node is gone, the multi fails as a whole and nothing is
   * held for us. A hold node left from before (it can only be there if something other than this
   * backend took the lock past it) is replaced in the same multi, by a versioned delete, once it
   * has expired or if it would end before ours; otherwise it stands and only our node goes.
   */
  @Override
  public boolean releaseAfter(BackendLease lease, Duration keep) {
    requireLock(lease, "releaseAfter");
    Held h = (Held) lease.state();
    held.remove(h.ownerId, h); // our own delete must not be reported as a loss
    checkOpen();
    String hold = ZKPaths.makePath(ZKPaths.getPathAndNode(h.path).getPath(), NodeNames.HOLD);
    long keepMillis = ceilMillis(keep);
    byte[] data = NodeData.expiring(h.ownerId, keepMillis);
    List<CuratorOp> ops = List.of();
    try {
      int staleVersion = -1; // the version of an old hold node to replace; -1: none
      for (int round = 0; round < ROUNDS; round++) {
        ops = new ArrayList<>(3);
        if (staleVersion >= 0) {
          ops.add(curator.transactionOp().delete().withVersion(staleVersion).forPath(hold));
        }
        ops.add(
            curator.transactionOp().create().withMode(CreateMode.PERSISTENT).forPath(hold, data));
        // a write to our node before its delete: the waiter next in line, watching our node's data,
        // is told "changed"
        // and reads the children (finding the hold), where a delete alone would tell it the lock is
        // its own
        ops.add(curator.transactionOp().setData().forPath(h.path, data));
        ops.add(curator.transactionOp().delete().forPath(h.path));
        try {
          curator.transaction().forOperations(ops);
          return true;
        } catch (KeeperException e) {
          int failed = failedOp(e);
          boolean onOwnNode = failed >= ops.size() - 2;
          boolean onCreate = failed == ops.size() - 3;
          if (onOwnNode && e.code() == KeeperException.Code.NONODE) {
            return false; // not ours any more: expired and deleted by a waiter, or revoked
          }
          if (!onCreate || e.code() != KeeperException.Code.NODEEXISTS) {
            if (failed == 0 && staleVersion >= 0) {
              staleVersion = -1; // the old hold changed or went meanwhile: look again
              continue;
            }
            throw e;
          }
        }
        // a hold node stands already
        Stat stat = new Stat();
        NodeData existing;
        try {
          existing = NodeData.parse(curator.getData().storingStatIn(stat).forPath(hold));
        } catch (KeeperException.NoNodeException gone) {
          continue;
        }
        if (existing.owner.equals(h.ownerId) && curator.checkExists().forPath(h.path) == null) {
          return true; // ours: a retry after a connection loss found our own multi done
        }
        long now = leaderNow();
        if (!existing.expires() || existing.expiresAt(stat) >= now + keepMillis) {
          // it outlasts ours: keep it, and give up our node as long as it stands unchanged
          try {
            curator
                .transaction()
                .forOperations(
                    curator.transactionOp().check().withVersion(stat.getVersion()).forPath(hold),
                    curator.transactionOp().delete().forPath(h.path));
            return true;
          } catch (KeeperException e) {
            if (failedOp(e) == 1 && e.code() == KeeperException.Code.NONODE) {
              return false;
            }
            continue;
          }
        }
        staleVersion = stat.getVersion();
      }
      throw new BackendUnavailableException(
          "could not set the hold on lock '"
              + h.name
              + "' on ZooKeeper at "
              + settings.hosts
              + ": its hold node changed on every one of "
              + ROUNDS
              + " tries");
    } catch (InterruptedException e) {
      // the node must not outlive the interrupt: finish in the background (a multi that was done
      // already fails there as a whole, changing nothing), keep the flag
      holdInBackground(h, ops);
      Thread.currentThread().interrupt();
      return true;
    } catch (KeeperException.NoAuthException e) {
      throw new BackendUnavailableException(
          "ZooKeeper at "
              + settings.hosts
              + " refused to create "
              + hold
              + " or delete "
              + h.path
              + " (NoAuth)",
          e);
    } catch (LockException e) {
      throw e;
    } catch (Exception e) {
      throw new BackendUnavailableException(
          "could not release lock '"
              + h.name
              + "' with a hold of "
              + Durations.format(keep)
              + " on ZooKeeper at "
              + settings.hosts
              + "; its node stays until its expiry or session ends: "
              + e,
          e);
    }
  }

  private void holdInBackground(Held h, List<CuratorOp> ops) {
    if (closed || ops.isEmpty()) {
      return;
    }
    try {
      curator
          .transaction()
          .inBackground(
              (c, e) -> {
                if (e.getResultCode() != KeeperException.Code.OK.intValue()) {
                  LOG.debug(
                      "the hold on {} set in the background failed ({}); the node goes at its"
                          + " expiry or with the session",
                      h,
                      KeeperException.Code.get(e.getResultCode()));
                }
              })
          .forOperations(ops);
    } catch (Exception e) {
      LOG.debug("setting the hold on {} in the background failed: {}", h, e.toString());
    }
  }

  /**
   * @return the index of the operation a failed multi failed on, or -1 if it does not say
   */
  private static int failedOp(KeeperException e) {
    List<OpResult> results = e.getResults();
    if (results != null) {
      for (int i = 0; i < results.size(); i++) {
        if (results.get(i) instanceof OpResult.ErrorResult) {
          int err = ((OpResult.ErrorResult) results.get(i)).getErr();
          if (err != KeeperException.Code.OK.intValue()
              && err != KeeperException.Code.RUNTIMEINCONSISTENCY.intValue()) {
            return i;
          }
        }
      }
    }
    return -1;
  }

  /**
   * Deletes our node. Owner-checked by the path itself: it holds Curator's random protection id and
   * our owner id, so no other acquirer's node can have it.
   */
  @Override
  public boolean release(BackendLease lease) {
    Held h = (Held) lease.state();
    held.remove(h.ownerId, h); // our own delete must not be reported as a loss
    try {
      return deleteNode(h.path);
    } catch (KeeperException.NoAuthException e) {
      throw new BackendUnavailableException(
          "ZooKeeper at " + settings.hosts + " refused to delete " + h.path + " (NoAuth)", e);
    } catch (Exception e) {
      throw new BackendUnavailableException(
          "could not release "
              + h.what()
              + " on ZooKeeper at "
              + settings.hosts
              + "; it is deleted in the background once the connection returns, or when the session"
              + " ends: "
              + e,
          e);
    }
  }

  /**
   * @return whether the node existed
   * @throws Exception a connection failure: Curator keeps retrying the delete in the background
   */
  private boolean deleteNode(String path) throws Exception {
    if (closed) {
      throw new LockException("the ZooKeeper client for " + settings.shownUri + " is closed");
    }
    try {
      // on ZooKeeper's own handle: the caller waits for one request and nothing of Curator's retry
      // machinery, which is
      // only needed when the answer is lost
      curator
          .getZookeeperClient()
          .getZooKeeper()
          .delete(ZKPaths.makePath(settings.basePath, path), -1);
      return true;
    } catch (KeeperException.NoNodeException | KeeperException.SessionExpiredException e) {
      return false; // gone: deleted behind our back, or with the session
    } catch (KeeperException.ConnectionLossException
        | KeeperException.OperationTimeoutException
        | KeeperException.RequestTimeoutException
        | KeeperException.SessionMovedException e) {
      // the delete may have been done: Curator sends it again until it is, or the session ends; a
      // node already gone
      // then was most likely deleted by the first try
      try {
        curator.delete().guaranteed().forPath(path);
      } catch (KeeperException.NoNodeException gone) {
        LOG.debug("{} was gone when its delete was sent again after {}", path, e.code());
      }
      return true;
    } catch (InterruptedException e) {
      // an interrupt must not leave the node behind: finish in the background, keep the flag
      deleteInBackground(path);
      Thread.currentThread().interrupt();
      return true;
    }
  }

  /** Deletes a node without waiting; Curator retries after a connection loss. */
  private void deleteInBackground(String path) {
    if (closed) {
      return;
    }
    try {
      curator.delete().guaranteed().inBackground().forPath(path);
    } catch (Exception e) {
      LOG.debug("deleting {} in the background failed: {}", path, e.toString());
    }
  }

  private long callTimeoutMillis() {
    return settings.connectionTimeout.toMillis() + settings.sessionTimeout.toMillis();
  }

  // ------------------------------------------------------------------ closing

  @Override
  public void close() {
    shutDown(false);
  }

  /**
   * Vanishes as a crashed process would: the connection is dropped without closing the session, so
   * the server keeps our nodes until the session times out.
   */
  @Override
  public void abandon() {
    shutDown(true);
  }

  /**
   * Ends a client that never connected without waiting for ZooKeeper's threads; they end within a
   * second.
   */
  private void closeFailedConnect(int n) {
    if (closed) {
      return;
    }
    closed = true;
    Thread closer = new Thread(() -> release(true), "locksmith-zookeeper-close-" + n);
    closer.setDaemon(true);
    closer.start();
  }

  private void shutDown(boolean abandon) {
    if (closed) {
      return;
    }
    closed = true;
    release(abandon);
  }

  private void release(boolean abandon) {
    curator.getConnectionStateListenable().removeListener(listener);
    held.clear();
    unwatched.clear();
    tasks.shutdownNow();
    if (abandon) {
      try {
        ZooKeeper zk = curator.getZookeeperClient().getZooKeeper();
        // Curator must not see the expiry below: it would close the handle, sending closeSession
        // before the handle counts as closed, and the server would delete our nodes at once
        zk.register(event -> {});
        // marks the handle closed and drops its socket without sending closeSession
        zk.getTestable().injectSessionExpiration();
      } catch (Exception e) {
        LOG.debug(
            "could not drop the ZooKeeper connection without closing the session: {}",
            e.toString());
      }
    }
    try {
      curator.close();
    } catch (RuntimeException e) {
      LOG.warn("closing the ZooKeeper client for {} failed: {}", settings.hosts, e.toString());
    }
  }

  @Override
  public String toString() {
    return "zookeeper:" + settings.hosts + "/" + settings.basePath;
  }

  /**
   * Carries a refusal the core must see as it is ({@link Claim#permitsInUse}) out of a poll's
   * checks.
   */
  private static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;
    final transient IllegalStateException error;

    Refused(IllegalStateException error) {
      super(error.getMessage(), null, false, false);
      this.error = error;
    }
  }

  // ------------------------------------------------------------------ acquiring

  /**
   * One waiter: its node, the predecessor it watches, and whether a create may have left a node we
   * do not know. A lock's waiter is first in line or watches the node before it; a permit's or
   * side's waiter does as {@link ClaimQueue} decides.
   */
  private final class Attempt implements LockAttempt {
    private final String name;
    private final Claim claim;
    private final String ownerId;
    private final Runnable wake;
    private final String parent;

    /** Our node's name before Curator's protection prefix and ZooKeeper's sequence number. */
    private final String base;

    /** The resource as messages name it. */
    private final String what;

    private final byte[] data;
    private String nodePath;

    /**
     * What the create of {@link #nodePath} answered (create2): czxid and ephemeral owner; czxid 0
     * if unknown.
     */
    private Stat created = new Stat();

    private boolean createInFlight;
    private String watched;

    /**
     * When the head we watch expires, by this client's clock, as a {@link System#nanoTime()} value;
     * 0 if it has no expiry. Only tells when to ask the leader again, never that it passed.
     */
    private long headExpiresAt;

    private long lastCheckedAt;
    private volatile boolean predecessorChanged = true;

    /**
     * The head we were next behind at the end of the last check, seen there with a watch on its
     * data; null if we were not. Our node was the second child then: nodes made later sort after
     * ours, and the one node that can come before it, the hold, is made only by the head's own
     * release, which writes the head's data first (a change, not a delete, for the watch). So once
     * the head is deleted the lock is ours, without reading the children again.
     */
    private String nextBehind;

    /** The path of the last node whose deletion a watch of ours reported. */
    private volatile String lastDeleted;

    /**
     * Whether a poll of this attempt found the lock taken: waiters may have queued behind us
     * meanwhile.
     */
    private boolean waited;

    private final Watcher predecessorWatcher = this::predecessorEvent;
    private final Watcher ownWatcher = this::ownEvent;

    Attempt(String name, Claim claim, String ownerId, Runnable wake) {
      this.name = name;
      this.claim = claim;
      this.ownerId = ownerId;
      this.wake = wake;
      this.parent = NodeNames.parent(name, claim.kind());
      this.base =
          claim.isExclusive() ? NodeNames.waiterBase(ownerId) : NodeNames.claimBase(claim, ownerId);
      this.what = Claim.noun(claim.kind()) + " '" + name + "'";
      this.data = NodeData.plain(ownerId);
    }

    private void predecessorEvent(WatchedEvent event) {
      if (event.getType() == EventType.NodeDeleted) {
        lastDeleted = event.getPath();
      }
      predecessorChanged = true;
      wake.run();
    }

    /** Watches our own node once granted: a deleted node is a lost lease. */
    private void ownEvent(WatchedEvent event) {
      Held h = held.get(ownerId);
      if (h == null || event.getPath() == null || !event.getPath().endsWith(h.path)) {
        return; // released, lost already, or a connection event (the state listener handles those)
      }
      if (event.getType() == EventType.NodeDeleted) {
        if (held.remove(ownerId, h)) {
          context.leaseLost(ownerId, h.deletedReason(), h.deletedDetail());
        }
      } else if (event.getType() != EventType.None) {
        try {
          curator
              .checkExists()
              .usingWatcher(ownWatcher)
              .inBackground(
                  (c, e) -> {
                    if (e.getStat() == null
                        && e.getResultCode() == KeeperException.Code.NONODE.intValue()
                        && held.remove(ownerId, h)) {
                      context.leaseLost(ownerId, h.deletedReason(), h.deletedDetail());
                    }
                  })
              .forPath(h.path);
        } catch (Exception e) {
          LOG.debug("re-watching {} failed: {}", h, e.toString());
        }
      }
    }

    @Override
    public Poll poll() throws InterruptedException {
      if (closed) {
        throw new LockException("the ZooKeeper client for " + settings.shownUri + " is closed");
      }
      long now = System.nanoTime();
      long recheck = context.recheck().toNanos();
      if (watched != null && !predecessorChanged && now - lastCheckedAt < recheck / 2) {
        // woken by someone else's release; our predecessor is still there, unchanged
        if (headExpiresAt == 0) {
          return Poll.busy(context.recheck());
        }
        if (headExpiresAt - now > 0) {
          return Poll.busy(Duration.ofNanos(headExpiresAt - now));
        }
        // the head's expiry is due: ask the leader's clock
      }
      try {
        Poll p = check(now);
        if (!p.isGranted()) {
          waited = true;
        }
        return p;
      } catch (InterruptedException e) {
        Thread.interrupted();
        throw e;
      } catch (KeeperException.NoAuthException e) {
        throw new BackendUnavailableException(
            "ZooKeeper at "
                + settings.hosts
                + " refused access to "
                + what
                + " (NoAuth): its nodes belong to other credentials. Check the user and password of"
                + " the URI ("
                + settings.shownUri
                + ") and the `"
                + ZooKeeperSettings.ACL_OPTION
                + "` option",
            e);
      } catch (LockException e) {
        throw e;
      } catch (Refused e) {
        throw e.error;
      } catch (Exception e) {
        if (closed) {
          throw new LockException(
              "the ZooKeeper client for "
                  + settings.shownUri
                  + " was closed while acquiring "
                  + what,
              e);
        }
        if (Thread.interrupted()) {
          InterruptedException ie =
              new InterruptedException("interrupted while acquiring " + what + " on ZooKeeper");
          ie.initCause(e);
          throw ie;
        }
        throw new BackendUnavailableException(
            "could not acquire "
                + what
                + " on ZooKeeper at "
                + settings.hosts
                + " within the `"
                + ZooKeeperSettings.CONNECTION_TIMEOUT
                + "` of "
                + Durations.format(settings.connectionTimeout)
                + ": "
                + e,
            e);
      }
    }

    private Poll check(long now) throws Exception {
      lastCheckedAt = now;
      predecessorChanged = false; // before reading, so a change during the read still counts
      watched = null;
      headExpiresAt = 0;
      String head = nextBehind;
      nextBehind = null;
      String deleted = lastDeleted;
      if (head != null && nodePath != null && deleted != null && deleted.endsWith(head)) {
        handOffsUnread.incrementAndGet();
        return grant(); // the head we were next behind is gone: a hand-off, with one read fewer
      }
      List<String> pipelined = null;
      if (nodePath == null) {
        if (claim.isExclusive()) {
          pipelined = createCounting(); // null: others are queued, read them below
        } else {
          pipelined =
              createAndReadChildren(); // null: the read behind the create failed, read again below
        }
      }
      boolean behindCreate = pipelined != null;
      boolean childrenWatched = false;
      String mine = ZKPaths.getNodeFromPath(nodePath);
      for (int round = 1; ; round++) {
        List<String> children = pipelined;
        pipelined = null;
        if (children == null) {
          try {
            children = curator.getChildren().forPath(parent);
          } catch (KeeperException.NoNodeException e) {
            children = List.of();
          }
        }
        children = new ArrayList<>(children);
        children.sort(NodeNames.BY_SEQUENCE);
        int index = children.indexOf(mine);
        if (index < 0 && behindCreate) {
          // the read behind the create did not see our node (it was served before it: the lock's
          // parent node had to
          // be made first, or Curator sent the create again after a connection loss): read again,
          // now
          behindCreate = false;
          childrenReadAgain.incrementAndGet();
          round = 0;
          continue;
        }
        behindCreate = false;
        if (index > 0 && claim.isExclusive()) {
          index = dropLostCreates(children, index);
        }
        if (index < 0) {
          // our node is gone (its session ended, or it was deleted): queue again at the back
          LOG.debug("node {} of {} vanished while waiting; queueing again", nodePath, what);
          nodePath = null;
          return Poll.busy(Duration.ZERO);
        }
        if (!claim.isExclusive()) {
          ClaimQueue.Verdict verdict = ClaimQueue.judge(claim, children, index);
          switch (verdict.action) {
            case GRANT:
              return grant();
            case PERMITS_IN_USE:
              String refused = nodePath;
              nodePath = null;
              deleteQuietly(refused);
              throw new Refused(Claim.permitsInUse(name, claim.permits(), verdict.permitsInUse));
            case WAIT_FOR_CHILDREN:
              if (childrenWatched) {
                watched = parent;
                return Poll.busy(context.recheck());
              }
              // any holder's release may free a permit: read again with a watch on the children,
              // and judge that read
              childrenWatched = true;
              try {
                pipelined = curator.getChildren().usingWatcher(predecessorWatcher).forPath(parent);
              } catch (KeeperException.NoNodeException e) {
                pipelined = List.of();
              }
              continue;
            default:
              if (curator
                      .checkExists()
                      .usingWatcher(predecessorWatcher)
                      .forPath(parent + "/" + verdict.node)
                  != null) {
                watched = parent + "/" + verdict.node;
                return Poll.busy(context.recheck());
              }
              if (round >= ROUNDS) {
                return Poll.busy(Duration.ZERO);
              }
              continue; // it went away between the two reads: judge a new read
          }
        }
        if (index == 0) {
          return grant();
        }
        String predecessor = parent + "/" + children.get(index - 1);
        if (index > 1) {
          Stat stat = curator.checkExists().usingWatcher(predecessorWatcher).forPath(predecessor);
          if (stat == null) {
            return Poll.busy(Duration.ZERO); // it went away between the two reads: look again now
          }
          watched = predecessor;
          return Poll.busy(context.recheck());
        }
        Poll busy = behindHead(predecessor);
        if (busy != null) {
          return busy;
        }
        if (round == ROUNDS) {
          return Poll.busy(Duration.ZERO);
        }
        // the head went away, or we deleted it: read the children again now
      }
    }

    /**
     * Creates our node and reads the lock's children in one round trip of latency: the read is sent
     * right behind the create, without waiting for its answer. ZooKeeper serves one session's
     * requests in the order they were sent (a read waits behind the session's pending writes), so
     * the read sees our new node, and the grant of an uncontended lock costs what the create alone
     * costs. Where the read was served first (the parent node did not exist yet, so Curator made it
     * and sent the create again; or a retry after a connection loss), our node is not in it, and
     * {@link #check} reads again: only a read that contains our node decides anything, so a read
     * from before the create can delay a grant but never give one.
     *
     * @return the children the read behind the create saw, or null if it failed (then {@link
     *     #check} reads again)
     */
    private List<String> createAndReadChildren() throws Exception {
      createInFlight = true;
      CompletableFuture<CuratorEvent> create = new CompletableFuture<>();
      // create2: the answer carries the node's czxid and ephemeral owner, so the grant needs no
      // read of its own. A
      // node found again by protected mode after a connection loss may come back without them
      // (czxid 0); the grant
      // then reads them.
      curator
          .create()
          .creatingParentContainersIfNeeded()
          .withProtection()
          .withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
          .inBackground((c, e) -> create.complete(e))
          .forPath(parent + "/" + base, data);
      // The read goes out behind the create and waits in the foreground: its answer comes after the
      // create's, and
      // wakes this thread straight from ZooKeeper's I/O thread, one thread hop fewer than a
      // background answer; the
      // create's answer has reached its callback by then, or is about to.
      List<String> children;
      try {
        children = curator.getChildren().forPath(parent);
      } catch (InterruptedException e) {
        throw e; // the create stays in flight: abandon() finds its node by our owner id
      } catch (Exception e) {
        LOG.debug(
            "the children read behind the create of {} failed; reading again: {}",
            what,
            e.toString());
        childrenReadAgain.incrementAndGet();
        children =
            null; // no parent node yet (NoNode), or a connection problem: read again once the
        // create is done
      }
      CuratorEvent made = await(create);
      if (made.getResultCode() != KeeperException.Code.OK.intValue()) {
        throw KeeperException.create(KeeperException.Code.get(made.getResultCode()), parent);
      }
      // protected mode's recovery answers with the node's name alone, a plain create with its path:
      // take the name
      nodePath = ZKPaths.makePath(parent, ZKPaths.getNodeFromPath(made.getName()));
      created = made.getStat() != null ? made.getStat() : new Stat();
      createInFlight = false;
      return children;
    }

    /**
     * Creates our node of a lock and, in the same transaction, writes the lock's node (no data),
     * whose stat in the answer counts its children once our node is among them. One child is ours
     * alone: the lock is ours without a read, so an uncontended acquire + release sends two
     * requests, create and delete, as the raw floor does (a create and a children read are three
     * with the release). The transaction has one zxid, so the write's mzxid is our node's czxid,
     * the token; the ephemeral owner is the session of the handle it was sent on.
     *
     * <p>Sent on ZooKeeper's own handle: Curator would send a transaction again after a connection
     * loss and could leave a second node. Our node is named as Curator's protected mode names one
     * (a random id, then our owner id), so a create whose answer was lost is found by our owner id
     * once the connection is back ({@link #findLostCreate}), and {@link #abandon} finds it the same
     * way. Where the lock's node does not exist yet, or the session ended, the create goes through
     * Curator ({@link #createAndReadChildren}), which makes the parents and waits for a new
     * session.
     *
     * @return our node alone, as the children to judge; null if others are there, to be read
     */
    private List<String> createCounting() throws Exception {
      ZooKeeper zk = curator.getZookeeperClient().getZooKeeper();
      long session = zk.getSessionId();
      String lockNode = ZKPaths.makePath(settings.basePath, parent);
      ThreadLocalRandom random = ThreadLocalRandom.current();
      String node = PROTECTION_PREFIX + new UUID(random.nextLong(), random.nextLong()) + "-" + base;
      List<Op> ops =
          List.of(
              Op.create(
                  ZKPaths.makePath(lockNode, node),
                  data,
                  settings.acl.acls(),
                  CreateMode.EPHEMERAL_SEQUENTIAL),
              Op.setData(lockNode, NO_DATA, -1));
      createInFlight = true;
      List<OpResult> results;
      try {
        results = zk.multi(ops);
      } catch (KeeperException.NoNodeException | KeeperException.SessionExpiredException e) {
        // no lock node yet (or no namespace): nothing was made; Curator makes the parents. An ended
        // session: nothing
        // was made either; Curator waits for the next one.
        return createAndReadChildren();
      } catch (KeeperException.ConnectionLossException
          | KeeperException.OperationTimeoutException
          | KeeperException.RequestTimeoutException
          | KeeperException.SessionMovedException e) {
        return findLostCreate(e);
      } catch (KeeperException e) {
        createInFlight = false; // refused as a whole (NoAuth, ...): nothing was made
        throw e;
      }
      createInFlight = false;
      String made = ((OpResult.CreateResult) results.get(0)).getPath();
      Stat lock = ((OpResult.SetDataResult) results.get(1)).getStat();
      nodePath = ZKPaths.makePath(parent, ZKPaths.getNodeFromPath(made));
      Stat stat = new Stat();
      stat.setCzxid(lock.getMzxid());
      stat.setEphemeralOwner(session);
      created = stat;
      return lock.getNumChildren() == 1 ? List.of(ZKPaths.getNodeFromPath(made)) : null;
    }

    /**
     * A node ahead of ours with our owner id in its name is ours too: a create whose answer was
     * lost, not found by {@link #findLostCreate}, and made after all. It must not stand before us
     * until the session ends: deleted, in the background, and left out of the children judged.
     *
     * @return our node's index among the children left
     */
    private int dropLostCreates(List<String> children, int index) {
      for (int i = index - 1; i >= 0; i--) {
        if (NodeNames.hasBase(children.get(i), base)) {
          LOG.debug(
              "deleting {} of {}: a create of ours whose answer was lost", children.get(i), what);
          deleteInBackground(parent + "/" + children.remove(i));
          index--;
        }
      }
      return index;
    }

    /**
     * The counting create's answer was lost: it may have been made. Reads the children through
     * Curator, which waits for the connection up to the connection timeout, and takes our node if
     * it is there (the grant reads its stat); otherwise creates through Curator.
     */
    private List<String> findLostCreate(KeeperException cause) throws Exception {
      LOG.debug(
          "the create of a node for {} got no answer ({}); looking for it by our owner id",
          what,
          cause.code());
      List<String> children;
      try {
        children = curator.getChildren().forPath(parent);
      } catch (KeeperException.NoNodeException e) {
        children = List.of();
      }
      for (String child : children) {
        if (NodeNames.hasBase(child, base)) {
          nodePath = ZKPaths.makePath(parent, child);
          created = new Stat();
          createInFlight = false;
          return children;
        }
      }
      return createAndReadChildren();
    }

    /**
     * Waits for a background call's answer; Curator answers every one, with an error once its
     * retries are spent.
     */
    private <T> T await(CompletableFuture<T> answer) throws Exception {
      try {
        return answer.get(callTimeoutMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        throw new BackendUnavailableException(
            "no answer from ZooKeeper at "
                + settings.hosts
                + " for "
                + what
                + " within "
                + callTimeoutMillis()
                + " ms",
            e);
      } catch (ExecutionException e) {
        throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
      }
    }

    /**
     * We are first in line behind {@code head}: the holder's node or the hold after a release. The
     * read that sets the watch also returns the head's data, so a head without an expiry costs
     * nothing more than the {@code exists} any other waiter sends. A head with an expiry costs one
     * write more ({@link #leaderNow()}) to learn the leader's time; once it has passed the head is
     * deleted, versioned by what we read, so a concurrent extend wins. The watch stays either way:
     * an extend changes the data, a release deletes the node, and both wake us.
     *
     * @return busy while the head stands; null once it is gone, so the caller reads again
     */
    private Poll behindHead(String head) throws Exception {
      Stat stat = new Stat();
      byte[] bytes;
      try {
        bytes =
            curator.getData().storingStatIn(stat).usingWatcher(predecessorWatcher).forPath(head);
      } catch (KeeperException.NoNodeException e) {
        return null;
      }
      NodeData data = NodeData.parse(bytes);
      if (!data.expires()) {
        watched = head;
        nextBehind = head;
        return Poll.busy(context.recheck());
      }
      long checkedAt = System.nanoTime();
      long left = data.expiresAt(stat) - leaderNow();
      if (left > 0) {
        watched = head;
        headExpiresAt = checkedAt + TimeUnit.MILLISECONDS.toNanos(left);
        if (headExpiresAt == 0) {
          headExpiresAt = 1;
        }
        nextBehind = head;
        return Poll.busy(Duration.ofMillis(left));
      }
      if (deleteExpiredHead(head, stat)) {
        LOG.debug(
            "deleted {} of lock '{}': it expired {} ms ago by the ZooKeeper leader's clock",
            head,
            name,
            -left);
      }
      return null;
    }

    /**
     * Our node is the lowest child. The czxid and ephemeral owner come from the create. The watch
     * on our node (a deleted node is a lost lease) is left to {@link #watchHeldNodes}, which sets
     * it once the lease has been held for {@link #WATCH_DELAY}: a watch fires on our own delete as
     * well, and its event costs client and server as much as a request, so a lock released sooner
     * never pays for one. A deletion before the watch is set is found by the exists that sets it.
     */
    private Poll grant() throws Exception {
      long session = curator.getZookeeperClient().getZooKeeper().getSessionId();
      Stat stat = created;
      boolean watchSet = false;
      if (stat.getCzxid() == 0) {
        stat = curator.checkExists().usingWatcher(ownWatcher).forPath(nodePath);
        if (stat == null) {
          nodePath = null;
          return Poll.busy(Duration.ZERO);
        }
        watchSet = true;
      }
      if (stat.getEphemeralOwner() != session) {
        // made by a session that has since ended (Curator moved to a new one): it is about to
        // vanish
        deleteInBackground(nodePath);
        nodePath = null;
        return Poll.busy(Duration.ZERO);
      }
      long token = stat.getCzxid();
      if (!claim.isExclusive()) {
        token = fence();
        if (token == 0) {
          nodePath = null; // our node is gone: queue again at the back
          return Poll.busy(Duration.ZERO);
        }
      }
      Held h =
          new Held(
              name,
              claim.kind(),
              ownerId,
              nodePath,
              token,
              stat.getCzxid(),
              ownWatcher,
              System.nanoTime());
      held.put(ownerId, h);
      if (!connected || closed) {
        held.remove(ownerId, h);
        return Poll.busy(
            Duration.ofMillis(50)); // the connection is in doubt: not a grant we can vouch for
      }
      if (!watchSet) {
        unwatched.add(h);
      }
      if (waited && claim.isExclusive()) {
        announceHead();
      }
      return Poll.grantedForSession(h.token, h);
    }

    /**
     * Tells a waiter that queued behind us while we waited, and watches our node from further back,
     * that we are the head now: a write of our node's unchanged data, in the background, which its
     * watch reports as a change. It reads the children then, while we hold, finds itself next
     * behind us, and is granted on our delete without a read ({@link #nextBehind}): the read comes
     * off the hand-off's path. Versioned by the node's first version, so an extend sent meanwhile
     * is never overwritten. A lock granted on its first poll needs none: any waiter came after us
     * and read us as the head.
     */
    private void announceHead() {
      try {
        curator.setData().withVersion(0).inBackground((c, e) -> {}).forPath(nodePath, data);
      } catch (Exception e) {
        LOG.debug(
            "telling the waiters behind {} that it holds failed; they read the children on its"
                + " release: {}",
            nodePath,
            e.toString());
      }
    }

    /**
     * The token of a permit or side: one multi that checks our node is still there and writes the
     * resource's parent node. Its zxid (the write's mzxid) is the token: the leader orders every
     * transaction, so each grant's token is above every earlier grant's of the resource, whatever
     * order the nodes were created in, and never restarts when the parent node is made again. A
     * node deleted before the multi (session expired, revoked) fails it as a whole, so a grant
     * whose token is above a later holder's cannot happen.
     *
     * @return the token, or 0 if our node is gone
     */
    private long fence() throws Exception {
      try {
        List<CuratorTransactionResult> results =
            curator
                .transaction()
                .forOperations(
                    curator.transactionOp().check().withVersion(-1).forPath(nodePath),
                    curator.transactionOp().setData().forPath(parent, new byte[0]));
        return results.get(1).getResultStat().getMzxid();
      } catch (KeeperException.NoNodeException e) {
        if (failedOp(e) == 0) {
          return 0;
        }
        throw e;
      }
    }

    /** Deletes our node (or a node a create may have left) so the next waiter is not held up. */
    @Override
    public void abandon() {
      String path = nodePath;
      nodePath = null;
      if (path != null) {
        Held h = held.get(ownerId);
        if (h != null && h.path.equals(path)) {
          held.remove(ownerId, h);
        }
        deleteQuietly(path);
      } else if (createInFlight && !connected) {
        // cut off: look for it once the connection is back, without holding up the caller, whose
        // acquire must end within its timeout (Curator would retry a blocking read until it
        // connects)
        findAndDeleteInBackground();
      } else if (createInFlight) {
        // the create may have succeeded without our hearing of it: find the node by our owner id
        try {
          for (String child : curator.getChildren().forPath(parent)) {
            if (NodeNames.hasBase(child, base)) {
              deleteQuietly(parent + "/" + child);
            }
          }
        } catch (KeeperException.NoNodeException e) {
          // nothing was created
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (Exception e) {
          LOG.warn(
              "could not look for a node of an abandoned attempt on {}; it goes with the session:"
                  + " {}",
              what,
              e.toString());
        }
      }
    }

    private void findAndDeleteInBackground() {
      if (closed) {
        return;
      }
      try {
        curator
            .getChildren()
            .inBackground(
                (client, event) -> {
                  if (event.getChildren() == null) {
                    return; // no lock directory: nothing was created
                  }
                  for (String child : event.getChildren()) {
                    if (NodeNames.hasBase(child, base)) {
                      deleteInBackground(parent + "/" + child);
                    }
                  }
                })
            .forPath(parent);
      } catch (Exception e) {
        LOG.debug(
            "could not look for a node of an abandoned attempt on {}; it goes with the session: {}",
            what,
            e.toString());
      }
    }

    private void deleteQuietly(String path) {
      if (!connected) {
        deleteInBackground(path);
        return;
      }
      try {
        deleteNode(path);
      } catch (Exception e) {
        LOG.debug(
            "deleting {} of an abandoned attempt failed; Curator retries it: {}",
            path,
            e.toString());
      }
    }
  }
}
