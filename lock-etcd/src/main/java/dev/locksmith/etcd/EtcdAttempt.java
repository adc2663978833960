package dev.locksmith.etcd;

import static dev.locksmith.etcd.CallerRunsExecutor.send;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.Poll;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import java.util.List;

/**
 * One acquisition of a lock, a semaphore permit or a side of a read-write lock: creates our key
 * once, then on every poll asks etcd whether a key with a lower create revision that we must not
 * pass is left ({@link QueueRule}). If one is, we wait for its delete through this client's queue
 * watch of the resource's range ({@link EtcdQueueWatches#listen}), which stays open from one wait
 * to the next while the client keeps waiting there; only the delete of the key we wait for wakes
 * us. A delete reaches us only if etcd registered that watch before our read was served, so a read
 * sent before the watch was confirmed is made again once it is (its created notice wakes a poll). A
 * semaphore of several permits watches its range itself ({@link #watchAhead}). Every grant follows
 * a read that found our own key still there, so a key deleted while we waited (lease expired,
 * revoked) is never reported as held (etcd issue 11456).
 */
final class EtcdAttempt implements LockAttempt, EtcdQueueWatches.QueueListener {
  private final EtcdBackend backend;
  private final String name;
  private final String ownerId;
  private final Runnable wake;
  private final QueueRule rule;

  /** What the messages call the resource, such as "lock 'a'". */
  private final String what;

  private EtcdBackend.Session session;

  /** Our key's suffix under this session; the key is {@code <lock prefix><lease>-<slot>}. */
  private EtcdBackend.Slot slot;

  private ByteSequence key;
  private EtcdBackend.KeyEntry entry;

  /** Create revision of our key; 0 until we know it exists. */
  private long myRevision;

  /** True once a create was sent whose outcome we may not have seen. */
  private boolean maybeCreated;

  /** The last create sent; still running when the wait for it was interrupted or timed out. */
  private java.util.concurrent.CompletableFuture<TxnResponse> createCall;

  /** The queue watch of our range that we listen to while we wait for one key, or null. */
  private EtcdQueueWatches.QueueWatch queue;

  /**
   * The key ahead of ours that we wait for (null while a read is on its way), and the revision it
   * was read at.
   */
  private volatile ByteSequence waitingFor;

  private volatile long readAt;

  /**
   * Deletes the queue watch delivered since our last read, in revision order: a read replays them
   * after it.
   */
  private final java.util.Queue<KeyValue> queueDeletes =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  private Watch.Watcher watcher;
  private ByteSequence watched;
  private volatile boolean watchBroken;

  /**
   * With a range watch ({@link #watchAhead}): the keys ahead of ours at the last read, with their
   * create revisions.
   */
  private volatile java.util.Map<ByteSequence, Long> ahead = java.util.Map.of();

  /**
   * With a range watch: deletes it delivered that no read has taken in yet (key and mod revision).
   */
  private final java.util.Queue<KeyValue> deletes =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  EtcdAttempt(EtcdBackend backend, String name, String ownerId, Runnable wake) {
    this(backend, name, Claim.exclusive(), ownerId, wake);
  }

  EtcdAttempt(EtcdBackend backend, String name, Claim claim, String ownerId, Runnable wake) {
    this.backend = backend;
    this.name = name;
    this.ownerId = ownerId;
    this.wake = wake;
    this.rule = QueueRule.of(backend.settings.prefix, name, claim);
    this.what = Claim.noun(claim.kind()) + " '" + name + "'";
  }

  @Override
  public Poll poll() throws InterruptedException {
    if (backend.endLeasePastTtl()) {
      return Poll.busy(java.time.Duration.ZERO);
    }
    for (int round = 0; round < 3; round++) {
      if (session != null && session.dead) {
        dropKey("its lease was lost while waiting");
      }
      KeyValue predecessor;
      long readRevision;
      List<GetResponse> answers;
      // whether this round's transaction created our key: it is then the grant if nothing is ahead
      boolean createdNow = false;
      // whether a delete after this round's read reaches us: the queue watch was registered before
      // we send it
      boolean covered = rule.watchesRange() == null && listenQueue(false);
      waitingFor = null;
      if (myRevision == 0) {
        if (session == null || session.dead) {
          session = backend.session();
          session.waiters.add(wake);
          slot = session.takeSlot(rule.slotName);
          key =
              KeyNames.bytes(
                  rule.keyPrefix
                      + Long.toHexString(session.leaseId)
                      + "-"
                      + Integer.toHexString(slot.index));
        }
        // Register before sending, so that the delete watch cannot miss our key's deletion. Until
        // etcd answers, a delete event at or below the revision seen so far is of an earlier key
        // of this name (one we released), not of ours.
        entry = new EtcdBackend.KeyEntry(ownerId, session);
        entry.createRevision = backend.seenRevision();
        backend.keys.put(key, entry);
        maybeCreated = true;
        // Read the keys ahead of ours in the same transaction, before the put.
        Op[] reads = rule.reads(0);
        Op[] then = java.util.Arrays.copyOf(reads, reads.length + 1);
        then[reads.length] =
            Op.put(
                key,
                KeyNames.bytes(ownerId),
                PutOption.builder().withLeaseId(session.leaseId).build());
        TxnResponse r;
        try {
          createCall =
              send(
                  () ->
                      backend
                          .client
                          .getKVClient()
                          .txn()
                          .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                          .Then(then)
                          .Else(Op.get(key, GetOption.DEFAULT))
                          .commit());
          // Awaited through a copy: an interrupt or a timeout cancels the copy, and abandon() can
          // still learn when the create itself is done.
          r =
              backend.calls.await(
                  () -> createCall.thenApply(x -> x),
                  backend.settings.requestTimeout,
                  "creating the key of " + what,
                  EtcdSettings.REQUEST_TIMEOUT);
        } catch (BackendUnavailableException e) {
          if (!EtcdCalls.describe(e).contains("requested lease not found")) {
            throw e;
          }
          // Our lease expired before the keep-alive thread noticed (a long pause): nothing was
          // created; end that session now and queue again on a new lease, in a new poll (the
          // core discards a grant made while the client's session changed).
          backend.leaseGone(session);
          dropKey(null);
          return Poll.busy(java.time.Duration.ZERO);
        }
        readRevision = r.getHeader().getRevision();
        backend.saw(readRevision);
        if (r.isSucceeded()) {
          myRevision = readRevision;
          entry.createRevision = myRevision;
          createdNow = true;
          answers = r.getGetResponses();
          predecessor = rule.blocker(name, answers);
        } else {
          // Our create went through earlier although we never saw the answer: adopt the key.
          List<KeyValue> kvs = r.getGetResponses().get(0).getKvs();
          myRevision = kvs.isEmpty() ? 0 : kvs.get(0).getCreateRevision();
          entry.createRevision = myRevision;
          continue;
        }
      } else {
        // Re-check that our key is still there (etcd issue 11456) and find the nearest key before
        // it.
        TxnResponse r =
            backend.calls.await(
                () ->
                    backend
                        .client
                        .getKVClient()
                        .txn()
                        .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(myRevision)))
                        .Then(rule.reads(myRevision))
                        .commit(),
                backend.settings.requestTimeout,
                "checking " + what,
                EtcdSettings.REQUEST_TIMEOUT);
        readRevision = r.getHeader().getRevision();
        backend.saw(readRevision);
        if (!r.isSucceeded()) {
          dropKey(null); // gone (lease expired, or deleted by someone): queue again at the back
          continue;
        }
        answers = r.getGetResponses();
        predecessor = rule.blocker(name, answers);
      }
      if (predecessor == null) {
        long token = myRevision;
        if (!createdNow && rule.grantWrites()) {
          // Another key may have been granted after ours was created: write the grant, so that
          // its revision, the token, is above every earlier grant's (our key stays in its place).
          TxnResponse g =
              backend.calls.await(
                  () ->
                      backend
                          .client
                          .getKVClient()
                          .txn()
                          .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(myRevision)))
                          .Then(
                              Op.put(
                                  key,
                                  KeyNames.bytes(ownerId),
                                  PutOption.builder().withLeaseId(session.leaseId).build()))
                          .commit(),
                  backend.settings.requestTimeout,
                  "granting " + what,
                  EtcdSettings.REQUEST_TIMEOUT);
          token = g.getHeader().getRevision();
          backend.saw(token);
          if (!g.isSucceeded()) {
            dropKey(null); // gone (lease expired, or deleted by someone): queue again at the back
            continue;
          }
        }
        EtcdBackend.KeyEntry e = entry;
        backend.deleteWatch.granted(e);
        if (e.deleted || session.dead) {
          e.held = false;
          dropKey(null);
          continue;
        }
        closeWatch();
        session.waiters.remove(wake);
        return Poll.grantedForSession(token, new EtcdBackend.Held(key, slot, e));
      }
      if (rule.watchesRange() != null) {
        watchAhead(answers.get(0).getKvs(), readRevision);
      } else {
        if (waitFor(predecessor.getKey(), readRevision)) {
          continue; // deleted since our read: read again
        }
        if (!covered && listenQueue(true)) {
          continue; // registered by now, maybe after our read was served: read again under it
        }
        // else the watch's created notice wakes a poll, whose read it covers
      }
      // A holder on a lease of its own (held without renewal, or a hold after release) ends with
      // that lease at the latest: look again by then even if no delete event comes.
      return Poll.busy(backend.leaseControl.untilFree(predecessor, backend.context.recheck()));
    }
    return Poll.busy(java.time.Duration.ZERO);
  }

  /**
   * Listens to this client's queue watch of our range: the one open, or (if {@code open}) a new
   * one. A watch started for each wait would cost a created notice and a read per wait, and etcd
   * registers a watch "from now" in its unsynced group, caught up only every 100 ms, when a write
   * lands between its reading of the current revision and the registration (lock-bench FINDINGS
   * 15): under contention that delayed about one hand-off in two hundred by up to 100 ms.
   *
   * @return whether etcd has registered the watch, so that every delete after a read sent from now
   *     on reaches us
   */
  private boolean listenQueue(boolean open) {
    if (queue != null && !queue.broken) {
      return queue.created;
    }
    if (queue != null) {
      backend.queueWatches.unlisten(queue, this);
    }
    queue = backend.queueWatches.listen(rule.readRange, this, open);
    return queue != null && queue.created;
  }

  /**
   * From now on a delete of {@code key} after {@code revision} wakes a poll.
   *
   * @return whether the queue watch already delivered such a delete (between our read and now)
   */
  private boolean waitFor(ByteSequence key, long revision) {
    readAt = revision;
    waitingFor =
        key; // set before the log is read: a delete logged after this wakes us in deleted()
    queueDeletes.removeIf(d -> d.getModRevision() <= revision);
    for (KeyValue d : queueDeletes) {
      if (d.getKey().equals(key)) {
        return true;
      }
    }
    return false;
  }

  /**
   * A key of our range was deleted: wakes a poll if it is the one we wait for, deleted after our
   * read.
   */
  @Override
  public void deleted(KeyValue kv) {
    queueDeletes.add(
        kv); // logged before the check: a read that sets waitingFor replays the log after
    long after = readAt;
    KeyValue head;
    while ((head = queueDeletes.peek()) != null && head.getModRevision() <= after) {
      queueDeletes.poll(); // seen by our last read, and so by every later one
    }
    ByteSequence key = waitingFor;
    if (key != null && key.equals(kv.getKey()) && kv.getModRevision() > after) {
      wake.run();
    }
  }

  /**
   * The queue watch was registered (a read now is covered by it) or failed (listen again): poll
   * again.
   */
  @Override
  public void recheck() {
    wake.run();
  }

  /**
   * For a semaphore of more than one permit: watches the semaphore's range for deletes, from etcd's
   * current revision (as {@link #watch}), and wakes a poll once fewer than its permits are left of
   * the keys that were ahead of ours at the last read ({@code kvs}, read at {@code readRevision}).
   * Keys are only added behind ours, so those are all the keys that can be ahead; a release of any
   * of them counts, whichever goes first. Deletes the watch delivered before this read was taken in
   * are counted against it too, if they came after the read.
   */
  private void watchAhead(List<KeyValue> kvs, long readRevision) {
    java.util.Map<ByteSequence, Long> keysAhead = new java.util.concurrent.ConcurrentHashMap<>();
    for (KeyValue kv : kvs) {
      keysAhead.put(kv.getKey(), kv.getCreateRevision());
    }
    ahead = keysAhead;
    deletes.removeIf(d -> d.getModRevision() <= readRevision);
    for (KeyValue d : deletes) {
      gone(keysAhead, d);
    }
    ByteSequence range = rule.watchesRange();
    if (watcher != null && !watchBroken && range.equals(watched)) {
      return;
    }
    closeWatch();
    watchBroken = false;
    watched = range;
    WatchOption option =
        WatchOption.builder().isPrefix(true).withNoPut(true).withCreateNotify(true).build();
    watcher =
        backend
            .client
            .getWatchClient()
            .watch(
                range,
                option,
                Watch.listener(
                    response -> {
                      if (response.isCreatedNotify()) {
                        wake.run(); // registered: read again, so a delete made before it started is
                        // not missed
                        return;
                      }
                      for (WatchEvent event : response.getEvents()) {
                        if (event.getEventType() == WatchEvent.EventType.DELETE) {
                          // logged before it is counted: a read that replaces the map replays the
                          // log after
                          deletes.add(event.getKeyValue());
                          gone(ahead, event.getKeyValue());
                        }
                      }
                    },
                    error -> {
                      watchBroken = true;
                      wake.run();
                    }));
  }

  /**
   * Counts a delete against the keys that were ahead of ours: only the key of that name that was
   * read (a delete after its create revision), once; wakes a poll when fewer than the permits are
   * left.
   */
  private void gone(java.util.Map<ByteSequence, Long> keysAhead, KeyValue deleted) {
    Long created = keysAhead.get(deleted.getKey());
    if (created != null
        && deleted.getModRevision() > created
        && keysAhead.remove(deleted.getKey(), created)
        && keysAhead.size() < rule.room()) {
      wake.run();
    }
  }

  private void closeWatch() {
    waitingFor = null;
    if (queue != null) {
      backend.queueWatches.unlisten(queue, this);
      queue = null;
    }
    queueDeletes.clear();
    if (watcher != null) {
      try {
        watcher.close();
      } catch (RuntimeException e) {
        // closing a broken watch; nothing to do
      }
      watcher = null;
      watched = null;
    }
    deletes.clear(); // a new watch is followed by a read, which takes in every delete before it
  }

  /**
   * Forgets our key (deleting it if it may still exist) so the next round creates it again, under
   * the same name while the session lives, else under a name of the new session.
   */
  private void dropKey(String deleteBecause) {
    closeWatch();
    if (key != null && deleteBecause != null && maybeCreated) {
      backend.deletes.deleteQuietly(key, session, deleteBecause, slot::free);
    } else if (key != null) {
      backend.keys.remove(key, entry);
    }
    myRevision = 0;
    maybeCreated = false;
    if (session != null && session.dead) {
      session.waiters.remove(wake);
      session = null;
      key = null;
    }
  }

  @Override
  public void abandon() {
    closeWatch();
    if (session != null) {
      session.waiters.remove(wake);
    }
    if (key != null && maybeCreated && !backend.isClosed()) {
      java.util.concurrent.CompletableFuture<TxnResponse> pending = createCall;
      if (pending != null && !pending.isDone()) {
        // An interrupt or a timeout left our create on its way. etcd serves each request of a
        // connection on its own, so a delete sent now could be applied before the create, and
        // the key would then stay on our kept-alive lease, blocking the lock: wait for it first.
        try {
          backend.calls.awaitUninterruptibly(
              () -> pending, backend.settings.requestTimeout, "finishing the create of " + what);
        } catch (RuntimeException e) {
          // its outcome stays unknown: delete anyway (retried in the background if that fails)
        }
      }
      // Timeout, interrupt, cancellation or error: delete our key, granted or not, so nothing is
      // left behind.
      backend.deletes.deleteQuietly(key, session, "withdrawing from " + what, slot::free);
    } else if (key != null) {
      backend.keys.remove(key, entry);
      slot.free();
    }
  }
}
