package dev.locksmith.etcd;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Guarantees.Promise;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockState;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.NamePage;
import dev.locksmith.spi.Renewal;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.DeleteResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Locks on etcd. One etcd lease per client, kept alive by one thread, carries every key of the
 * client, so keeping 10,000 locks costs the same as keeping one. A lock is a key {@code
 * <prefix>/<name>/<lease>-<n>} created with that lease; the key with the lowest create revision
 * holds the lock, each waiter watches only the key just before its own (FIFO, no herd), and the
 * create revision is the fencing token. A lock held without auto-renew, and a hold after release,
 * move their key onto an etcd lease of its own ({@link EtcdLeaseControl}), so that etcd ends them
 * on its own clock even when this client is gone. Semaphores and read-write locks queue keys the
 * same way under ranges of their own ({@link KeyNames}, {@link QueueRule}): a permit is granted
 * while fewer keys than its permits are ahead of it, a writer when no key is, a reader when no
 * writer's key is (arrival order). Their token is the revision of the grant's write. The watch for
 * deleted keys (loss detection) is {@link EtcdDeleteWatch}, the waiters' watches are {@link
 * EtcdQueueWatches}, and deletes retried in the background are {@link EtcdDeleteRetries}. Listing
 * reads key names in key order, a range per primitive; the holders of a semaphore or a read-write
 * lock are told from its waiters by {@link EtcdHolders}.
 */
final class EtcdBackend implements LockBackend {
  private static final Logger LOG = LoggerFactory.getLogger(EtcdBackend.class);

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
              "a holder paused past the lease TTL loses its key when etcd expires the lease; the"
                  + " next holder's key has a higher create revision")
          .promise(
              Fault.HOLDER_CRASH,
              Promise.SAFE,
              "a crashed client stops its keep-alive; etcd deletes its keys when the lease TTL runs"
                  + " out, and a lock held without renewal (or a hold after release) when its own"
                  + " etcd lease does")
          .promise(
              Fault.PAUSE_DURING_ACQUIRE,
              Promise.SAFE_WITH_FENCING,
              "our key is re-checked by a linearizable read after every wait (etcd issue 11456),"
                  + " and its create revision fences a late holder")
          .promise(
              Fault.SERVER_RESTART,
              Promise.SAFE,
              "etcd writes keys and revisions to its WAL before answering, so a restarted member"
                  + " keeps them")
          .promise(
              Fault.SERVER_PAUSE,
              Promise.UNAVAILABLE,
              "nothing can be acquired while etcd does not answer; holders are told their leases"
                  + " are lost once keep-alive fails past the TTL")
          .promise(
              Fault.PARTITION,
              Promise.SAFE_WITH_FENCING,
              "a cut-off holder is reported lost when keep-alive fails past the TTL, about when"
                  + " etcd frees its keys; fence with the token")
          .promise(
              Fault.LEADER_FAILOVER,
              Promise.SAFE,
              "Raft keeps every acknowledged write, and a new leader extends leases rather than"
                  + " dropping them")
          .promise(
              Fault.CLOCK_JUMP,
              Promise.SAFE,
              "etcd times leases with its monotonic clock and the client times keep-alive with"
                  + " System.nanoTime")
          .promise(
              Fault.RELEASE_AFTER_EXPIRY,
              Promise.SAFE,
              "release deletes only our own key: its name carries our lease and is not reused"
                  + " before it is deleted; a new holder has a key of its own")
          .promise(
              Fault.AMBIGUOUS_ACQUIRE,
              Promise.SAFE,
              "an abandoned attempt deletes its own key whether or not its create reached etcd")
          .promise(
              Fault.TOKEN_MONOTONICITY,
              Promise.SAFE,
              "the token is the key's create revision (for a permit or a read-write side, the"
                  + " revision of the grant's write), from etcd's cluster-wide revision counter,"
                  + " which never goes back")
          .build();

  final EtcdSettings settings;
  final BackendContext context;
  final Client client;

  /**
   * The executor jetcd starts calls on ({@link CallerRunsExecutor}); jetcd leaves it running when
   * closed.
   */
  private final ExecutorService jetcdExecutor;

  final EtcdCalls calls;
  final EtcdLeaseControl leaseControl = new EtcdLeaseControl(this);
  final EtcdDeleteWatch deleteWatch = new EtcdDeleteWatch(this);
  final EtcdQueueWatches queueWatches = new EtcdQueueWatches(this);
  final EtcdDeleteRetries deletes = new EtcdDeleteRetries(this);
  private final EtcdLockSets sets = new EtcdLockSets(this);
  private final EtcdHolders holders = new EtcdHolders(this);
  private final ScheduledExecutorService keeper;
  private final ReentrantLock sessionLock = new ReentrantLock();
  private volatile Session session;

  /**
   * The highest etcd revision this client has seen in an answer or a watch event. A key about to be
   * created gets a revision above it, so a delete event at or below it is of an earlier key of the
   * same name (key names are used again, see {@link Session#takeSlot}).
   */
  private final AtomicLong seenRevision = new AtomicLong();

  private final AtomicBoolean closed = new AtomicBoolean();

  /** Every key this client created and has not deleted, for loss detection. */
  final Map<ByteSequence, KeyEntry> keys = new ConcurrentHashMap<>();

  /**
   * How many delete events the watch delivered (for tests and the bench: each costs the server and
   * us a message).
   */
  final AtomicLong deleteEvents = new AtomicLong();

  /**
   * How long a key is held before the watch for deleted keys covers it. Most locks are given back
   * sooner, and a watch open all the time receives an event for every release under the prefix,
   * this client's own included (one message per release, to every client, measured in lock-bench
   * FINDINGS 11); a release tells by itself whether the key was still ours. A key deleted behind a
   * holder's back is reported at most about this long plus etcd's catch-up of an older start
   * revision (100 ms) later than with a watch always open.
   */
  static final Duration WATCH_DELAY = Duration.ofMillis(50);

  /**
   * How long a queue watch ({@link EtcdQueueWatches#listen}) stays open once no attempt of this
   * client waits on its range. A client that waits on a lock again and again (its threads contend
   * for it) keeps one watch open instead of creating one per wait: etcd registers a new watch "from
   * now" with the revision it read just before, so a write committed in between puts the watch in
   * its unsynced group, whose events a loop delivers only every 100 ms (lock-bench FINDINGS 15).
   */
  static final Duration QUEUE_WATCH_LINGER = Duration.ofSeconds(1);

  /**
   * How many queue watches this client opened (for tests and the bench: each costs etcd a watch and
   * a created notice).
   */
  final AtomicLong queueWatchesOpened = new AtomicLong();

  /** One etcd lease and the keep-alive state of it. */
  final class Session {
    final long leaseId;
    final long ttlNanos;
    volatile long lastOkNanos;
    volatile boolean inDoubt;
    volatile boolean dead;
    final Set<Runnable> waiters = ConcurrentHashMap.newKeySet();

    /** Per lock name, the key suffixes in use by this lease's attempts. */
    private final Map<String, java.util.BitSet> slots = new ConcurrentHashMap<>();

    Session(long leaseId, long ttlSeconds, long grantedAt) {
      this.leaseId = leaseId;
      this.ttlNanos = TimeUnit.SECONDS.toNanos(ttlSeconds);
      this.lastOkNanos = grantedAt;
    }

    /**
     * Picks the lowest key suffix of this lease for a lock name that no attempt uses. Key names are
     * used again once their key is known to be deleted: etcd keeps every key name ever written in
     * its in-memory index until the history is compacted, and a lock's prefix range walks all of
     * them, so a new name per acquisition made every acquire slower (measured: p50 1.6 ms to 2.8 ms
     * over 16,000 acquisitions). etcd's own lock service uses one key per lease for the same
     * reason. A suffix whose delete failed stays taken until it succeeds.
     */
    Slot takeSlot(String name) {
      int[] taken = new int[1];
      slots.compute(
          name,
          (n, used) -> {
            java.util.BitSet u = used == null ? new java.util.BitSet() : used;
            taken[0] = u.nextClearBit(0);
            u.set(taken[0]);
            return u;
          });
      return new Slot(this, name, taken[0]);
    }
  }

  /** One key suffix taken by one attempt; freed once, when its key is known to be gone. */
  static final class Slot {
    final Session session;
    final String name;
    final int index;
    private final AtomicBoolean freed = new AtomicBoolean();

    Slot(Session session, String name, int index) {
      this.session = session;
      this.name = name;
      this.index = index;
    }

    /** The key with this suffix is deleted (or was never created): another attempt may use it. */
    void free() {
      if (freed.compareAndSet(false, true)) {
        session.slots.computeIfPresent(
            name,
            (n, used) -> {
              used.clear(index);
              return used.isEmpty() ? null : used;
            });
      }
    }
  }

  /** A key of ours: whose it is, and whether it holds the lock or was deleted. */
  static final class KeyEntry {
    final String ownerId;
    final Session session;

    /**
     * Create revision once known, before that a revision seen before the create was sent: a delete
     * at or below it was of an earlier key of the same name.
     */
    volatile long createRevision;

    volatile boolean held;

    /** {@link System#nanoTime()} of the grant. */
    volatile long heldSince;

    volatile boolean deleted;

    /**
     * The etcd lease of its own that the key was moved to by {@link #extend}, 0 while it hangs on
     * the session's lease, {@link #ENDED} once released or given up (a lease moved in after that is
     * revoked at once).
     */
    final AtomicLong ownLease = new AtomicLong();

    KeyEntry(String ownerId, Session session) {
      this.ownerId = ownerId;
      this.session = session;
    }
  }

  /**
   * {@link KeyEntry#ownLease} of a key released or given up: no lease of its own is wanted any
   * more.
   */
  static final long ENDED = -1;

  /** What a grant hands back to the core, for release. */
  static final class Held {
    final ByteSequence key;

    /** The key's suffix, and with it the session (etcd lease) the key hangs on. */
    final Slot slot;

    /** The key's entry, also after it left {@link #keys}: it knows the key's own etcd lease. */
    final KeyEntry entry;

    Held(ByteSequence key, Slot slot, KeyEntry entry) {
      this.key = key;
      this.slot = slot;
      this.entry = entry;
    }
  }

  EtcdBackend(
      EtcdSettings settings, BackendContext context, Client client, ExecutorService jetcdExecutor) {
    this.settings = settings;
    this.context = context;
    this.client = client;
    this.jetcdExecutor = jetcdExecutor;
    this.calls = new EtcdCalls(settings);
    this.keeper =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "locksmith-etcd-keepalive-" + context.clientId());
              t.setDaemon(true);
              return t;
            });
  }

  /**
   * Grants the client's lease and starts the watch and the keep-alive: the connectivity check of
   * open().
   *
   * @param openedAt when open() began ({@link System#nanoTime()}): building the client counts
   *     against the connect timeout too, so that a failed connect takes what its message states
   */
  void start(long openedAt) throws InterruptedException {
    long t0 = System.nanoTime();
    long left = Durations.toNanosSaturated(settings.connectTimeout) - (t0 - openedAt);
    var grant =
        calls.await(
            () -> client.getLeaseClient().grant(settings.ttlSeconds()),
            left,
            settings.connectTimeout,
            "granting a lease",
            EtcdSettings.CONNECT_TIMEOUT);
    session = new Session(grant.getID(), Math.max(1, grant.getTTL()), t0);
    deleteWatch.watchedUpTo(grant.getHeader().getRevision());
    long delay = WATCH_DELAY.toNanos();
    keeper.scheduleWithFixedDelay(deleteWatch::watchHeldKeys, delay, delay, TimeUnit.NANOSECONDS);
    long period = Math.max(TimeUnit.MILLISECONDS.toNanos(100), session.ttlNanos / 3);
    keeper.scheduleWithFixedDelay(this::keepAlive, period, period, TimeUnit.NANOSECONDS);
    LOG.debug("connected to {} with {} (TTL {}s)", settings.describe(), session, grant.getTTL());
  }

  @Override
  public Guarantees guarantees() {
    return GUARANTEES;
  }

  @Override
  public boolean renewsBySession() {
    return true;
  }

  // ------------------------------------------------------------------ the lease

  /**
   * @return the live session, granting a new lease if the last one was lost
   */
  Session session() throws InterruptedException {
    Session s = session;
    if (s != null && !s.dead) {
      return s;
    }
    sessionLock.lockInterruptibly();
    try {
      s = session;
      if (s != null && !s.dead) {
        return s;
      }
      if (closed.get()) {
        throw new BackendUnavailableException(
            "the etcd backend for " + settings.describe() + " is closed");
      }
      long t0 = System.nanoTime();
      var grant =
          calls.await(
              () -> client.getLeaseClient().grant(settings.ttlSeconds()),
              settings.requestTimeout,
              "granting a new lease",
              EtcdSettings.REQUEST_TIMEOUT);
      s = new Session(grant.getID(), Math.max(1, grant.getTTL()), t0);
      session = s;
      LOG.info("{}: granted {} after the previous lease was lost", settings.describe(), s);
      return s;
    } finally {
      sessionLock.unlock();
    }
  }

  private void keepAlive() {
    try {
      keepAliveOnce();
    } finally {
      if (deletes.pending() && !closed.get()) {
        deletes.retryDeletes();
      }
    }
  }

  private void keepAliveOnce() {
    Session s = session;
    if (s == null || s.dead || closed.get()) {
      return;
    }
    long sent = System.nanoTime();
    // Whatever etcd would answer now, the core has reported this lease's locks lost at its
    // deadline (the same deadline it got from us): keeping the lease would keep keys nobody
    // releases.
    if (endIfPastTtl(s, sent)) {
      return;
    }
    Duration timeout =
        Duration.ofNanos(
            Math.max(
                TimeUnit.MILLISECONDS.toNanos(100),
                Math.min(s.ttlNanos / 3, settings.requestTimeout.toNanos())));
    var call = client.getLeaseClient().keepAliveOnce(s.leaseId);
    try {
      LeaseKeepAliveResponse r = call.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
      if (r.getTTL() <= 0) {
        leaseGone(s);
        return;
      }
      s.lastOkNanos = sent;
      if (s.inDoubt) {
        s.inDoubt = false;
        LOG.info("{}: keep-alive of {} works again", settings.describe(), s);
        for (KeyEntry e : keys.values()) {
          if (e.held && e.session == s) {
            context.leaseValidUntil(e.ownerId, Long.MAX_VALUE);
          }
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      call.cancel(true);
      Throwable cause = e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
      if (EtcdCalls.leaseNotFound(cause)) {
        leaseGone(s);
        return;
      }
      long validUntil = s.lastOkNanos + s.ttlNanos;
      if (System.nanoTime() - validUntil >= 0) {
        lose(
            s,
            "keep-alive of "
                + s
                + " failed for longer than its TTL of "
                + Durations.format(Duration.ofNanos(s.ttlNanos))
                + ": "
                + (cause instanceof java.util.concurrent.TimeoutException
                    ? "no answer"
                    : EtcdCalls.describe(cause)));
        return;
      }
      if (!s.inDoubt) {
        LOG.warn(
            "{}: keep-alive of {} failed; its locks count as held for at most {} more: {}",
            settings.describe(),
            s,
            Durations.format(Duration.ofNanos(validUntil - System.nanoTime())),
            cause instanceof java.util.concurrent.TimeoutException
                ? "no answer"
                : EtcdCalls.describe(cause));
      }
      s.inDoubt = true;
      for (KeyEntry entry : keys.values()) {
        if (entry.held && entry.session == s) {
          context.leaseValidUntil(entry.ownerId, validUntil);
        }
      }
    }
  }

  /** etcd answered that a session's lease does not exist (it expired before keep-alive noticed). */
  void leaseGone(Session s) {
    lose(s, s + " is gone from etcd (it expired or was revoked)");
  }

  /**
   * @return whether the lease went a whole TTL without a successful keep-alive: the moment the core
   *     stops counting its locks as held, and after which etcd may expire it at any time
   */
  private static boolean pastTtl(Session s, long now) {
    return now - (s.lastOkNanos + s.ttlNanos) >= 0;
  }

  /**
   * Ends the client's lease if it went a TTL without a successful keep-alive. The core has already
   * reported its locks lost, and etcd may drop it at any moment: a key created on it now could be
   * taken away right after it was granted. Called before each poll; the keep-alive thread would
   * notice too, but only at its next turn.
   *
   * @return whether it ended the lease (the poll must then start over: the core discards a grant
   *     made while the client's session changed)
   */
  boolean endLeasePastTtl() {
    Session s = session;
    return s != null && endIfPastTtl(s, System.nanoTime());
  }

  private boolean endIfPastTtl(Session s, long now) {
    if (s.dead || !pastTtl(s, now)) {
      return false;
    }
    lose(
        s,
        "keep-alive of "
            + s
            + " has not succeeded for longer than its TTL of "
            + Durations.format(Duration.ofNanos(s.ttlNanos)));
    return true;
  }

  /**
   * The lease is lost: every lock on it is reported lost, and the next attempt grants a new lease.
   */
  private void lose(Session s, String detail) {
    synchronized (s) { // the keep-alive thread and an acquiring thread may both find it lost
      if (s.dead) {
        return;
      }
      s.dead = true;
    }
    LOG.warn("{}: {}", settings.describe(), detail);
    context.allLeasesLost(detail);
    for (KeyEntry e : keys.values()) {
      if (e.session == s && e.held) {
        context.leaseLost(e.ownerId, LeaseLostException.Reason.SESSION_LOST, detail);
      }
    }
    // The core has forgotten these leases: nothing will release them, and etcd drops the keys with
    // the lease,
    // or with the lease of their own that extend gave them.
    keys.values()
        .removeIf(
            e -> {
              if (e.session == s && e.held) {
                leaseControl.endOwnLease(e);
                return true;
              }
              return false;
            });
    s.waiters.forEach(Runnable::run);
    // A grant returned just before the loss but registered after it is caught by the core's session
    // epoch.
    // If etcd still has the lease (a long pause on our side), free its keys now rather than after
    // the TTL.
    client
        .getLeaseClient()
        .revoke(s.leaseId)
        .orTimeout(settings.requestTimeout.toMillis(), TimeUnit.MILLISECONDS)
        .exceptionally(e -> null);
  }

  /**
   * Runs a task that does not block on the keep-alive thread after a delay; dropped on close and
   * abandon.
   */
  void schedule(Runnable task, long delayNanos) {
    try {
      keeper.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // closing
    }
  }

  // ------------------------------------------------------------------ locking

  @Override
  public LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake) {
    return new EtcdAttempt(this, name, ownerId, wake);
  }

  /**
   * A semaphore permit or a side of a read-write lock queues a key like a lock's, under a range of
   * its own ({@link KeyNames}), and waits while a key it must not pass is ahead of it ({@link
   * QueueRule}); its lease then lives, is lost, extended and released as a lock's.
   */
  @Override
  public LockAttempt attempt(
      String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
    return new EtcdAttempt(this, name, claim, ownerId, wake);
  }

  /** A set of up to 64 names in one transaction: see {@link EtcdLockSets}. */
  @Override
  public List<dev.locksmith.spi.Poll> acquireAll(
      List<String> names, List<String> ownerIds, Duration lease) throws InterruptedException {
    return sets.acquireAll(names, ownerIds);
  }

  /** A set's locks deleted in one transaction (64 to a transaction): see {@link EtcdLockSets}. */
  @Override
  public List<Boolean> releaseAll(List<BackendLease> leases) {
    List<Boolean> ours = sets.releaseAll(leases);
    return ours != null ? ours : LockBackend.super.releaseAll(leases);
  }

  /** Notes a revision etcd answered with. */
  void saw(long revision) {
    seenRevision.accumulateAndGet(revision, Math::max);
  }

  /**
   * @return a revision below that of any key created from now on
   */
  long seenRevision() {
    return seenRevision.get();
  }

  @Override
  public List<Renewal> renew(List<BackendLease> leases) {
    // Never called: renewsBySession() is true, and the keep-alive thread renews the one lease.
    List<Renewal> out = new ArrayList<>(leases.size());
    leases.forEach(l -> out.add(Renewal.renewed()));
    return out;
  }

  /**
   * Moves the key onto an etcd lease of its own with the new lease rounded up to whole seconds, if
   * it is still ours; see {@link EtcdLeaseControl}.
   */
  @Override
  public boolean extend(BackendLease lease, Duration newLease) {
    return leaseControl.extend(lease, newLease);
  }

  /**
   * Moves the key onto an etcd lease of {@code keep} rounded up to whole seconds, under a value
   * that is nobody's owner id, if it is still ours; this client deletes it after {@code keep} while
   * it lives. See {@link EtcdLeaseControl}.
   */
  @Override
  public boolean releaseAfter(BackendLease lease, Duration keep) {
    if (!lease.claim().isExclusive()) {
      throw new UnsupportedOperationException(
          "releaseAfter is for exclusive locks; " + lease + " is not one");
    }
    return leaseControl.releaseAfter(lease, keep);
  }

  @Override
  public boolean release(BackendLease lease) {
    Held held = (Held) lease.state();
    keys.remove(held.key, held.entry);
    held.entry.held = false;
    // A lock's key is deleted plainly, no compare: nobody else writes a key of this name. It
    // carries our lease, which only this client uses, and its suffix stays ours until the key is
    // known deleted, so the key here is the one we created, or none (lease expired or revoked). A
    // transaction comparing the create revision first measured about a third more etcd CPU per
    // acquire + release (lock-bench FINDINGS 9).
    try {
      boolean deleted;
      if (lease.claim().isExclusive()) {
        DeleteResponse r =
            calls.awaitUninterruptibly(
                () -> client.getKVClient().delete(held.key),
                settings.requestTimeout,
                "releasing lock '" + lease.name() + "'");
        saw(r.getHeader().getRevision());
        deleted = r.getDeleted() > 0;
      } else {
        // A permit's or a side's is compared with its create revision: a release delayed or sent
        // twice must free nothing once the key's name is in use again (kit rules 18.2, 19.9), and
        // the permit it would free is one any waiter may take at once.
        TxnResponse r =
            calls.awaitUninterruptibly(
                () ->
                    client
                        .getKVClient()
                        .txn()
                        .If(
                            new Cmp(
                                held.key,
                                Cmp.Op.EQUAL,
                                CmpTarget.createRevision(held.entry.createRevision)))
                        .Then(Op.delete(held.key, DeleteOption.DEFAULT))
                        .commit(),
                settings.requestTimeout,
                "releasing " + Claim.noun(lease.claim().kind()) + " '" + lease.name() + "'");
        saw(r.getHeader().getRevision());
        deleted = r.isSucceeded() && r.getDeleteResponses().get(0).getDeleted() > 0;
      }
      // Deleted now, or gone before (expired, revoked): either way no key of ours is left under
      // this name.
      held.slot.free();
      return deleted;
    } catch (RuntimeException e) {
      // Our key would otherwise stay on a lease we keep alive, and block the lock for good.
      deletes.retryLater(held.key, held.slot.session, held.slot::free);
      throw e;
    } finally {
      // A lease of its own that extend gave the key: revoking it also deletes a key the delete
      // missed.
      leaseControl.endOwnLease(held.entry);
    }
  }

  /**
   * The holder is the key under the lock's prefix with the lowest create revision (the token); its
   * value is the holder's owner id, or a hold's value during a hold after release (held). One range
   * read. The rest of the holder's lease is not reported: a renewed lock's key lives on the holding
   * client's etcd lease, which that client keeps alive whatever the lock's own lease, so its TTL
   * says how long the lock would outlive a vanished client, not when the holder's lease ends (kit
   * rule 16.4); a key on a lease of its own would be told in whole seconds only.
   */
  @Override
  public LockState inspect(String name) {
    var got = contenders(name, "reading lock '" + name + "'");
    if (got.getKvs().isEmpty()) {
      return LockState.free();
    }
    KeyValue kv = got.getKvs().get(0);
    // the range's count is every key under the lock's prefix: the holder's and one per waiter
    return LockState.held()
        .withFencingToken(kv.getCreateRevision())
        .withHolder(kv.getValue().toString(java.nio.charset.StandardCharsets.UTF_8))
        .withWaiting((int) Math.max(0, Math.min(Integer.MAX_VALUE, got.getCount() - 1)));
  }

  /**
   * @return the holder's key of a lock: the one under its prefix with the lowest create revision
   *     (one range read); null if the lock is free
   */
  private KeyValue holderKey(String name, String what) {
    var got = contenders(name, what);
    return got.getKvs().isEmpty() ? null : got.getKvs().get(0);
  }

  /**
   * @return one range read of a lock's keys: the oldest (the holder's), and the count of them all
   */
  private io.etcd.jetcd.kv.GetResponse contenders(String name, String what) {
    ByteSequence prefix = KeyNames.bytes(KeyNames.lockPrefix(settings.prefix, name));
    GetOption oldest =
        GetOption.builder()
            .isPrefix(true)
            .withSortField(GetOption.SortTarget.CREATE)
            .withSortOrder(GetOption.SortOrder.ASCEND)
            .withLimit(1)
            .build();
    return calls.awaitUninterruptibly(
        () -> client.getKVClient().get(prefix, oldest), settings.requestTimeout, what);
  }

  /**
   * One etcd watch of the lock's prefix, puts and deletes: every change ({@link EtcdHolderWatch}).
   */
  @Override
  public dev.locksmith.spi.HolderWatch watchHolder(String name, Runnable changed) {
    ByteSequence prefix = KeyNames.bytes(KeyNames.lockPrefix(settings.prefix, name));
    return new EtcdHolderWatch(this, prefix, changed).open();
  }

  /**
   * Deletes the holder's key (the oldest under the lock's prefix), only if it is still the key read
   * (same create revision): the next waiter's key is next in line, and its create revision, the
   * next token, is higher. The holder sees its key gone as it does a revoked lock.
   */
  @Override
  public boolean breakLock(String name) {
    KeyValue kv = holderKey(name, "reading lock '" + name + "' to break it");
    if (kv == null) {
      return false;
    }
    TxnResponse r =
        calls.awaitUninterruptibly(
            () ->
                client
                    .getKVClient()
                    .txn()
                    .If(
                        new Cmp(
                            kv.getKey(),
                            Cmp.Op.EQUAL,
                            CmpTarget.createRevision(kv.getCreateRevision())))
                    .Then(Op.delete(kv.getKey(), DeleteOption.DEFAULT))
                    .commit(),
            settings.requestTimeout,
            "breaking lock '" + name + "'");
    return r.isSucceeded();
  }

  /**
   * A range read, keys only, in key order, of the keys of locks whose names begin with the prefix
   * ({@code <prefix>/<encoded name>/...}: an encoded prefix is a prefix of the encoded name). The
   * cursor is the key the next page starts from: just past the last name's keys, so a name's
   * waiters' keys do not list it again on the next page.
   */
  @Override
  public NamePage listNames(String prefix, String cursor, int limit) {
    return listUnder(settings.prefix + "/", prefix, cursor, limit, "locks");
  }

  /**
   * As {@link #listNames(String, String, int)}, in the range of the semaphores ({@code
   * <prefix>/!sem/<encoded name>/...}) or of the read-write locks ({@code <prefix>/!rw/...}; see
   * {@link KeyNames}). A name's keys are its holders' and its waiters': {@link #inspectHolders}
   * tells them apart.
   */
  @Override
  public NamePage listNames(
      String prefix, String cursor, int limit, Guarantees.Primitive primitive) {
    switch (primitive) {
      case SEMAPHORE:
        return listUnder(settings.prefix + "/!sem/", prefix, cursor, limit, "semaphores");
      case READ_WRITE_LOCK:
        return listUnder(settings.prefix + "/!rw/", prefix, cursor, limit, "read-write locks");
      default:
        return listNames(prefix, cursor, limit);
    }
  }

  /**
   * The holders of a semaphore or a read-write lock, read without writing anything: see {@link
   * EtcdHolders}.
   */
  @Override
  public dev.locksmith.HeldLock inspectHolders(String name, Guarantees.Primitive primitive) {
    return holders.inspect(name, primitive);
  }

  /**
   * One page of the names whose keys are under {@code root} ({@code <root><encoded name>/...}),
   * keys only, in key order, at most {@code limit} keys read.
   */
  private NamePage listUnder(String root, String prefix, String cursor, int limit, String what) {
    String range = root + KeyNames.encode(prefix);
    String end =
        range.substring(0, range.length() - 1) + (char) (range.charAt(range.length() - 1) + 1);
    // encoded names begin with '%', '-', '.', '_', a letter or a digit, all above the '!' of the
    // semaphores' and read-write locks' segments: a listing of every name under the locks' root
    // starts past those
    String from = cursor != null ? cursor : prefix.isEmpty() ? root + "%" : range;
    if (!from.startsWith(root) || from.compareTo(range) < 0) {
      throw new IllegalArgumentException(
          "`cursor` was '" + cursor + "' but it is not one a listing of '" + prefix + "' returned");
    }
    GetOption option =
        GetOption.builder()
            .withRange(KeyNames.bytes(end))
            .withKeysOnly(true)
            .withSortField(GetOption.SortTarget.KEY)
            .withSortOrder(GetOption.SortOrder.ASCEND)
            .withLimit(limit)
            .build();
    var got =
        calls.awaitUninterruptibly(
            () -> client.getKVClient().get(KeyNames.bytes(from), option),
            settings.requestTimeout,
            "listing " + what + " under '" + prefix + "'");
    List<String> names = new ArrayList<>();
    String last = null;
    for (var kv : got.getKvs()) {
      String key = kv.getKey().toString(java.nio.charset.StandardCharsets.UTF_8);
      int slash = key.indexOf('/', root.length());
      if (slash < 0 || key.startsWith("!", root.length())) {
        last = key + "\u0000"; // a semaphore's or read-write lock's key, or none of ours
        continue;
      }
      String encoded = key.substring(root.length(), slash);
      String name = KeyNames.decode(encoded);
      if (name != null && (names.isEmpty() || !name.equals(names.get(names.size() - 1)))) {
        names.add(name); // once, though its holders and waiters have a key each
      }
      last = root + encoded + "0"; // '0' follows '/': past every key of this name
    }
    return NamePage.of(names, got.isMore() && last != null ? last : null);
  }

  // ------------------------------------------------------------------ closing

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    keeper.shutdownNow();
    closeWatcher();
    Session s = session;
    if (s != null && !s.dead) {
      try {
        // Revoking deletes every key still on the lease: waiters' keys too, at once.
        calls.awaitUninterruptibly(
            () -> client.getLeaseClient().revoke(s.leaseId),
            settings.requestTimeout,
            "revoking the lease");
      } catch (RuntimeException e) {
        LOG.warn(
            "{}: revoking {} on close failed; its keys go when its TTL ends: {}",
            settings.describe(),
            s,
            e.getMessage());
      }
    }
    closeClient();
  }

  /** Closes jetcd's client, then the executor it was given, which jetcd leaves running. */
  private void closeClient() {
    try {
      client.close();
    } finally {
      jetcdExecutor.shutdownNow();
    }
  }

  @Override
  public void abandon() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    // As a crash: no revoke, no deletes; etcd frees the keys when the lease TTL runs out.
    keeper.shutdownNow();
    closeWatcher();
    closeClient();
  }

  /**
   * After a failed connect: shuts down as {@link #abandon()}, but closes jetcd's client on a thread
   * of its own, so that the caller's failure is not held up by the channels' shutdown (on a loaded
   * machine that took a few hundred ms more than the connect timeout the message states).
   */
  void abandonAfterFailedConnect() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    keeper.shutdownNow();
    closeWatcher();
    Thread closer = new Thread(this::closeClient, "locksmith-etcd-close-" + context.clientId());
    closer.setDaemon(true);
    closer.start();
  }

  private void closeWatcher() {
    deleteWatch.close();
    queueWatches.closeAll();
  }

  /**
   * @return whether the watch for deleted keys is open (for tests)
   */
  boolean deleteWatchOpen() {
    return deleteWatch.isOpen();
  }

  /**
   * @return whether this client has a queue watch open on {@code range} (for tests)
   */
  boolean queueWatchOpen(ByteSequence range) {
    return queueWatches.isOpen(range);
  }

  /**
   * @return whether this client's queue watch on {@code range} is open and etcd registered it (for
   *     tests)
   */
  boolean queueWatchRegistered(ByteSequence range) {
    return queueWatches.isRegistered(range);
  }

  boolean isClosed() {
    return closed.get();
  }

  @Override
  public String toString() {
    return settings.describe() + " " + settings.prefix;
  }
}
