package dev.locksmith.zookeeper;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockException;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.Poll;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.Event.EventType;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One acquisition on ZooKeeper of a lock, a semaphore permit or a side of a read-write lock ({@link
 * ZooKeeperBackend#attempt}). One waiter: its node, the predecessor it watches, and whether a
 * create may have left a node we do not know. A lock's waiter is first in line or watches the node
 * before it; a permit's or side's waiter does as {@link ClaimQueue} decides.
 */
final class ZooKeeperAttempt implements LockAttempt {
  private static final Logger LOG = LoggerFactory.getLogger(ZooKeeperAttempt.class);

  /**
   * What Curator's protected mode puts before a node's random id; our counting create names its
   * nodes alike.
   */
  private static final String PROTECTION_PREFIX = "_c_";

  private static final byte[] NO_DATA = new byte[0];

  private final ZooKeeperBackend backend;
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
   * What the create of {@link #nodePath} answered (create2): czxid and ephemeral owner; czxid 0 if
   * unknown.
   */
  private Stat created = new Stat();

  private boolean createInFlight;
  private String watched;

  /**
   * When the head we watch expires, by this client's clock, as a {@link System#nanoTime()} value; 0
   * if it has no expiry. Only tells when to ask the leader again, never that it passed.
   */
  private long headExpiresAt;

  private long lastCheckedAt;
  private volatile boolean predecessorChanged = true;

  /**
   * The head we were next behind at the end of the last check, seen there with a watch on its data;
   * null if we were not. Our node was the second child then: nodes made later sort after ours, and
   * the one node that can come before it, the hold, is made only by the head's own release, which
   * writes the head's data first (a change, not a delete, for the watch). So once the head is
   * deleted the lock is ours, without reading the children again.
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

  ZooKeeperAttempt(
      ZooKeeperBackend backend, String name, Claim claim, String ownerId, Runnable wake) {
    this.backend = backend;
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
    ZooKeeperBackend.Held h = backend.held.get(ownerId);
    if (h == null || event.getPath() == null || !event.getPath().endsWith(h.path)) {
      return; // released, lost already, or a connection event (the state listener handles those)
    }
    if (event.getType() == EventType.NodeDeleted) {
      if (backend.held.remove(ownerId, h)) {
        backend.context.leaseLost(ownerId, h.deletedReason(), h.deletedDetail());
      }
    } else if (event.getType() != EventType.None) {
      try {
        backend
            .curator
            .checkExists()
            .usingWatcher(ownWatcher)
            .inBackground(
                (c, e) -> {
                  if (e.getStat() == null
                      && e.getResultCode() == KeeperException.Code.NONODE.intValue()
                      && backend.held.remove(ownerId, h)) {
                    backend.context.leaseLost(ownerId, h.deletedReason(), h.deletedDetail());
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
    if (backend.closed) {
      throw new LockException(
          "the ZooKeeper client for " + backend.settings.shownUri + " is closed");
    }
    long now = System.nanoTime();
    long recheck = backend.context.recheck().toNanos();
    if (watched != null && !predecessorChanged && now - lastCheckedAt < recheck / 2) {
      // woken by someone else's release; our predecessor is still there, unchanged
      if (headExpiresAt == 0) {
        return Poll.busy(backend.context.recheck());
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
              + backend.settings.hosts
              + " refused access to "
              + what
              + " (NoAuth): its nodes belong to other credentials. Check the user and password of"
              + " the URI ("
              + backend.settings.shownUri
              + ") and the `"
              + ZooKeeperSettings.ACL_OPTION
              + "` option",
          e);
    } catch (LockException e) {
      throw e;
    } catch (Refused e) {
      throw e.error;
    } catch (Exception e) {
      if (backend.closed) {
        throw new LockException(
            "the ZooKeeper client for "
                + backend.settings.shownUri
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
              + backend.settings.hosts
              + " within the `"
              + ZooKeeperSettings.CONNECTION_TIMEOUT
              + "` of "
              + Durations.format(backend.settings.connectionTimeout)
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
      backend.handOffsUnread.incrementAndGet();
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
          children = backend.curator.getChildren().forPath(parent);
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
        backend.childrenReadAgain.incrementAndGet();
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
              return Poll.busy(backend.context.recheck());
            }
            // any holder's release may free a permit: read again with a watch on the children,
            // and judge that read
            childrenWatched = true;
            try {
              pipelined =
                  backend.curator.getChildren().usingWatcher(predecessorWatcher).forPath(parent);
            } catch (KeeperException.NoNodeException e) {
              pipelined = List.of();
            }
            continue;
          default:
            if (backend
                    .curator
                    .checkExists()
                    .usingWatcher(predecessorWatcher)
                    .forPath(parent + "/" + verdict.node)
                != null) {
              watched = parent + "/" + verdict.node;
              return Poll.busy(backend.context.recheck());
            }
            if (round >= ZooKeeperBackend.ROUNDS) {
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
        Stat stat =
            backend.curator.checkExists().usingWatcher(predecessorWatcher).forPath(predecessor);
        if (stat == null) {
          return Poll.busy(Duration.ZERO); // it went away between the two reads: look again now
        }
        watched = predecessor;
        return Poll.busy(backend.context.recheck());
      }
      Poll busy = behindHead(predecessor);
      if (busy != null) {
        return busy;
      }
      if (round == ZooKeeperBackend.ROUNDS) {
        return Poll.busy(Duration.ZERO);
      }
      // the head went away, or we deleted it: read the children again now
    }
  }

  /**
   * Creates our node and reads the lock's children in one round trip of latency: the read is sent
   * right behind the create, without waiting for its answer. ZooKeeper serves one session's
   * requests in the order they were sent (a read waits behind the session's pending writes), so the
   * read sees our new node, and the grant of an uncontended lock costs what the create alone costs.
   * Where the read was served first (the parent node did not exist yet, so Curator made it and sent
   * the create again; or a retry after a connection loss), our node is not in it, and {@link
   * #check} reads again: only a read that contains our node decides anything, so a read from before
   * the create can delay a grant but never give one.
   *
   * @return the children the read behind the create saw, or null if it failed (then {@link #check}
   *     reads again)
   */
  private List<String> createAndReadChildren() throws Exception {
    createInFlight = true;
    CompletableFuture<CuratorEvent> create = new CompletableFuture<>();
    // create2: the answer carries the node's czxid and ephemeral owner, so the grant needs no
    // read of its own. A
    // node found again by protected mode after a connection loss may come back without them
    // (czxid 0); the grant
    // then reads them.
    backend
        .curator
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
      children = backend.curator.getChildren().forPath(parent);
    } catch (InterruptedException e) {
      throw e; // the create stays in flight: abandon() finds its node by our owner id
    } catch (Exception e) {
      LOG.debug(
          "the children read behind the create of {} failed; reading again: {}",
          what,
          e.toString());
      backend.childrenReadAgain.incrementAndGet();
      children = null; // no parent node yet (NoNode), or a connection problem: read again once the
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
   * alone: the lock is ours without a read, so an uncontended acquire + release sends two requests,
   * create and delete, as the raw floor does (a create and a children read are three with the
   * release). The transaction has one zxid, so the write's mzxid is our node's czxid, the token;
   * the ephemeral owner is the session of the handle it was sent on.
   *
   * <p>Sent on ZooKeeper's own handle: Curator would send a transaction again after a connection
   * loss and could leave a second node. Our node is named as Curator's protected mode names one (a
   * random id, then our owner id), so a create whose answer was lost is found by our owner id once
   * the connection is back ({@link #findLostCreate}), and {@link #abandon} finds it the same way.
   * Where the lock's node does not exist yet, or the session ended, the create goes through Curator
   * ({@link #createAndReadChildren}), which makes the parents and waits for a new session.
   *
   * @return our node alone, as the children to judge; null if others are there, to be read
   */
  private List<String> createCounting() throws Exception {
    ZooKeeper zk = backend.curator.getZookeeperClient().getZooKeeper();
    long session = zk.getSessionId();
    String lockNode = ZKPaths.makePath(backend.settings.basePath, parent);
    ThreadLocalRandom random = ThreadLocalRandom.current();
    String node = PROTECTION_PREFIX + new UUID(random.nextLong(), random.nextLong()) + "-" + base;
    List<Op> ops =
        List.of(
            Op.create(
                ZKPaths.makePath(lockNode, node),
                data,
                backend.settings.acl.acls(),
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
   * @return the path of this attempt's lock node on ZooKeeper's own handle (under the base path),
   *     for a set taken in one multi ({@link ZooKeeperBackend#acquireAll})
   */
  String lockNodeOnHandle() {
    return ZKPaths.makePath(backend.settings.basePath, parent);
  }

  /**
   * @return the path of this attempt's lock node in Curator's namespace
   */
  String parentNode() {
    return parent;
  }

  /**
   * @return a new node name for this attempt, as {@link #createCounting} names one: a random id,
   *     then our owner id; ZooKeeper appends the sequence
   */
  String newNodeName() {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    return PROTECTION_PREFIX + new UUID(random.nextLong(), random.nextLong()) + "-" + base;
  }

  /**
   * @return the data our node carries
   */
  byte[] nodeData() {
    return data;
  }

  /**
   * @return whether {@code child} (a node name) is one this attempt's owner id made
   */
  boolean isOurs(String child) {
    return NodeNames.hasBase(child, base);
  }

  /**
   * Grants this attempt the node a set's multi made ({@link ZooKeeperBackend#acquireAll}): the lock
   * node was empty and recreated in the same transaction, so our node is its only child.
   *
   * @param made the path the multi answered (on ZooKeeper's own handle)
   * @param czxid the multi's zxid: our node's czxid, the token
   * @param session the session the multi was sent on
   * @return the grant, or busy if the connection is in doubt (then nothing is recorded as held)
   */
  Poll grantMadeInSet(String made, long czxid, long session) {
    nodePath = ZKPaths.makePath(parent, ZKPaths.getNodeFromPath(made));
    Stat stat = new Stat();
    stat.setCzxid(czxid);
    stat.setEphemeralOwner(session);
    created = stat;
    try {
      return grant();
    } catch (Exception e) {
      // grant() reads only when the czxid is unknown, and it is known here
      throw new IllegalStateException(e);
    }
  }

  /**
   * A node ahead of ours with our owner id in its name is ours too: a create whose answer was lost,
   * not found by {@link #findLostCreate}, and made after all. It must not stand before us until the
   * session ends: deleted, in the background, and left out of the children judged.
   *
   * @return our node's index among the children left
   */
  private int dropLostCreates(List<String> children, int index) {
    for (int i = index - 1; i >= 0; i--) {
      if (NodeNames.hasBase(children.get(i), base)) {
        LOG.debug(
            "deleting {} of {}: a create of ours whose answer was lost", children.get(i), what);
        backend.deleteInBackground(parent + "/" + children.remove(i));
        index--;
      }
    }
    return index;
  }

  /**
   * The counting create's answer was lost: it may have been made. Reads the children through
   * Curator, which waits for the connection up to the connection timeout, and takes our node if it
   * is there (the grant reads its stat); otherwise creates through Curator.
   */
  private List<String> findLostCreate(KeeperException cause) throws Exception {
    LOG.debug(
        "the create of a node for {} got no answer ({}); looking for it by our owner id",
        what,
        cause.code());
    List<String> children;
    try {
      children = backend.curator.getChildren().forPath(parent);
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
   * Waits for a background call's answer; Curator answers every one, with an error once its retries
   * are spent.
   */
  private <T> T await(CompletableFuture<T> answer) throws Exception {
    try {
      return answer.get(backend.callTimeoutMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new BackendUnavailableException(
          "no answer from ZooKeeper at "
              + backend.settings.hosts
              + " for "
              + what
              + " within "
              + backend.callTimeoutMillis()
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
   * write more ({@link ZooKeeperBackend#leaderNow()}) to learn the leader's time; once it has
   * passed the head is deleted, versioned by what we read, so a concurrent extend wins. The watch
   * stays either way: an extend changes the data, a release deletes the node, and both wake us.
   *
   * @return busy while the head stands; null once it is gone, so the caller reads again
   */
  private Poll behindHead(String head) throws Exception {
    Stat stat = new Stat();
    byte[] bytes;
    try {
      bytes =
          backend
              .curator
              .getData()
              .storingStatIn(stat)
              .usingWatcher(predecessorWatcher)
              .forPath(head);
    } catch (KeeperException.NoNodeException e) {
      return null;
    }
    NodeData data = NodeData.parse(bytes);
    if (!data.expires()) {
      watched = head;
      nextBehind = head;
      return Poll.busy(backend.context.recheck());
    }
    long checkedAt = System.nanoTime();
    long left = data.expiresAt(stat) - backend.leaderNow();
    if (left > 0) {
      watched = head;
      headExpiresAt = checkedAt + TimeUnit.MILLISECONDS.toNanos(left);
      if (headExpiresAt == 0) {
        headExpiresAt = 1;
      }
      nextBehind = head;
      return Poll.busy(Duration.ofMillis(left));
    }
    if (backend.deleteExpiredHead(head, stat)) {
      LOG.debug(
          "deleted {} of lock '{}': it expired {} ms ago by the ZooKeeper leader's clock",
          head,
          name,
          -left);
    }
    return null;
  }

  /**
   * Our node is the lowest child. The czxid and ephemeral owner come from the create. The watch on
   * our node (a deleted node is a lost lease) is left to {@link
   * ZooKeeperSessionWatch#watchHeldNodes}, which sets it once the lease has been held for {@link
   * ZooKeeperBackend#WATCH_DELAY}: a watch fires on our own delete as well, and its event costs
   * client and server as much as a request, so a lock released sooner never pays for one. A
   * deletion before the watch is set is found by the exists that sets it.
   */
  private Poll grant() throws Exception {
    long session = backend.curator.getZookeeperClient().getZooKeeper().getSessionId();
    Stat stat = created;
    boolean watchSet = false;
    if (stat.getCzxid() == 0) {
      stat = backend.curator.checkExists().usingWatcher(ownWatcher).forPath(nodePath);
      if (stat == null) {
        nodePath = null;
        return Poll.busy(Duration.ZERO);
      }
      watchSet = true;
    }
    if (stat.getEphemeralOwner() != session) {
      // made by a session that has since ended (Curator moved to a new one): it is about to
      // vanish
      backend.deleteInBackground(nodePath);
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
      // the fence's write to our node fires a watch set on it above, perhaps before the lease is
      // recorded, when its event would not set it again: the node is watched as any other grant's
      watchSet = false;
    }
    ZooKeeperBackend.Held h =
        new ZooKeeperBackend.Held(
            name,
            claim.kind(),
            ownerId,
            nodePath,
            token,
            stat.getCzxid(),
            ownWatcher,
            System.nanoTime());
    backend.held.put(ownerId, h);
    if (!backend.connected || backend.closed) {
      backend.held.remove(ownerId, h);
      return Poll.busy(
          Duration.ofMillis(50)); // the connection is in doubt: not a grant we can vouch for
    }
    if (!watchSet) {
      backend.unwatched.add(h);
    }
    if (waited && claim.isExclusive()) {
      announceHead();
    }
    return Poll.grantedForSession(h.token, h);
  }

  /**
   * Tells a waiter that queued behind us while we waited, and watches our node from further back,
   * that we are the head now: a write of our node's unchanged data, in the background, which its
   * watch reports as a change. It reads the children then, while we hold, finds itself next behind
   * us, and is granted on our delete without a read ({@link #nextBehind}): the read comes off the
   * hand-off's path. Versioned by the node's first version, so an extend sent meanwhile is never
   * overwritten. A lock granted on its first poll needs none: any waiter came after us and read us
   * as the head.
   */
  private void announceHead() {
    try {
      backend.curator.setData().withVersion(0).inBackground((c, e) -> {}).forPath(nodePath, data);
    } catch (Exception e) {
      LOG.debug(
          "telling the waiters behind {} that it holds failed; they read the children on its"
              + " release: {}",
          nodePath,
          e.toString());
    }
  }

  /**
   * The token of a permit or side: one multi that writes our node (its data unchanged) and the
   * resource's parent node. Its zxid (the writes' mzxid) is the token: the leader orders every
   * transaction, so each grant's token is above every earlier grant's of the resource, whatever
   * order the nodes were created in, and never restarts when the parent node is made again. A node
   * deleted before the multi (session expired, revoked) fails it as a whole, so a grant whose token
   * is above a later holder's cannot happen.
   *
   * <p>The write to our node leaves the token in its mzxid, which nothing else writes afterwards
   * (extend and release-after are for locks): a node whose mzxid is above its czxid has been
   * granted, and the mzxid is its holder's token, which is how {@link
   * ZooKeeperBackend#inspectHolders} reads every holding without a write. A waiter watching our
   * node is woken by that write as well, reads the children again, and watches on.
   *
   * @return the token, or 0 if our node is gone
   */
  private long fence() throws Exception {
    try {
      List<CuratorTransactionResult> results =
          backend
              .curator
              .transaction()
              .forOperations(
                  backend.curator.transactionOp().setData().withVersion(-1).forPath(nodePath, data),
                  backend.curator.transactionOp().setData().forPath(parent, new byte[0]));
      return results.get(1).getResultStat().getMzxid();
    } catch (KeeperException.NoNodeException e) {
      if (ZooKeeperLeaseControl.failedOp(e) == 0) {
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
      ZooKeeperBackend.Held h = backend.held.get(ownerId);
      if (h != null && h.path.equals(path)) {
        backend.held.remove(ownerId, h);
      }
      deleteQuietly(path);
    } else if (createInFlight && !backend.connected) {
      // cut off: look for it once the connection is back, without holding up the caller, whose
      // acquire must end within its timeout (Curator would retry a blocking read until it
      // connects)
      findAndDeleteInBackground();
    } else if (createInFlight) {
      // the create may have succeeded without our hearing of it: find the node by our owner id
      try {
        for (String child : backend.curator.getChildren().forPath(parent)) {
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
    if (backend.closed) {
      return;
    }
    try {
      backend
          .curator
          .getChildren()
          .inBackground(
              (client, event) -> {
                if (event.getChildren() == null) {
                  return; // no lock directory: nothing was created
                }
                for (String child : event.getChildren()) {
                  if (NodeNames.hasBase(child, base)) {
                    backend.deleteInBackground(parent + "/" + child);
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
    if (!backend.connected) {
      backend.deleteInBackground(path);
      return;
    }
    try {
      backend.deleteNode(path);
    } catch (Exception e) {
      LOG.debug(
          "deleting {} of an abandoned attempt failed; Curator retries it: {}", path, e.toString());
    }
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
}
