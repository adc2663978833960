package dev.locksmith.redis;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Guarantees.Promise;
import dev.locksmith.LockException;
import dev.locksmith.LockState;
import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisNode;
import dev.locksmith.redis.internal.RedisScripts;
import dev.locksmith.redis.internal.RedisSettings;
import dev.locksmith.redis.internal.ReleaseSubscriber;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.NamePage;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Redis lock protocol on one server: acquire is one script (SET NX PX and the INCR of the fence
 * counter of the lock's hash slot when nobody waits; otherwise the lock goes to the first live
 * entry of its waiter queue), release and renew are owner-checked scripts, a release with waiters
 * queued publishes a wake-up that one shared subscriber connection hands to this client's waiters,
 * and renewals go out pipelined. Extend is the owner-checked PEXPIRE of renewal with the new lease;
 * a hold after release replaces the owner id with a value no lease has, expiring after the hold, so
 * only Redis's own expiry frees it. A semaphore or read-write lock keeps its live leases in sorted
 * sets scored by their expiry in the server's clock, beside the lock of the same name (same hash
 * tag and fence counter, other keys): one script per acquire, release, renewal.
 */
final class RedisBackend implements LockBackend {
  private static final Logger LOG = LoggerFactory.getLogger(RedisBackend.class);

  /** Renewals per pipeline: 10,000 leases due together cost 10 round trips. */
  static final int RENEW_CHUNK = 1000;

  /** The shortest life of a waiter's queue entry between two of its polls. */
  static final long MIN_QUEUE_ENTRY_MILLIS = 500;

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
              "a paused holder's key expires with its lease and the next holder's token, from the"
                  + " same server's INCR of the lock's slot counter, is higher")
          .promise(
              Fault.HOLDER_CRASH,
              Promise.SAFE,
              "a crashed holder stops renewing and its key expires with the lease (PX)")
          .promise(
              Fault.PAUSE_DURING_ACQUIRE,
              Promise.SAFE_WITH_FENCING,
              "as for a paused holder: the lease runs from the server's SET, and the token orders"
                  + " the holders")
          .promise(
              Fault.SERVER_RESTART,
              Promise.UNSAFE,
              "a restart without persistence forgets the lock keys and the fence counters: a second"
                  + " holder can enter and tokens start again from 1")
          .promise(
              Fault.SERVER_PAUSE,
              Promise.SAFE_WITH_FENCING,
              "nobody can acquire while the server is paused and holders report loss when renewal"
                  + " fails past their lease; on resume the expired keys free the lock, and a"
                  + " holder that ignored the loss has the lower token")
          .promise(
              Fault.PARTITION,
              Promise.SAFE_WITH_FENCING,
              "a cut-off holder's renewals fail and it is told the lease is lost by the lease's"
                  + " end; the key expires on the server and the next token is higher")
          .promise(
              Fault.LEADER_FAILOVER,
              Promise.NOT_APPLICABLE,
              "one server, no replication (with replicas, asynchronous replication can lose a lock"
                  + " at failover)")
          .promise(
              Fault.CLOCK_JUMP,
              Promise.UNSAFE,
              "Redis expires keys by its wall clock, so a jump forward on the server frees locks"
                  + " early")
          .promise(
              Fault.RELEASE_AFTER_EXPIRY,
              Promise.SAFE,
              "release deletes the key only if it still holds our owner id, in one script")
          .promise(
              Fault.AMBIGUOUS_ACQUIRE,
              Promise.SAFE,
              "a retried acquire by the same owner gets its own lock back, and an abandoned attempt"
                  + " releases what it may have taken; liveness only")
          .promise(
              Fault.TOKEN_MONOTONICITY,
              Promise.SAFE,
              "a lock's tokens come from the fence counter of its hash slot, which has no TTL and"
                  + " only rises, so they rise while the server keeps its data (see"
                  + " SERVER_RESTART)")
          .build();

  private final RedisNode node;
  private final RedisKeys keys;
  private final BackendContext context;

  /** The one subscriber of one server or a Sentinel set's primary; null on a Cluster. */
  private final ReleaseSubscriber subscriber;

  /**
   * On a Cluster: one sharded subscriber per node, by the node that owned the slot when it was
   * made.
   */
  private final Map<String, ReleaseSubscriber> shardSubscribers = new ConcurrentHashMap<>();

  private final ReentrantLock shardLock = new ReentrantLock();
  private volatile boolean closed;
  private final Guarantees guarantees;
  private final RedisScripts.Script releaseScript;
  private final RedisScripts.Script withdrawScript;
  private final RedisScripts.Script semaphoreReleaseScript;
  private final RedisScripts.Script readWriteReleaseScript;
  private final int waitReplicas;

  RedisBackend(RedisNode node, RedisKeys keys, BackendContext context) {
    this.node = node;
    this.keys = keys;
    this.context = context;
    this.subscriber =
        node.isCluster()
            ? null
            : new ReleaseSubscriber(node, keys.clientChannel(context.clientId()));
    this.guarantees = guarantees(node.settings().topology(), node.settings().waitReplicas());
    this.releaseScript =
        node.isCluster() ? RedisScripts.RELEASE_QUEUED_SHARDED : RedisScripts.RELEASE_QUEUED;
    this.withdrawScript = node.isCluster() ? RedisScripts.WITHDRAW_SHARDED : RedisScripts.WITHDRAW;
    this.semaphoreReleaseScript =
        node.isCluster() ? RedisScripts.SEMAPHORE_RELEASE_SHARDED : RedisScripts.SEMAPHORE_RELEASE;
    this.readWriteReleaseScript =
        node.isCluster()
            ? RedisScripts.READ_WRITE_RELEASE_SHARDED
            : RedisScripts.READ_WRITE_RELEASE;
    this.waitReplicas = node.settings().waitReplicas();
  }

  /**
   * @param topology how the servers are arranged
   * @param waitReplicas the replicas a grant waits for (WAIT), 0 for none
   * @return what the backend promises on that topology
   */
  static Guarantees guarantees(RedisSettings.Topology topology, int waitReplicas) {
    if (topology == RedisSettings.Topology.SINGLE) {
      return GUARANTEES;
    }
    String where =
        topology == RedisSettings.Topology.SENTINEL
            ? "the Sentinels promote a replica"
            : "the Cluster promotes a replica";
    String wait =
        waitReplicas == 0
            ? "replication is asynchronous and a grant is answered before any replica has it"
            : "a grant is answered only after WAIT saw "
                + waitReplicas
                + " replica(s) acknowledge it (else it is given back and the acquire fails), but"
                + " replication stays asynchronous: the replica promoted need not be one that"
                + " acknowledged, and WAIT narrows the window, it does not close it";
    return Guarantees.builder()
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
            Feature.SEMAPHORES,
            Feature.READ_WRITE_LOCKS)
        // a listing SCANs one server, and a set is one script on one server: a Cluster's keys are
        // spread over many (a Cluster takes a set in one script only when its names share a slot)
        .features(
            topology == RedisSettings.Topology.SENTINEL
                ? new Feature[] {Feature.LISTING, Feature.ATOMIC_LOCK_SETS}
                : new Feature[0])
        // FIFO is declared, and checked by the kit, for locks only
        .except(Guarantees.Primitive.SEMAPHORE, Feature.FIFO_FAIRNESS)
        .except(Guarantees.Primitive.READ_WRITE_LOCK, Feature.FIFO_FAIRNESS)
        .promise(
            Fault.HOLDER_PAUSE,
            Promise.SAFE_WITH_FENCING,
            "a paused holder's key expires with its lease and the next holder's token, from the"
                + " same primary's fence INCR, is higher")
        .promise(
            Fault.HOLDER_CRASH,
            Promise.SAFE,
            "a crashed holder stops renewing and its key expires with the lease (PX)")
        .promise(
            Fault.PAUSE_DURING_ACQUIRE,
            Promise.SAFE_WITH_FENCING,
            "as for a paused holder: the lease runs from the primary's SET, and the token orders"
                + " the holders")
        .promise(
            Fault.SERVER_RESTART,
            Promise.UNSAFE,
            "a primary restarted without persistence before a failover comes back empty and its"
                + " replicas copy it: lock keys and fence counters are lost")
        .promise(
            Fault.SERVER_PAUSE,
            Promise.SAFE_WITH_FENCING,
            "nobody can acquire on a paused primary and holders report loss when renewal fails past"
                + " their lease; if it stays paused long enough, "
                + where
                + ", with the failover's risks")
        .promise(
            Fault.PARTITION,
            Promise.SAFE_WITH_FENCING,
            "a cut-off holder's renewals fail and it is told the lease is lost by the lease's end;"
                + " the key expires and the next token is higher")
        .promise(
            Fault.LEADER_FAILOVER,
            Promise.UNSAFE,
            "when the primary dies and "
                + where
                + ", "
                + wait
                + ": a lock or a fence INCR the new primary never got is lost, "
                + "a second holder can enter, and its token can repeat one already given")
        .promise(
            Fault.CLOCK_JUMP,
            Promise.UNSAFE,
            "Redis expires keys by its wall clock, so a jump forward on the primary frees locks"
                + " early")
        .promise(
            Fault.RELEASE_AFTER_EXPIRY,
            Promise.SAFE,
            "release deletes the key only if it still holds our owner id, in one script")
        .promise(
            Fault.AMBIGUOUS_ACQUIRE,
            Promise.SAFE,
            "a retried acquire by the same owner gets its own lock back, and an abandoned attempt"
                + " releases what it may have taken; liveness only")
        .promise(
            Fault.TOKEN_MONOTONICITY,
            Promise.UNSAFE,
            "the fence counter rises on one primary, but a failover to a replica that lacks the"
                + " last INCRs makes tokens repeat"
                + (waitReplicas == 0 ? "" : " (WAIT makes that rarer, not impossible)"))
        .build();
  }

  @Override
  public Guarantees guarantees() {
    return guarantees;
  }

  RedisNode node() {
    return node;
  }

  ReleaseSubscriber subscriber() {
    return subscriber;
  }

  /**
   * @return the subscriber that hears the lock's release channel: the one, or on a Cluster its
   *     node's
   */
  private ReleaseSubscriber subscriberFor(String name) {
    if (subscriber != null) {
      return subscriber;
    }
    String server = node.serverOf(keys.releasedChannel(name));
    ReleaseSubscriber s = shardSubscribers.get(server);
    if (s != null) {
      return s;
    }
    shardLock.lock();
    try {
      s = shardSubscribers.get(server);
      if (s == null) {
        s = new ReleaseSubscriber(node, keys.clientChannel(name, context.clientId()), true);
        if (closed) {
          s.close();
        } else {
          shardSubscribers.put(server, s);
        }
      }
      return s;
    } finally {
      shardLock.unlock();
    }
  }

  @Override
  public LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake) {
    return new Attempt(name, ownerId, lease, wake);
  }

  /**
   * The whole set in one script ({@link RedisScripts#ACQUIRE_ALL}): every lock free with nobody
   * queued for it, or none taken. On a Cluster, one script per hash slot the names fall in, slot
   * after slot in slot order: a slot found busy gives back the slots taken before it (so a busy set
   * may hold some of its names for a moment, and a Cluster does not declare {@link
   * Guarantees.Feature#ATOMIC_LOCK_SETS}); a set whose names share one slot is one script, as on a
   * single server.
   */
  @Override
  public List<Poll> acquireAll(List<String> names, List<String> ownerIds, Duration lease)
      throws InterruptedException {
    if (!node.isCluster()) {
      return acquireInOneScript(names, ownerIds, lease);
    }
    java.util.TreeMap<Integer, List<Integer>> bySlot = new java.util.TreeMap<>();
    for (int i = 0; i < names.size(); i++) {
      bySlot.computeIfAbsent(keys.slot(names.get(i)), s -> new ArrayList<>()).add(i);
    }
    if (bySlot.size() == 1) {
      return acquireInOneScript(names, ownerIds, lease);
    }
    Poll[] grants = new Poll[names.size()];
    List<String> takenNames = new ArrayList<>();
    List<String> takenOwners = new ArrayList<>();
    for (List<Integer> slot : bySlot.values()) {
      List<String> slotNames = new ArrayList<>(slot.size());
      List<String> slotOwners = new ArrayList<>(slot.size());
      for (int i : slot) {
        slotNames.add(names.get(i));
        slotOwners.add(ownerIds.get(i));
      }
      List<Poll> got;
      try {
        got = acquireInOneScript(slotNames, slotOwners, lease);
      } catch (InterruptedException | RuntimeException e) {
        // this slot's script gave back what it may have taken; the slots before it are ours
        giveBack(takenNames, takenOwners, e);
        throw e;
      }
      if (got.isEmpty()) {
        giveBack(takenNames, takenOwners, null);
        return List.of();
      }
      for (int k = 0; k < slot.size(); k++) {
        grants[slot.get(k)] = got.get(k);
      }
      takenNames.addAll(slotNames);
      takenOwners.addAll(slotOwners);
    }
    return java.util.Arrays.asList(grants);
  }

  /** Locks that share one hash slot (every lock on a single server) in one script. */
  private List<Poll> acquireInOneScript(List<String> names, List<String> ownerIds, Duration lease)
      throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException("interrupted while acquiring locks " + names);
    }
    List<String> allKeys = new ArrayList<>(names.size() * 6);
    for (String name : names) {
      allKeys.addAll(acquireKeys(keys, name));
    }
    List<String> argv = new ArrayList<>(names.size() + 1);
    argv.add(Long.toString(Math.max(1, lease.toMillis())));
    argv.addAll(ownerIds);
    Object reply;
    long acknowledged = -1;
    try {
      if (waitReplicas > 0) {
        RedisNode.Replicated r =
            node.evalReplicated(
                RedisScripts.ACQUIRE_ALL,
                allKeys,
                argv,
                got -> got instanceof List && Long.valueOf(1).equals(((List<?>) got).get(0)));
        reply = r.reply;
        acknowledged = r.acknowledged;
      } else {
        reply = node.eval(RedisScripts.ACQUIRE_ALL, allKeys, argv);
      }
    } catch (RuntimeException e) {
      // the script may have run although its answer was lost: give back what it may have taken
      giveBack(names, ownerIds, e);
      throw e;
    }
    List<?> result = (List<?>) reply;
    if (!Long.valueOf(1).equals(result.get(0))) {
      return List.of();
    }
    if (acknowledged >= 0 && acknowledged < waitReplicas) {
      BackendUnavailableException e =
          new BackendUnavailableException(
              "locks "
                  + names
                  + " were granted by "
                  + node.serverOf(keys.owner(names.get(0)))
                  + " but only "
                  + acknowledged
                  + " of the "
                  + waitReplicas
                  + " replica(s) asked for (`wait-replicas`) acknowledged them within "
                  + Durations.format(node.settings().waitTimeout())
                  + " (`wait-timeout`); they were given back. Are the replicas up and connected"
                  + " (INFO replication), or is `wait-timeout` too short?");
      giveBack(names, ownerIds, e);
      throw e;
    }
    List<Poll> grants = new ArrayList<>(names.size());
    for (int i = 0; i < names.size(); i++) {
      long token = (Long) result.get(i + 1);
      if (token <= 0) {
        throw new LockException(
            "lock '"
                + names.get(i)
                + "' was taken but its fence counter on "
                + node.endpoint()
                + " reads "
                + token
                + "; someone changed "
                + keys.fenceCounter(names.get(i)));
      }
      grants.add(Poll.granted(token, null));
    }
    return grants;
  }

  /**
   * Releases every name of a set that may have been granted, each owner-checked.
   *
   * @param cause why (null: a later slot of the set was busy)
   */
  private void giveBack(List<String> names, List<String> ownerIds, Exception cause) {
    if (names.isEmpty()) {
      return;
    }
    List<BackendLease> leases = new ArrayList<>(names.size());
    for (int i = 0; i < names.size(); i++) {
      leases.add(new BackendLease(names.get(i), ownerIds.get(i), 1, Duration.ofMillis(1), null));
    }
    try {
      releaseAll(leases); // one script per hash slot however large the set
    } catch (RuntimeException e) {
      LOG.debug(
          "giving back the locks {} of a set whose acquire failed ({}) failed too; they expire"
              + " with their lease: {}",
          names,
          cause == null ? "a later slot was busy" : cause.toString(),
          e.toString());
    }
  }

  /** One acquisition: polls with the acquire script, waits on the lock's release channel. */
  private final class Attempt implements LockAttempt {
    private final String name;
    private final String ownerId;
    private final List<String> lockKeys;
    private final List<String> args;
    private final String channel;
    private final Runnable wake;
    private ReleaseSubscriber joinedTo;
    private boolean joined;
    private boolean ambiguous;

    /** Whether a busy answer put us in the lock's queue: then giving up must take us out. */
    private boolean queued;

    Attempt(String name, String ownerId, Duration lease, Runnable wake) {
      this.name = name;
      this.ownerId = ownerId;
      this.lockKeys = acquireKeys(keys, name);
      this.args =
          List.of(
              ownerId,
              Long.toString(Math.max(1, lease.toMillis())),
              Long.toString(queueEntryMillis()));
      this.channel = keys.releasedChannel(name);
      this.wake = wake;
    }

    @Override
    public Poll poll() throws InterruptedException {
      return poll(true);
    }

    /**
     * Nobody waits: no subscription, and a busy lock leaves no entry in its queue (entry life 0).
     */
    @Override
    public Poll pollWithoutWaiting() throws InterruptedException {
      return poll(false);
    }

    private Poll poll(boolean wait) throws InterruptedException {
      if (Thread.interrupted()) {
        throw new InterruptedException("interrupted while acquiring lock '" + name + "'");
      }
      if (wait && !joined) {
        // another waiter of this client already listens on the lock: listen before polling
        joinedTo = subscriberFor(name);
        joined = joinedTo.joinIfSubscribed(channel, wake);
      }
      List<String> argv = wait ? args : List.of(args.get(0), args.get(1), "0");
      ambiguous = true; // until we have the answer, the server may have granted it
      Object reply;
      long acknowledged = -1;
      if (waitReplicas > 0) {
        RedisNode.Replicated r =
            node.evalReplicated(
                RedisScripts.ACQUIRE_QUEUED,
                lockKeys,
                argv,
                got -> got instanceof List && Long.valueOf(1).equals(((List<?>) got).get(0)));
        reply = r.reply;
        acknowledged = r.acknowledged;
      } else {
        reply = node.eval(RedisScripts.ACQUIRE_QUEUED, lockKeys, argv);
      }
      ambiguous = false;
      List<?> result = (List<?>) reply;
      long code = (Long) result.get(0);
      long value = (Long) result.get(1);
      if (code == 1) {
        queued = false; // the grant took us out of the queue
        leave();
        if (acknowledged >= 0 && acknowledged < waitReplicas) {
          // the primary granted it but too few replicas have it: a failover now could hand the
          // lock to a second holder. Give it back and fail, rather than return a grant we cannot
          // stand behind.
          releaseScript(name, ownerId);
          throw new BackendUnavailableException(
              "lock '"
                  + name
                  + "' was granted by "
                  + node.serverOf(keys.owner(name))
                  + " but only "
                  + acknowledged
                  + " of the "
                  + waitReplicas
                  + " replica(s) asked for (`wait-replicas`) acknowledged it within "
                  + Durations.format(node.settings().waitTimeout())
                  + " (`wait-timeout`); it was given back. Are the replicas up and "
                  + "connected (INFO replication), or is `wait-timeout` too short?");
        }
        if (value <= 0) {
          throw new LockException(
              "lock '"
                  + name
                  + "' was taken but its fence counter on "
                  + node.endpoint()
                  + " reads "
                  + value
                  + "; someone changed "
                  + keys.fenceCounter(name));
        }
        return Poll.granted(value, null);
      }
      if (!wait) {
        return Poll.busy(value >= 0 ? Duration.ofMillis(value) : context.recheck());
      }
      queued = true;
      if (!joined) {
        joinedTo.join(channel, wake); // its confirmation wakes us to poll once more
        joined = true;
      }
      // the holder's key expires after `value` ms (-1: it has no TTL, so only a release frees it)
      return Poll.busy(value >= 0 ? Duration.ofMillis(value + 1) : context.recheck());
    }

    private void leave() {
      if (joined) {
        joinedTo.leave(channel, wake);
        joined = false;
      }
    }

    @Override
    public void abandon() {
      leave();
      if (ambiguous || queued) {
        // leave the queue (else the waiters behind us wait until our entry lapses) and, if the
        // last acquire was granted without our seeing the reply, give the lock back
        try {
          node.eval(
              withdrawScript,
              List.of(
                  keys.owner(name), keys.token(name), keys.queue(name), keys.queueDeadlines(name)),
              List.of(ownerId, channel));
        } catch (RuntimeException e) {
          LOG.debug(
              "withdrawing from lock '{}' on {} failed; our queue entry lapses and any grant"
                  + " expires with its lease: {}",
              name,
              node.endpoint(),
              e.toString());
        }
        queued = false;
      }
    }
  }

  @Override
  public LockAttempt attempt(
      String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
    if (claim.isExclusive()) {
      return attempt(name, ownerId, lease, wake);
    }
    return new SharedAttempt(name, claim, ownerId, lease, wake);
  }

  /**
   * One acquisition of a semaphore permit or a side of a read-write lock: polls with the resource's
   * acquire script and waits on the resource's release channel, subscribed before its first busy
   * answer as a lock's attempt is. A busy writer leaves a mark that holds new readers back;
   * withdrawing takes it away at once (else it lapses by itself a few recheck intervals after the
   * writer's last poll).
   */
  private final class SharedAttempt implements LockAttempt {
    private final String name;
    private final Claim claim;
    private final String ownerId;
    private final RedisScripts.Script acquire;
    private final List<String> acquireKeys;
    private final List<String> args;
    private final String channel;
    private final Runnable wake;
    private ReleaseSubscriber joinedTo;
    private boolean joined;
    private boolean ambiguous;

    /**
     * Whether a busy answer marked us as a waiting writer: then giving up must take the mark away.
     */
    private boolean marked;

    SharedAttempt(String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
      this.name = name;
      this.claim = claim;
      this.ownerId = ownerId;
      boolean permit = claim.kind() == Claim.Kind.PERMIT;
      this.acquire = permit ? RedisScripts.SEMAPHORE_ACQUIRE : RedisScripts.READ_WRITE_ACQUIRE;
      this.acquireKeys = sharedAcquireKeys(keys, name, claim);
      this.args =
          List.of(
              ownerId,
              Long.toString(RedisScripts.ceilMillis(lease)),
              permit
                  ? Integer.toString(claim.permits())
                  : claim.kind() == Claim.Kind.WRITE ? "write" : "read",
              Long.toString(queueEntryMillis()));
      this.channel = sharedChannel(keys, name, claim);
      this.wake = wake;
    }

    @Override
    public Poll poll() throws InterruptedException {
      if (Thread.interrupted()) {
        throw new InterruptedException("interrupted while acquiring " + what());
      }
      if (!joined) {
        joinedTo = subscriberFor(name);
        joined = joinedTo.joinIfSubscribed(channel, wake);
      }
      ambiguous = true; // until we have the answer, the server may have granted it
      Object reply;
      long acknowledged = -1;
      if (waitReplicas > 0) {
        RedisNode.Replicated r =
            node.evalReplicated(
                acquire,
                acquireKeys,
                args,
                got -> got instanceof List && Long.valueOf(1).equals(((List<?>) got).get(0)));
        reply = r.reply;
        acknowledged = r.acknowledged;
      } else {
        reply = node.eval(acquire, acquireKeys, args);
      }
      ambiguous = false;
      List<?> result = (List<?>) reply;
      long code = (Long) result.get(0);
      long value = (Long) result.get(1);
      if (code == 1) {
        marked = false; // the grant took our mark away
        leave();
        if (acknowledged >= 0 && acknowledged < waitReplicas) {
          releaseShared(name, claim, ownerId);
          throw new BackendUnavailableException(
              what()
                  + " was granted by "
                  + node.serverOf(acquireKeys.get(0))
                  + " but only "
                  + acknowledged
                  + " of the "
                  + waitReplicas
                  + " replica(s) asked for (`wait-replicas`) acknowledged it within "
                  + Durations.format(node.settings().waitTimeout())
                  + " (`wait-timeout`); it was given back. Are the replicas up and "
                  + "connected (INFO replication), or is `wait-timeout` too short?");
        }
        if (value <= 0) {
          throw new LockException(
              what()
                  + " was taken but its fence counter on "
                  + node.endpoint()
                  + " reads "
                  + value
                  + "; someone changed "
                  + keys.fenceCounter(name));
        }
        return Poll.granted(value, null);
      }
      if (code == -1) {
        leave();
        throw Claim.permitsInUse(name, claim.permits(), (int) value);
      }
      marked = claim.kind() == Claim.Kind.WRITE;
      if (!joined) {
        joinedTo.join(channel, wake); // its confirmation wakes us to poll once more
        joined = true;
      }
      return Poll.busy(Duration.ofMillis(Math.max(1, value + 1)));
    }

    private String what() {
      return claim.kind() == Claim.Kind.PERMIT
          ? "a permit of semaphore '" + name + "'"
          : "the " + claim + " lock of read-write lock '" + name + "'";
    }

    private void leave() {
      if (joined) {
        joinedTo.leave(channel, wake);
        joined = false;
      }
    }

    @Override
    public void abandon() {
      leave();
      if (ambiguous || marked) {
        // take our writer's mark away (else new readers wait until it lapses) and, if the last
        // acquire was granted without our seeing the reply, give the lease back
        try {
          releaseShared(name, claim, ownerId);
        } catch (RuntimeException e) {
          LOG.debug(
              "withdrawing from {} on {} failed; a writer's mark lapses and any grant expires with"
                  + " its lease: {}",
              what(),
              node.endpoint(),
              e.toString());
        }
        marked = false;
      }
    }
  }

  /**
   * @return whether the lease was live and is now given back
   */
  private boolean releaseShared(String name, Claim claim, String ownerId) {
    RedisScripts.Script script =
        claim.kind() == Claim.Kind.PERMIT ? semaphoreReleaseScript : readWriteReleaseScript;
    Object r =
        node.eval(
            script,
            sharedReleaseKeys(keys, name, claim),
            List.of(ownerId, sharedChannel(keys, name, claim)));
    return Long.valueOf(1).equals(r);
  }

  /**
   * @return the KEYS of {@link RedisScripts#SEMAPHORE_ACQUIRE} or {@link
   *     RedisScripts#READ_WRITE_ACQUIRE}
   */
  static List<String> sharedAcquireKeys(RedisKeys keys, String name, Claim claim) {
    if (claim.kind() == Claim.Kind.PERMIT) {
      return List.of(
          keys.semaphoreLeases(name),
          keys.semaphorePermits(name),
          keys.fenceCounter(name),
          keys.semaphoreWaiting(name),
          keys.semaphoreTokens(name));
    }
    return List.of(
        keys.readLeases(name),
        keys.writeLeases(name),
        keys.writersWaiting(name),
        keys.fenceCounter(name),
        keys.readWriteWaiting(name),
        keys.readTokens(name),
        keys.writeTokens(name));
  }

  /**
   * @return the KEYS of {@link RedisScripts#SEMAPHORE_RELEASE} or {@link
   *     RedisScripts#READ_WRITE_RELEASE}
   */
  static List<String> sharedReleaseKeys(RedisKeys keys, String name, Claim claim) {
    switch (claim.kind()) {
      case PERMIT:
        return List.of(
            keys.semaphoreLeases(name),
            keys.semaphorePermits(name),
            keys.semaphoreWaiting(name),
            keys.semaphoreTokens(name));
      case READ:
        return List.of(
            keys.readLeases(name),
            keys.writersWaiting(name),
            keys.readWriteWaiting(name),
            keys.readTokens(name));
      default:
        return List.of(
            keys.writeLeases(name),
            keys.writersWaiting(name),
            keys.readWriteWaiting(name),
            keys.writeTokens(name));
    }
  }

  /**
   * @return the KEYS of {@link RedisScripts#SHARED_RENEW}
   */
  static List<String> sharedRenewKeys(RedisKeys keys, String name, Claim claim) {
    switch (claim.kind()) {
      case PERMIT:
        return List.of(
            keys.semaphoreLeases(name), keys.semaphoreTokens(name), keys.semaphorePermits(name));
      case READ:
        return List.of(keys.readLeases(name), keys.readTokens(name));
      default:
        return List.of(keys.writeLeases(name), keys.writeTokens(name));
    }
  }

  /**
   * @return the channel a release of the resource is published on
   */
  static String sharedChannel(RedisKeys keys, String name, Claim claim) {
    return claim.kind() == Claim.Kind.PERMIT
        ? keys.semaphoreChannel(name)
        : keys.readWriteChannel(name);
  }

  /**
   * Renews leases of every kind: locks with the lock's renew script, semaphore permits and
   * read-write sides with theirs, each kind pipelined as {@link #renewLocks} says.
   */
  @Override
  public List<Renewal> renew(List<BackendLease> leases) {
    List<BackendLease> locks = new ArrayList<>(leases.size());
    List<BackendLease> others = new ArrayList<>();
    for (BackendLease lease : leases) {
      (lease.claim().isExclusive() ? locks : others).add(lease);
    }
    if (others.isEmpty()) {
      return renewLocks(leases);
    }
    List<Renewal> ofLocks = locks.isEmpty() ? List.of() : renewLocks(locks);
    List<Renewal> ofOthers = renewShared(others);
    List<Renewal> out = new ArrayList<>(leases.size());
    int l = 0;
    int o = 0;
    for (BackendLease lease : leases) {
      out.add(lease.claim().isExclusive() ? ofLocks.get(l++) : ofOthers.get(o++));
    }
    return out;
  }

  private List<Renewal> renewShared(List<BackendLease> leases) {
    List<List<String>> keyLists = new ArrayList<>(leases.size());
    List<List<String>> argLists = new ArrayList<>(leases.size());
    Duration shortest = null;
    for (BackendLease lease : leases) {
      keyLists.add(sharedRenewKeys(keys, lease.name(), lease.claim()));
      argLists.add(List.of(lease.ownerId(), Long.toString(RedisScripts.ceilMillis(lease.lease()))));
      if (shortest == null || lease.lease().compareTo(shortest) < 0) {
        shortest = lease.lease();
      }
    }
    List<Object> replies =
        node.evalMany(RedisScripts.SHARED_RENEW, keyLists, argLists, RENEW_CHUNK, shortest);
    List<Renewal> out = new ArrayList<>(leases.size());
    for (int i = 0; i < leases.size(); i++) {
      Object r = replies.get(i);
      if (Long.valueOf(RedisScripts.RENEWED).equals(r)) {
        out.add(Renewal.renewed());
      } else if (r instanceof Long) {
        out.add(
            Renewal.lost(
                "owner "
                    + leases.get(i).ownerId()
                    + " is no longer among the live leases in "
                    + keyLists.get(i).get(0)
                    + " on "
                    + node.endpoint()
                    + " (expired, deleted, or the server restarted without persistence)"));
      } else if (r instanceof Throwable) {
        out.add(Renewal.failed((Throwable) r));
      } else {
        out.add(Renewal.failed(new LockException(node.endpoint() + " answered renew with " + r)));
      }
    }
    return out;
  }

  /**
   * Renews leases of exclusive locks, pipelined {@link #RENEW_CHUNK} scripts per round trip (per
   * primary on a Cluster).
   */
  private List<Renewal> renewLocks(List<BackendLease> leases) {
    List<List<String>> keyLists = new ArrayList<>(leases.size());
    List<List<String>> argLists = new ArrayList<>(leases.size());
    Duration shortest = null;
    for (BackendLease lease : leases) {
      keyLists.add(List.of(keys.owner(lease.name()), keys.token(lease.name())));
      argLists.add(List.of(lease.ownerId(), Long.toString(Math.max(1, lease.lease().toMillis()))));
      if (shortest == null || lease.lease().compareTo(shortest) < 0) {
        shortest = lease.lease();
      }
    }
    List<Renewal> out = new ArrayList<>(leases.size());
    if (leases.isEmpty()) {
      return out;
    }
    // a renewal answered after the lease ran out is worthless: wait no longer than the lease
    List<Object> replies =
        node.evalMany(RedisScripts.RENEW, keyLists, argLists, RENEW_CHUNK, shortest);
    for (int i = 0; i < leases.size(); i++) {
      Object r = replies.get(i);
      if (r instanceof Long) {
        long code = (Long) r;
        if (code == RedisScripts.RENEWED) {
          out.add(Renewal.renewed());
        } else if (code == RedisScripts.HELD_BY_ANOTHER) {
          out.add(
              Renewal.lost(
                  "the key "
                      + keys.owner(leases.get(i).name())
                      + " on "
                      + node.endpoint()
                      + " holds another owner"));
        } else {
          out.add(
              Renewal.lost(
                  "the key "
                      + keys.owner(leases.get(i).name())
                      + " is gone from "
                      + node.endpoint()
                      + " (expired, deleted, or the server restarted without persistence)"));
        }
      } else if (r instanceof Throwable) {
        out.add(Renewal.failed((Throwable) r));
      } else {
        out.add(Renewal.failed(new LockException(node.endpoint() + " answered renew with " + r)));
      }
    }
    return out;
  }

  @Override
  public boolean release(BackendLease lease) {
    if (!lease.claim().isExclusive()) {
      return releaseShared(lease.name(), lease.claim(), lease.ownerId());
    }
    return releaseScript(lease.name(), lease.ownerId());
  }

  /**
   * The locks of a set in one script ({@link RedisScripts#RELEASE_ALL}), each owner-checked; on a
   * Cluster, one script per hash slot ({@link RedisScripts#RELEASE_ALL_SHARDED}); with semaphore or
   * read-write leases among them, one release each.
   */
  @Override
  public List<Boolean> releaseAll(List<BackendLease> leases) {
    boolean scripts = leases.size() > 1;
    for (BackendLease lease : leases) {
      scripts &= lease.claim().isExclusive();
    }
    if (!scripts) {
      return LockBackend.super.releaseAll(leases);
    }
    if (!node.isCluster()) {
      return releaseInOneScript(leases, RedisScripts.RELEASE_ALL);
    }
    java.util.TreeMap<Integer, List<Integer>> bySlot = new java.util.TreeMap<>();
    for (int i = 0; i < leases.size(); i++) {
      bySlot.computeIfAbsent(keys.slot(leases.get(i).name()), s -> new ArrayList<>()).add(i);
    }
    Boolean[] ours = new Boolean[leases.size()];
    RuntimeException failure = null;
    for (List<Integer> slot : bySlot.values()) {
      List<BackendLease> slotLeases = new ArrayList<>(slot.size());
      slot.forEach(i -> slotLeases.add(leases.get(i)));
      try {
        List<Boolean> got =
            slot.size() == 1
                ? List.of(release(slotLeases.get(0)))
                : releaseInOneScript(slotLeases, RedisScripts.RELEASE_ALL_SHARDED);
        for (int k = 0; k < slot.size(); k++) {
          ours[slot.get(k)] = got.get(k);
        }
      } catch (RuntimeException e) {
        slot.forEach(i -> ours[i] = false);
        if (failure == null) {
          failure = e;
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
    return java.util.Arrays.asList(ours);
  }

  /** Exclusive locks that share one hash slot (every lock on a single server) in one script. */
  private List<Boolean> releaseInOneScript(List<BackendLease> leases, RedisScripts.Script script) {
    List<String> allKeys = new ArrayList<>(leases.size() * 3);
    List<String> argv = new ArrayList<>(leases.size() * 2);
    for (BackendLease lease : leases) {
      allKeys.addAll(releaseKeys(keys, lease.name()));
      argv.add(lease.ownerId());
      argv.add(keys.releasedChannel(lease.name()));
    }
    List<?> reply = (List<?>) node.eval(script, allKeys, argv);
    List<Boolean> ours = new ArrayList<>(reply.size());
    for (Object r : reply) {
      ours.add(Long.valueOf(1).equals(r));
    }
    return ours;
  }

  @Override
  public boolean extend(BackendLease lease, Duration newLease) {
    if (!lease.claim().isExclusive()) {
      Object r =
          node.eval(
              RedisScripts.SHARED_RENEW,
              sharedRenewKeys(keys, lease.name(), lease.claim()),
              List.of(lease.ownerId(), Long.toString(RedisScripts.ceilMillis(newLease))));
      return Long.valueOf(RedisScripts.RENEWED).equals(r);
    }
    Object r =
        node.eval(
            RedisScripts.RENEW,
            List.of(keys.owner(lease.name()), keys.token(lease.name())),
            List.of(lease.ownerId(), Long.toString(RedisScripts.ceilMillis(newLease))));
    return Long.valueOf(RedisScripts.RENEWED).equals(r);
  }

  @Override
  public boolean releaseAfter(BackendLease lease, Duration keep) {
    if (!lease.claim().isExclusive()) {
      throw new UnsupportedOperationException(
          this + " holds after release only leases of exclusive locks, not " + lease);
    }
    Object r =
        node.eval(
            RedisScripts.HOLD,
            List.of(keys.owner(lease.name()), keys.token(lease.name())),
            List.of(
                lease.ownerId(),
                RedisScripts.holdValue(lease.ownerId()),
                Long.toString(RedisScripts.ceilMillis(keep))));
    return Long.valueOf(1).equals(r);
  }

  /**
   * @return the STATE script's reply for a lock: its owner value, PTTL, token and number of live
   *     queue entries other than the holder's; empty if free
   */
  private List<?> stateOf(String name) {
    Object r =
        node.eval(
            RedisScripts.STATE,
            List.of(keys.owner(name), keys.token(name), keys.queueDeadlines(name)),
            List.of());
    List<?> reply = r instanceof List ? (List<?>) r : List.of();
    return reply.size() < 4 ? List.of() : reply;
  }

  /** The owner value of a {@link #stateOf} reply. */
  private static String ownerOf(List<?> reply) {
    Object value = reply.get(0);
    return value instanceof byte[]
        ? new String((byte[]) value, java.nio.charset.StandardCharsets.UTF_8)
        : String.valueOf(value);
  }

  @Override
  public LockState inspect(String name) {
    List<?> reply = stateOf(name);
    if (reply.isEmpty()) {
      return LockState.free();
    }
    String owner = ownerOf(reply);
    long ttl = ((Number) reply.get(1)).longValue();
    long token = ((Number) reply.get(2)).longValue();
    // the live entries of the lock's queue, the holder's left out: a waiter that gives up
    // withdraws its entry at once (Attempt.abandon), one that vanished stops counting when its
    // entry lapses
    int waiting =
        (int) Math.max(0, Math.min(Integer.MAX_VALUE, ((Number) reply.get(3)).longValue()));
    // held after release, the owner is the hold's value, which names the lease that set it but is
    // no lease's owner id, and the token key still holds that lease's token: as local: reports
    LockState held = LockState.held().withHolder(owner).withWaiting(waiting);
    if (token > 0) {
      held = held.withFencingToken(token);
    }
    // PTTL 0: under a millisecond left, and still held (Redis expires a key only once its clock is
    // past the expiry);
    // reported as 1 ms, since "held, 0 ms left" would contradict an acquire refused in that last
    // millisecond
    return ttl >= 0 ? held.withRemaining(Duration.ofMillis(Math.max(1, ttl))) : held;
  }

  /**
   * Listens on the lock's release channel, on the subscriber connection its waiters share: a
   * release or break-glass is announced there while a waiter is queued, which is when the next
   * leader follows at once. A grant is not announced (it would cost every acquire a publish), nor a
   * lease that runs out.
   */
  @Override
  public dev.locksmith.spi.HolderWatch watchHolder(String name, Runnable changed) {
    ReleaseSubscriber s = subscriberFor(name);
    String channel = keys.releasedChannel(name);
    Runnable wake = changed::run; // one object of our own, to leave with
    s.join(channel, wake);
    return dev.locksmith.spi.HolderWatch.of(false, () -> s.leave(channel, wake));
  }

  /**
   * Reads the holder's owner value and releases it with the owner-checked release script, which
   * wakes the queued waiters: a holder that changed in between (it released, and another took the
   * lock) is left alone. The fence counter is a key of its own and stays.
   */
  @Override
  public boolean breakLock(String name) {
    List<?> reply = stateOf(name);
    return !reply.isEmpty() && releaseScript(name, ownerOf(reply));
  }

  /**
   * One SCAN step over the owner keys of the namespace's locks whose names begin with the prefix:
   * COUNT is the limit, so a page costs about that many keys examined, and the cursor is SCAN's.
   * SCAN returns every key present for the whole scan, maybe twice; the core drops the repeats.
   * COUNT is only a hint, and a step may find more names than the limit: the page is then the first
   * names of the step in name order, and the next page runs the same step again and goes on after
   * the last name shown (cursor {@code p<scan cursor>:<name>}), so no page is longer than the limit
   * and no name of the step is skipped.
   */
  @Override
  public NamePage listNames(String prefix, String cursor, int limit) {
    return scanNames(prefix, cursor, limit, "}:owner", List.of("}:owner"));
  }

  /**
   * Semaphores and read-write locks: as {@link #listNames(String, String, int)}, one SCAN step over
   * the keys of the live leases (a semaphore's leases, a read-write lock's read and write leases),
   * which exist only while some lease may be live (they expire with their last lease). A read-write
   * lock with both sides' keys present is named once per step.
   */
  @Override
  public NamePage listNames(
      String prefix, String cursor, int limit, Guarantees.Primitive primitive) {
    switch (primitive) {
      case LOCK:
        return listNames(prefix, cursor, limit);
      case SEMAPHORE:
        return scanNames(prefix, cursor, limit, "}:sem:leases", List.of("}:sem:leases"));
      default:
        // one pattern for both sides: `:rw:` keys are the two sides', their tokens and waiting
        // marks, at most a few per name
        return scanNames(prefix, cursor, limit, "}:rw:*", List.of("}:rw:read", "}:rw:write"));
    }
  }

  /**
   * One SCAN step over the keys of the names that begin with the prefix and end with the glob
   * {@code match}, naming those that end with one of {@code suffixes} (each starts with the brace
   * that ends the name's hash tag); pages as {@link #listNames(String, String, int)} says.
   */
  private NamePage scanNames(
      String prefix, String cursor, int limit, String match, List<String> suffixes) {
    String scanCursor = cursor == null ? "0" : cursor;
    String after = null;
    if (cursor != null && cursor.startsWith("p")) {
      int colon = cursor.indexOf(':');
      scanCursor = colon < 0 ? "" : cursor.substring(1, colon);
      after = colon < 0 ? null : cursor.substring(colon + 1);
    }
    if (scanCursor.isEmpty() || !scanCursor.chars().allMatch(Character::isDigit)) {
      throw new IllegalArgumentException(
          "`cursor` was '" + cursor + "' but it is not one a listing of this backend returned");
    }
    String start = keys.owner(prefix);
    // the keys of a name N are {<namespace>N}<suffix>: match {<namespace><prefix>*}<suffix>
    String open = start.substring(0, start.length() - "}:owner".length());
    var step = node.scan(scanCursor, glob(open) + "*" + match, limit);
    java.util.TreeSet<String> names = new java.util.TreeSet<>();
    int from = open.length() - prefix.length();
    for (String key : step.getValue()) {
      for (String suffix : suffixes) {
        if (key.endsWith(suffix) && key.length() >= from + suffix.length()) {
          String name = key.substring(from, key.length() - suffix.length());
          if (after == null || name.compareTo(after) > 0) {
            names.add(name);
          }
          break;
        }
      }
    }
    if (names.size() > limit) {
      List<String> page = new ArrayList<>(names).subList(0, limit);
      return NamePage.of(page, "p" + scanCursor + ":" + page.get(limit - 1));
    }
    return NamePage.of(new ArrayList<>(names), "0".equals(step.getKey()) ? null : step.getKey());
  }

  /**
   * Reads the live leases of a semaphore, or of both sides of a read-write lock, with one read-only
   * script ({@link RedisScripts#SHARED_HOLDERS}): each lease's owner id, the rest of its lease in
   * the server's clock, and the token its grant drew (kept per owner by the acquire script; a lease
   * granted by a version that kept none is listed without a token). Expired leases are left out.
   */
  @Override
  public dev.locksmith.HeldLock inspectHolders(String name, Guarantees.Primitive primitive) {
    boolean semaphore = primitive == Guarantees.Primitive.SEMAPHORE;
    if (!semaphore && primitive != Guarantees.Primitive.READ_WRITE_LOCK) {
      throw new IllegalArgumentException(
          "`primitive` was " + primitive + " but it must be SEMAPHORE or READ_WRITE_LOCK");
    }
    List<String> pairs =
        semaphore
            ? List.of(keys.semaphoreLeases(name), keys.semaphoreTokens(name))
            : List.of(
                keys.writeLeases(name),
                keys.writeTokens(name),
                keys.readLeases(name),
                keys.readTokens(name));
    Object r = node.eval(RedisScripts.SHARED_HOLDERS, pairs, List.of());
    if (!(r instanceof List)) {
      throw new LockException(node.endpoint() + " answered the holders' read with " + r);
    }
    List<?> sides = (List<?>) r;
    for (int i = 0; i < sides.size(); i++) {
      List<LockState> states = holdersOf((List<?>) sides.get(i));
      if (!states.isEmpty()) {
        dev.locksmith.HeldLock.Kind kind =
            semaphore
                ? dev.locksmith.HeldLock.Kind.SEMAPHORE
                : i == 0 ? dev.locksmith.HeldLock.Kind.WRITE : dev.locksmith.HeldLock.Kind.READ;
        // a write side has one lease; should a second ever be live, the first is the holder
        return dev.locksmith.HeldLock.of(
            name, kind, kind == dev.locksmith.HeldLock.Kind.WRITE ? states.subList(0, 1) : states);
      }
    }
    return null;
  }

  /** The states of one side of a {@link RedisScripts#SHARED_HOLDERS} reply. */
  private static List<LockState> holdersOf(List<?> side) {
    List<LockState> states = new ArrayList<>(side.size() / 3);
    for (int j = 0; j + 2 < side.size(); j += 3) {
      LockState held =
          LockState.held()
              .withRemaining(Duration.ofMillis(Math.max(1, ((Number) side.get(j + 1)).longValue())))
              .withHolder(ownerOf(List.of(side.get(j))));
      long token = ((Number) side.get(j + 2)).longValue();
      states.add(token > 0 ? held.withFencingToken(token) : held);
    }
    return states;
  }

  /** Escapes the characters SCAN's MATCH gives a meaning: * ? [ ] and backslash. */
  private static String glob(String text) {
    StringBuilder b = new StringBuilder(text.length() + 8);
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
        b.append('\\');
      }
      b.append(c);
    }
    return b.toString();
  }

  private boolean releaseScript(String name, String ownerId) {
    Object r =
        node.eval(
            releaseScript, releaseKeys(keys, name), List.of(ownerId, keys.releasedChannel(name)));
    return Long.valueOf(1).equals(r);
  }

  /**
   * @return the KEYS of {@link RedisScripts#ACQUIRE_QUEUED} for a lock
   */
  static List<String> acquireKeys(RedisKeys keys, String name) {
    return List.of(
        keys.owner(name),
        keys.token(name),
        keys.fenceCounter(name),
        keys.legacyFence(name),
        keys.queue(name),
        keys.queueDeadlines(name));
  }

  /**
   * @return the KEYS of {@link RedisScripts#RELEASE_QUEUED} for a lock
   */
  static List<String> releaseKeys(RedisKeys keys, String name) {
    return List.of(keys.owner(name), keys.token(name), keys.queue(name));
  }

  /**
   * How long a waiter's queue entry lives without a poll: three recheck intervals (a waiter polls
   * at least once per interval), at least half a second. It bounds how long a waiter that vanished
   * without withdrawing can hold up a free lock.
   */
  private long queueEntryMillis() {
    return Math.max(MIN_QUEUE_ENTRY_MILLIS, 3 * context.recheck().toMillis());
  }

  @Override
  public void close() {
    try {
      if (subscriber != null) {
        subscriber.close();
      }
      shardLock.lock();
      try {
        closed = true;
      } finally {
        shardLock.unlock();
      }
      for (ReleaseSubscriber s : shardSubscribers.values()) {
        s.close();
      }
    } finally {
      node.close();
    }
  }

  @Override
  public String toString() {
    return "redis backend for " + node;
  }
}
