package dev.locksmith.etcd;

import dev.locksmith.BackendUnavailableException;
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
 * One acquisition: creates our key once, then on every poll asks etcd whether a key with a lower
 * create revision is left. If one is, it watches only the nearest such key for deletion, from
 * etcd's current revision (a watch from an older one lands in etcd's slow catch-up group), and
 * reads again once the watch is registered. Every grant follows a read that found our own key still there, so a key deleted
 * while we waited (lease expired, revoked) is never reported as held (etcd issue 11456).
 */
final class EtcdAttempt implements LockAttempt {
  private final EtcdBackend backend;
  private final String name;
  private final String ownerId;
  private final Runnable wake;
  private final ByteSequence lockPrefix;

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
  private Watch.Watcher watcher;
  private ByteSequence watched;
  private volatile boolean watchBroken;

  EtcdAttempt(EtcdBackend backend, String name, String ownerId, Runnable wake) {
    this.backend = backend;
    this.name = name;
    this.ownerId = ownerId;
    this.wake = wake;
    this.lockPrefix = KeyNames.bytes(KeyNames.lockPrefix(backend.settings.prefix, name));
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
      if (myRevision == 0) {
        if (session == null || session.dead) {
          session = backend.session();
          session.waiters.add(wake);
          slot = session.takeSlot(name);
          key = KeyNames.bytes(KeyNames.lockPrefix(backend.settings.prefix, name) + Long.toHexString(session.leaseId) + "-"
              + Integer.toHexString(slot.index));
        }
        // Register before sending, so that the delete watch cannot miss our key's deletion. Until
        // etcd answers, a delete event at or below the revision seen so far is of an earlier key
        // of this name (one we released), not of ours.
        entry = new EtcdBackend.KeyEntry(ownerId, session);
        entry.createRevision = backend.seenRevision();
        backend.keys.put(key, entry);
        maybeCreated = true;
        // The newest key before ours is our predecessor: read it in the same transaction, before the put.
        TxnResponse r;
        try {
          createCall = backend.client.getKVClient().txn()
              .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
              .Then(Op.get(lockPrefix, newestBefore(0)), Op.put(key, KeyNames.bytes(ownerId),
                  PutOption.builder().withLeaseId(session.leaseId).build()))
              .Else(Op.get(key, GetOption.DEFAULT))
              .commit();
          // Awaited through a copy: an interrupt or a timeout cancels the copy, and abandon() can
          // still learn when the create itself is done.
          r = backend.calls.await(createCall.thenApply(x -> x), backend.settings.requestTimeout,
              "creating the key of lock '" + name + "'", EtcdSettings.REQUEST_TIMEOUT);
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
          List<KeyValue> kvs = r.getGetResponses().get(0).getKvs();
          predecessor = kvs.isEmpty() ? null : kvs.get(0);
        } else {
          // Our create went through earlier although we never saw the answer: adopt the key.
          List<KeyValue> kvs = r.getGetResponses().get(0).getKvs();
          myRevision = kvs.isEmpty() ? 0 : kvs.get(0).getCreateRevision();
          entry.createRevision = myRevision;
          continue;
        }
      } else {
        // Re-check that our key is still there (etcd issue 11456) and find the nearest key before it.
        TxnResponse r = backend.calls.await(backend.client.getKVClient().txn()
            .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(myRevision)))
            .Then(Op.get(lockPrefix, newestBefore(myRevision)))
            .commit(), backend.settings.requestTimeout, "checking lock '" + name + "'", EtcdSettings.REQUEST_TIMEOUT);
        readRevision = r.getHeader().getRevision();
        backend.saw(readRevision);
        if (!r.isSucceeded()) {
          dropKey(null); // gone (lease expired, or deleted by someone): queue again at the back
          continue;
        }
        GetResponse g = r.getGetResponses().get(0);
        predecessor = g.getKvs().isEmpty() ? null : g.getKvs().get(0);
      }
      if (predecessor == null) {
        EtcdBackend.KeyEntry e = entry;
        backend.granted(e);
        if (e.deleted || session.dead) {
          e.held = false;
          dropKey(null);
          continue;
        }
        closeWatch();
        session.waiters.remove(wake);
        return Poll.grantedForSession(myRevision, new EtcdBackend.Held(key, slot, e));
      }
      watch(predecessor.getKey());
      // A holder on a lease of its own (held without renewal, or a hold after release) ends with
      // that lease at the latest: look again by then even if no delete event comes.
      return Poll.busy(backend.leaseControl.untilFree(predecessor, backend.context.recheck()));
    }
    return Poll.busy(java.time.Duration.ZERO);
  }

  /**
   * @return the newest key of the lock created before {@code revision} (any, if 0), with its
   *     value (an owner id, or a hold's) and lease
   */
  private static GetOption newestBefore(long revision) {
    GetOption.Builder b = GetOption.builder().isPrefix(true)
        .withSortField(GetOption.SortTarget.CREATE).withSortOrder(GetOption.SortOrder.DESCEND).withLimit(1);
    if (revision > 0) {
      b.withMaxCreateRevision(revision - 1);
    }
    return b.build();
  }

  /**
   * Watches the predecessor for deletion from etcd's current revision, never from an older one: a
   * watch that starts at or below the current revision joins etcd's unsynced group, which a loop
   * catches up only every 100 ms, so a release right after our read reached us up to 100 ms late
   * (the waiter p99 of lock-bench FINDINGS 12). A watch from the current revision is synced at once
   * and sees every later delete as it happens; a delete between our read and the watch's start is
   * found by reading again once etcd confirms the watch (its created notice wakes a poll).
   */
  private void watch(ByteSequence predecessor) {
    if (watcher != null && !watchBroken && predecessor.equals(watched)) {
      return; // already watching it: this poll was a wake-up by a peer, the recheck, or the watch's created notice
    }
    closeWatch();
    watchBroken = false;
    watched = predecessor;
    WatchOption option = WatchOption.builder().withNoPut(true).withCreateNotify(true).build();
    watcher = backend.client.getWatchClient().watch(predecessor, option, Watch.listener(response -> {
      if (response.isCreatedNotify()) {
        wake.run(); // registered: read again, so a delete made before it started is not missed
        return;
      }
      for (WatchEvent event : response.getEvents()) {
        if (event.getEventType() == WatchEvent.EventType.DELETE) {
          wake.run();
          return;
        }
      }
    }, error -> {
      watchBroken = true;
      wake.run();
    }));
  }

  private void closeWatch() {
    if (watcher != null) {
      try {
        watcher.close();
      } catch (RuntimeException e) {
        // closing a broken watch; nothing to do
      }
      watcher = null;
      watched = null;
    }
  }

  /**
   * Forgets our key (deleting it if it may still exist) so the next round creates it again, under
   * the same name while the session lives, else under a name of the new session.
   */
  private void dropKey(String deleteBecause) {
    closeWatch();
    if (key != null && deleteBecause != null && maybeCreated) {
      backend.deleteQuietly(key, session, deleteBecause, slot::free);
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
          backend.calls.awaitUninterruptibly(pending, backend.settings.requestTimeout, "finishing the create of lock '" + name + "'");
        } catch (RuntimeException e) {
          // its outcome stays unknown: delete anyway (retried in the background if that fails)
        }
      }
      // Timeout, interrupt, cancellation or error: delete our key, granted or not, so nothing is left behind.
      backend.deleteQuietly(key, session, "withdrawing from lock '" + name + "'", slot::free);
    } else if (key != null) {
      backend.keys.remove(key, entry);
      slot.free();
    }
  }
}
