package dev.locksmith.zookeeper;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Guarantees.Promise;
import dev.locksmith.HeldLock;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockException;
import dev.locksmith.LockState;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.NamePage;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.retry.RetryUntilElapsed;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
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
  static final int ROUNDS = 4;

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
              Feature.BREAK_GLASS,
              Feature.LISTING,
              Feature.SEMAPHORES,
              Feature.READ_WRITE_LOCKS,
              Feature.ATOMIC_LOCK_SETS)
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

  final CuratorFramework curator;
  final ZooKeeperSettings settings;
  final BackendContext context;

  /** Leases granted and not yet released or lost, by owner id. */
  final Map<String, Held> held = new ConcurrentHashMap<>();

  /**
   * Granted leases whose node is not watched yet, about in grant order; see {@link
   * ZooKeeperSessionWatch#watchHeldNodes}.
   */
  final Queue<Held> unwatched = new ConcurrentLinkedQueue<>();

  final ScheduledExecutorService tasks;

  /** Follows the connection state and watches the nodes of held leases. */
  private final ZooKeeperSessionWatch sessionWatch = new ZooKeeperSessionWatch(this);

  private final ZooKeeperLeaseControl leaseControl = new ZooKeeperLeaseControl(this);

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

  volatile boolean connected = true;
  volatile boolean closed;

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
                + ConnectDiagnosis.diagnose(
                    settings.hosts, ConnectDiagnosis.diagnosisBudget(settings.connectionTimeout)));
      }
      backend.probe();
      curator.getConnectionStateListenable().addListener(backend.sessionWatch);
      long delay = WATCH_DELAY.toNanos();
      tasks.scheduleWithFixedDelay(
          backend.sessionWatch::watchHeldNodes, delay, delay, TimeUnit.NANOSECONDS);
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
    return new ZooKeeperAttempt(this, name, Claim.exclusive(), ownerId, wake);
  }

  /**
   * A permit of a semaphore or a side of a read-write lock: a waiter's node under the resource's
   * own parent ({@link NodeNames#parent}), judged by {@link ClaimQueue}, held by the session like a
   * lock's node.
   */
  @Override
  public LockAttempt attempt(
      String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
    return new ZooKeeperAttempt(this, name, claim, ownerId, wake);
  }

  /**
   * The largest multi a set is taken in, in bytes of its paths and data: three quarters of
   * ZooKeeper's default request limit ({@code jute.maxbuffer}, 1 MB), so that 64 names of the
   * longest kind fit (about 10 KB each: a name of 255 characters that all encode to 4 bytes, each
   * written as {@code %XX}, in three paths), and about 2,000 names of 20 characters. A larger set
   * is taken the core's way, name by name ({@link Feature#ATOMIC_LOCK_SETS} allows it above 64).
   */
  static final int MAX_SET_BYTES = 768 * 1024;

  /**
   * Takes a set of locks in one multi, all or none: for each name it deletes the lock's node (which
   * ZooKeeper refuses while the node has a child: a holder, a waiter or a hold), makes it again and
   * makes our node under it; one write of a lock node last gives the transaction's zxid, every
   * node's czxid and so every name's token. A refused delete fails the whole multi, so a busy set
   * leaves nothing behind, not even for a moment: nobody sees our nodes before the set is granted.
   * A lock node that does not exist yet is made without the delete (a second try, told by the
   * failing operation). Answers null for a set whose multi would pass {@link #MAX_SET_BYTES} (never
   * one of 64 names or fewer).
   *
   * @throws BackendUnavailableException if not connected within the connection timeout, or if the
   *     connection went into doubt as the grants were recorded (then every name is given back)
   */
  @Override
  public List<dev.locksmith.spi.Poll> acquireAll(
      List<String> names, List<String> ownerIds, Duration lease) throws InterruptedException {
    if (closed) {
      throw new LockException("the ZooKeeper client for " + settings.shownUri + " is closed");
    }
    int n = names.size();
    List<ZooKeeperAttempt> attempts = new ArrayList<>(n);
    List<String> lockNodes = new ArrayList<>(n);
    long bytes = 0;
    for (int i = 0; i < n; i++) {
      ZooKeeperAttempt a =
          new ZooKeeperAttempt(this, names.get(i), Claim.exclusive(), ownerIds.get(i), () -> {});
      attempts.add(a);
      String lockNode = a.lockNodeOnHandle();
      lockNodes.add(lockNode);
      bytes += 4L * lockNode.length() + a.newNodeName().length() + a.nodeData().length + 200;
      if (bytes > MAX_SET_BYTES) {
        return null;
      }
    }
    boolean[] exists = new boolean[n];
    java.util.Arrays.fill(exists, true);
    List<ACL> acls = settings.acl.acls();
    for (int round = 0; round < 2 * n + 2; round++) {
      ZooKeeper zk = connectedHandle(n);
      long session = zk.getSessionId();
      List<org.apache.zookeeper.Op> ops = new ArrayList<>(3 * n + 1);
      int[] nameOf = new int[3 * n + 1];
      int[] created = new int[n];
      for (int i = 0; i < n; i++) {
        String lockNode = lockNodes.get(i);
        if (exists[i]) {
          nameOf[ops.size()] = i;
          ops.add(org.apache.zookeeper.Op.delete(lockNode, -1));
        }
        nameOf[ops.size()] = i;
        ops.add(org.apache.zookeeper.Op.create(lockNode, new byte[0], acls, CreateMode.CONTAINER));
        created[i] = ops.size();
        nameOf[ops.size()] = i;
        ops.add(
            org.apache.zookeeper.Op.create(
                ZKPaths.makePath(lockNode, attempts.get(i).newNodeName()),
                attempts.get(i).nodeData(),
                acls,
                CreateMode.EPHEMERAL_SEQUENTIAL));
      }
      ops.add(org.apache.zookeeper.Op.setData(lockNodes.get(0), new byte[0], -1));
      List<org.apache.zookeeper.OpResult> results;
      try {
        results = zk.multi(ops);
      } catch (InterruptedException e) {
        // the multi went out and may be made although we stop waiting for its answer: nothing
        // may stay held by an interrupted caller, so our nodes are looked for and deleted (the
        // look itself is not interrupted: the flag was cleared by the exception)
        giveBackAfterLostMulti(attempts, "interrupted");
        throw e;
      } catch (KeeperException e) {
        List<org.apache.zookeeper.OpResult> answers = e.getResults();
        if (answers == null) {
          giveBackAfterLostMulti(attempts, e.code().toString());
          throw new BackendUnavailableException(
              "ZooKeeper at "
                  + settings.hosts
                  + " did not answer the multi taking a set of "
                  + n
                  + " locks ("
                  + e.code()
                  + "); whatever it made was given back",
              e);
        }
        int failed = -1;
        for (int j = 0; j < answers.size() && failed < 0; j++) {
          org.apache.zookeeper.OpResult r = answers.get(j);
          if (r instanceof org.apache.zookeeper.OpResult.ErrorResult) {
            int code = ((org.apache.zookeeper.OpResult.ErrorResult) r).getErr();
            if (code != KeeperException.Code.OK.intValue()
                && code != KeeperException.Code.RUNTIMEINCONSISTENCY.intValue()) {
              failed = j;
            }
          }
        }
        if (failed < 0 || failed >= ops.size() - 1) {
          throw new BackendUnavailableException(
              "ZooKeeper at " + settings.hosts + " refused a set of " + n + " locks: " + e, e);
        }
        int i = nameOf[failed];
        int type = ops.get(failed).getType();
        KeeperException.Code code = e.code();
        if (type == org.apache.zookeeper.ZooDefs.OpCode.delete) {
          if (code == KeeperException.Code.NOTEMPTY) {
            return List.of(); // held, waited for or on hold: busy, nothing made
          }
          if (code == KeeperException.Code.NONODE) {
            exists[i] = false; // no lock node yet: make it without the delete
            continue;
          }
        } else if (failed != created[i]) {
          if (code == KeeperException.Code.NODEEXISTS) {
            exists[i] = true; // made meanwhile by another
            continue;
          }
          if (code == KeeperException.Code.NONODE) {
            makeLockNode(attempts.get(i).parentNode());
            exists[i] = true;
            continue;
          }
        }
        throw new BackendUnavailableException(
            "ZooKeeper at "
                + settings.hosts
                + " refused a set of "
                + n
                + " locks at '"
                + names.get(i)
                + "': "
                + code,
            e);
      }
      long zxid =
          ((org.apache.zookeeper.OpResult.SetDataResult) results.get(results.size() - 1))
              .getStat()
              .getMzxid();
      List<dev.locksmith.spi.Poll> granted = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        String made =
            ((org.apache.zookeeper.OpResult.CreateResult) results.get(created[i])).getPath();
        dev.locksmith.spi.Poll p = attempts.get(i).grantMadeInSet(made, zxid, session);
        if (p.isGranted()) {
          granted.add(p);
        } else {
          // the connection went into doubt as we recorded the grants: give every name back
          for (int k = 0; k < n; k++) {
            String node =
                ((org.apache.zookeeper.OpResult.CreateResult) results.get(created[k])).getPath();
            held.remove(ownerIds.get(k));
            deleteInBackground(
                ZKPaths.makePath(attempts.get(k).parentNode(), ZKPaths.getNodeFromPath(node)));
          }
          throw new BackendUnavailableException(
              "the connection to ZooKeeper at "
                  + settings.hosts
                  + " went into doubt as a set of "
                  + n
                  + " locks was granted; every name was given back");
        }
      }
      return granted;
    }
    return List.of(); // lock nodes made and deleted by others on every try: busy, nothing made
  }

  /** ZooKeeper's handle once connected, waiting up to the connection timeout. */
  private ZooKeeper connectedHandle(int n) throws InterruptedException {
    try {
      if (connected || curator.getZookeeperClient().blockUntilConnectedOrTimedOut()) {
        return curator.getZookeeperClient().getZooKeeper();
      }
    } catch (InterruptedException e) {
      throw e;
    } catch (Exception e) {
      throw new BackendUnavailableException(
          "no connection to ZooKeeper at " + settings.hosts + " to take a set of " + n + " locks",
          e);
    }
    throw new BackendUnavailableException(
        "no connection to ZooKeeper at "
            + settings.hosts
            + " within "
            + settings.connectionTimeout.toMillis()
            + " ms to take a set of "
            + n
            + " locks");
  }

  /** Makes a lock node and the namespace above it, through Curator (which waits to connect). */
  private void makeLockNode(String parent) throws InterruptedException {
    try {
      curator.createContainers(parent);
    } catch (InterruptedException e) {
      throw e;
    } catch (Exception e) {
      throw new BackendUnavailableException(
          "could not make the node '" + parent + "' on ZooKeeper at " + settings.hosts + ": " + e,
          e);
    }
  }

  /**
   * A set's multi got no answer: it may have been made. Finds our nodes by their owner ids once the
   * connection is back (Curator waits up to the connection timeout) and deletes them; a session
   * that ended took them already.
   */
  private void giveBackAfterLostMulti(List<ZooKeeperAttempt> attempts, String cause)
      throws InterruptedException {
    for (ZooKeeperAttempt a : attempts) {
      String parent = a.parentNode();
      try {
        for (String child : curator.getChildren().forPath(parent)) {
          if (a.isOurs(child)) {
            deleteInBackground(ZKPaths.makePath(parent, child));
          }
        }
      } catch (KeeperException.NoNodeException e) {
        // no lock node: nothing of ours there
      } catch (InterruptedException e) {
        throw e;
      } catch (Exception e) {
        LOG.warn(
            "a set's multi got no answer ({}) and looking for its nodes failed: {}; they end with"
                + " the session",
            cause,
            e.toString());
        return;
      }
    }
  }

  // ------------------------------------------------------------------ renew and release

  /** Never called by the core for a session backend; see {@link ZooKeeperLeaseControl#renew}. */
  @Override
  public List<Renewal> renew(List<BackendLease> leases) {
    return leaseControl.renew(leases);
  }

  /**
   * The head is the lowest child of the lock's parent node: the {@link NodeNames#HOLD} node if
   * there is one, else the holder's node, whose czxid is the holder's token and whose data names
   * the holder's owner id. A head without an expiry lives as long as its session, so no remaining
   * lease is reported. A head with one is held until the leader's clock passes it and free after;
   * telling which takes a write to this client's scratch node ({@link #leaderNow()}), the only
   * write a state read makes, and only for such a head. A hold reports no token and no holder: no
   * lease holds it. A held state counts the callers waiting ({@link ClaimQueue#waiting}) from the
   * same read of the children: every node queued behind the head, never the hold node or a node
   * without a sequence number.
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
        held = held.withWaiting(ClaimQueue.waiting(false, children, List.of(head)));
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
   * A persistent recursive watch (ZooKeeper 3.6+) on the lock's parent node: every node made or
   * deleted under it (a grant, a release, a waiter, a holder's session ending) and every data
   * change calls {@code changed}. The ZooKeeper client sets it again after a reconnect; after a new
   * session (the old one expired, and its watches with it) this sets it again, and calls {@code
   * changed} since a change may have been missed.
   */
  @Override
  public dev.locksmith.spi.HolderWatch watchHolder(String name, Runnable changed) {
    String parent = "/" + NodeNames.encode(name);
    // closed: an event already on its way, or a removal the server has not made yet, calls nothing
    java.util.concurrent.atomic.AtomicBoolean closed =
        new java.util.concurrent.atomic.AtomicBoolean();
    Watcher watcher =
        event -> {
          if (!closed.get()) {
            changed.run();
          }
        };
    Runnable add =
        () -> {
          try {
            curator
                .watchers()
                .add()
                .withMode(org.apache.zookeeper.AddWatchMode.PERSISTENT_RECURSIVE)
                .usingWatcher(watcher)
                .forPath(parent);
          } catch (Exception e) {
            throw new BackendUnavailableException(
                "could not watch lock '" + name + "' on ZooKeeper at " + settings.hosts + ": " + e,
                e);
          }
        };
    org.apache.curator.framework.state.ConnectionStateListener again =
        (client, state) -> {
          if (closed.get()) {
            return;
          }
          if (state == org.apache.curator.framework.state.ConnectionState.RECONNECTED) {
            try {
              add.run(); // the same watcher on the same path: once, whatever the session
            } catch (RuntimeException e) {
              LOG.debug("watching lock '{}' again failed: {}", name, e.toString());
            }
          }
          changed.run();
        };
    curator.getConnectionStateListenable().addListener(again);
    try {
      add.run();
    } catch (RuntimeException e) {
      curator.getConnectionStateListenable().removeListener(again);
      throw e;
    }
    changed.run(); // in place: read once
    return dev.locksmith.spi.HolderWatch.of(
        true,
        () -> {
          closed.set(true);
          curator.getConnectionStateListenable().removeListener(again);
          try {
            // on the server too, so that it stops sending the events
            curator
                .watchers()
                .remove(watcher)
                .ofType(Watcher.WatcherType.Any)
                .quietly()
                .inBackground()
                .forPath(parent);
          } catch (Exception e) {
            LOG.debug("removing the watch of lock '{}' failed: {}", name, e.toString());
          }
        });
  }

  /**
   * Deletes the head node of the lock (the holder's, or the node that holds it after release): the
   * next waiter's node is head then, and its czxid, the next token, is higher. The holder's watch
   * sees its node gone, as for a revoked lock. Sequential names are never reused, so a node deleted
   * in between (the holder released) is not mistaken for another.
   */
  @Override
  public boolean breakLock(String name) {
    String parent = "/" + NodeNames.encode(name);
    try {
      List<String> children;
      try {
        children = new ArrayList<>(curator.getChildren().forPath(parent));
      } catch (KeeperException.NoNodeException e) {
        return false;
      }
      if (children.isEmpty()) {
        return false;
      }
      children.sort(NodeNames.BY_SEQUENCE);
      try {
        curator.delete().forPath(parent + "/" + children.get(0));
        return true;
      } catch (KeeperException.NoNodeException e) {
        return false; // the holder let go first
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BackendUnavailableException(
          "interrupted while breaking lock '" + name + "' on ZooKeeper at " + settings.hosts, e);
    } catch (LockException e) {
      throw e;
    } catch (Exception e) {
      throw new BackendUnavailableException(
          "could not break lock '" + name + "' on ZooKeeper at " + settings.hosts + ": " + e, e);
    }
  }

  /**
   * The namespace's children are the locks' nodes (named by their encoded names) and the nodes of
   * semaphores, read-write locks and clocks, whose names begin with '.', which an encoded name
   * never does. One read of the children per page; the names are sorted, and the cursor is the last
   * name of the page, encoded.
   */
  @Override
  public NamePage listNames(String prefix, String cursor, int limit) {
    return listChildren("/", "locks", prefix, cursor, limit);
  }

  /**
   * Semaphores and read-write locks are the children of {@link NodeNames#SEMAPHORES} and {@link
   * NodeNames#READ_WRITE_LOCKS} (see {@link NodeNames#parent}), listed as locks are. A parent node
   * stays for a while after its last node went (ZooKeeper removes empty containers in the
   * background), so a listed name may be free: {@link #inspectHolders} tells.
   */
  @Override
  public NamePage listNames(
      String prefix, String cursor, int limit, Guarantees.Primitive primitive) {
    switch (primitive) {
      case SEMAPHORE:
        return listChildren("/" + NodeNames.SEMAPHORES, "semaphores", prefix, cursor, limit);
      case READ_WRITE_LOCK:
        return listChildren(
            "/" + NodeNames.READ_WRITE_LOCKS, "read-write locks", prefix, cursor, limit);
      default:
        return listNames(prefix, cursor, limit);
    }
  }

  /**
   * One page of the names of a parent node's children: sorted, from after the cursor (the last name
   * of the previous page, encoded), without the nodes whose names begin with '.', which {@link
   * NodeNames#encode} never makes.
   *
   * @param parent the node whose children are the names
   * @param what what the names are, for messages
   */
  private NamePage listChildren(
      String parent, String what, String prefix, String cursor, int limit) {
    String after = null;
    if (cursor != null) {
      try {
        after = NodeNames.decode(cursor);
      } catch (RuntimeException e) {
        throw new IllegalArgumentException(
            "`cursor` was '" + cursor + "' but it is not one a listing returned", e);
      }
    }
    try {
      java.util.TreeSet<String> names = new java.util.TreeSet<>();
      for (String child : curator.getChildren().forPath(parent)) {
        if (child.startsWith(".")) {
          continue;
        }
        String name;
        try {
          name = NodeNames.decode(child);
        } catch (RuntimeException e) {
          continue; // a node of another program
        }
        if (name.startsWith(prefix) && (after == null || name.compareTo(after) > 0)) {
          names.add(name);
          if (names.size() > limit + 1) {
            names.pollLast();
          }
        }
      }
      List<String> page = new ArrayList<>(names);
      if (page.size() <= limit) {
        return NamePage.of(page, null);
      }
      page = page.subList(0, limit);
      return NamePage.of(page, NodeNames.encode(page.get(limit - 1)));
    } catch (KeeperException.NoNodeException e) {
      return NamePage.of(List.of(), null);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BackendUnavailableException(
          "interrupted while listing " + what + " on ZooKeeper at " + settings.hosts, e);
    } catch (LockException e) {
      throw e;
    } catch (Exception e) {
      throw new BackendUnavailableException(
          "could not list " + what + " on ZooKeeper at " + settings.hosts + ": " + e, e);
    }
  }

  /**
   * One read of the resource's children says which nodes the grant logic grants ({@link
   * ClaimQueue#granted}); queued waiters are never among them. Each of those is read for its stat
   * and data: a node whose mzxid is above its czxid has taken its grant, and the mzxid is its
   * holder's token (the fence writes it, see {@code ZooKeeperAttempt.fence()}); its data names the
   * holder's owner id. A node granted but not yet fenced, or gone since the children were read,
   * holds nothing yet, or no more. Permits and sides live as long as their session, so no remaining
   * lease is reported. Each holding counts the callers waiting ({@link ClaimQueue#waiting}) from
   * the same read of the children: the queued nodes that do not hold, a granted node that has not
   * taken its grant among them. Reads only: nothing is written, nothing renewed.
   */
  @Override
  public HeldLock inspectHolders(String name, Guarantees.Primitive primitive) {
    boolean semaphore = primitive == Guarantees.Primitive.SEMAPHORE;
    if (!semaphore && primitive != Guarantees.Primitive.READ_WRITE_LOCK) {
      throw new IllegalArgumentException(
          "`primitive` was " + primitive + " but it must be SEMAPHORE or READ_WRITE_LOCK");
    }
    String parent = NodeNames.parent(name, semaphore ? Claim.Kind.PERMIT : Claim.Kind.READ);
    String what = (semaphore ? "semaphore '" : "read-write lock '") + name + "'";
    try {
      List<String> children;
      try {
        children = new ArrayList<>(curator.getChildren().forPath(parent));
      } catch (KeeperException.NoNodeException e) {
        return null;
      }
      children.sort(NodeNames.BY_SEQUENCE);
      List<LockState> states = new ArrayList<>();
      List<String> notWaiting = new ArrayList<>();
      boolean write = false;
      for (String node : ClaimQueue.granted(semaphore, children)) {
        Stat stat = new Stat();
        byte[] bytes;
        try {
          bytes = curator.getData().storingStatIn(stat).forPath(parent + "/" + node);
        } catch (KeeperException.NoNodeException e) {
          notWaiting.add(node);
          continue; // released since the children were read
        }
        if (stat.getMzxid() == stat.getCzxid()) {
          continue; // granted by the queue, but its waiter has not taken the grant yet: it waits
        }
        notWaiting.add(node);
        LockState held = LockState.held().withFencingToken(stat.getMzxid());
        String owner = NodeData.parse(bytes).owner;
        if (!owner.isEmpty()) {
          held = held.withHolder(owner);
        }
        states.add(held);
        write |= !semaphore && !NodeNames.isReader(node);
      }
      if (states.isEmpty()) {
        return null;
      }
      int waiting = ClaimQueue.waiting(semaphore, children, notWaiting);
      states.replaceAll(state -> state.withWaiting(waiting));
      HeldLock.Kind kind =
          semaphore ? HeldLock.Kind.SEMAPHORE : write ? HeldLock.Kind.WRITE : HeldLock.Kind.READ;
      return HeldLock.of(name, kind, states);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BackendUnavailableException(
          "interrupted while reading " + what + " on ZooKeeper at " + settings.hosts, e);
    } catch (LockException e) {
      throw e;
    } catch (Exception e) {
      throw new BackendUnavailableException(
          "could not read " + what + " on ZooKeeper at " + settings.hosts + ": " + e, e);
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

  void checkOpen() {
    if (closed) {
      throw new LockException("the ZooKeeper client for " + settings.shownUri + " is closed");
    }
  }

  // ------------------------------------------------------------------ lease control

  /**
   * Writes "expires {@code newLease} after this write" into our own node, for locks only; see
   * {@link ZooKeeperLeaseControl#extend}.
   */
  @Override
  public boolean extend(BackendLease lease, Duration newLease) {
    return leaseControl.extend(lease, newLease);
  }

  /**
   * Replaces our node by a {@link NodeNames#HOLD} node that expires {@code keep} after its write,
   * in one multi, for locks only; see {@link ZooKeeperLeaseControl#releaseAfter}.
   */
  @Override
  public boolean releaseAfter(BackendLease lease, Duration keep) {
    return leaseControl.releaseAfter(lease, keep);
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
      throw releaseFailed(h, e);
    }
  }

  private BackendUnavailableException releaseFailed(Held h, Exception e) {
    return new BackendUnavailableException(
        "could not release "
            + h.what()
            + " on ZooKeeper at "
            + settings.hosts
            + "; it is deleted in the background once the connection returns, or when the session"
            + " ends: "
            + e,
        e);
  }

  /**
   * The locks of a set in one {@code multi} of deletes: one round trip instead of one per name.
   * ZooKeeper applies all or none, so a node already gone (a lease lost) fails the whole multi;
   * then, and after a connection problem, each lease is released on its own as {@link #release}
   * does, which tells which were still ours.
   */
  @Override
  public List<Boolean> releaseAll(List<BackendLease> leases) {
    boolean oneMulti = leases.size() > 1 && !closed;
    for (BackendLease lease : leases) {
      oneMulti &= lease.claim().isExclusive() && lease.state() instanceof Held;
    }
    if (!oneMulti) {
      return LockBackend.super.releaseAll(leases);
    }
    List<org.apache.zookeeper.Op> deletes = new ArrayList<>(leases.size());
    for (BackendLease lease : leases) {
      Held h = (Held) lease.state();
      held.remove(h.ownerId, h); // our own delete must not be reported as a loss
      deletes.add(org.apache.zookeeper.Op.delete(ZKPaths.makePath(settings.basePath, h.path), -1));
    }
    try {
      curator.getZookeeperClient().getZooKeeper().multi(deletes);
      List<Boolean> ours = new ArrayList<>(leases.size());
      leases.forEach(l -> ours.add(Boolean.TRUE));
      return ours;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // each release below finishes in the background
    } catch (KeeperException.ConnectionLossException
        | KeeperException.OperationTimeoutException
        | KeeperException.RequestTimeoutException
        | KeeperException.SessionMovedException e) {
      // the multi may have been applied: as deleteNode does for one node, Curator sends each
      // delete again until it is done or the session ends, and a node gone by then was most
      // likely deleted by the multi
      List<Boolean> ours = new ArrayList<>(leases.size());
      for (BackendLease lease : leases) {
        Held h = (Held) lease.state();
        try {
          curator.delete().guaranteed().forPath(h.path);
        } catch (KeeperException.NoNodeException gone) {
          LOG.debug("{} was gone when its delete was sent again after {}", h.path, e.code());
        } catch (Exception again) {
          throw releaseFailed(h, again);
        }
        ours.add(Boolean.TRUE);
      }
      return ours;
    } catch (Exception e) {
      LOG.debug(
          "releasing {} locks in one multi failed ({}); releasing them one by one",
          leases.size(),
          e.toString());
    }
    return LockBackend.super.releaseAll(leases);
  }

  /**
   * @return whether the node existed
   * @throws Exception a connection failure: Curator keeps retrying the delete in the background
   */
  boolean deleteNode(String path) throws Exception {
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
  void deleteInBackground(String path) {
    if (closed) {
      return;
    }
    try {
      curator.delete().guaranteed().inBackground().forPath(path);
    } catch (Exception e) {
      LOG.debug("deleting {} in the background failed: {}", path, e.toString());
    }
  }

  long callTimeoutMillis() {
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
    curator.getConnectionStateListenable().removeListener(sessionWatch);
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
}
