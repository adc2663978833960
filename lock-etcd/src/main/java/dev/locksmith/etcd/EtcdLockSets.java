package dev.locksmith.etcd;

import static dev.locksmith.etcd.CallerRunsExecutor.send;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Poll;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.PutOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Lock sets on etcd in one transaction each way. Taking a set: one compare per name that no key is
 * under the name's prefix (no holder, no waiter, no hold after release: {@link RangeCompares}),
 * then one put per name of the key a single acquire would create, on the client's lease. All keys
 * are created at the transaction's revision, which is every name's token: above every earlier key
 * of every name. A busy set writes nothing. Releasing: one transaction of deletes, as {@link
 * EtcdBackend#release} deletes one lock's key.
 *
 * <p>etcd caps the operations of one transaction ({@code --max-txn-ops}, 128 by default): a set of
 * up to {@link #MAX_NAMES} names is one transaction of that many compares and puts; a larger set is
 * taken by the core name by name, and released {@value #MAX_NAMES} names per transaction.
 */
final class EtcdLockSets {
  /** The most names taken in one transaction: within etcd's default cap of 128 operations. */
  static final int MAX_NAMES = 64;

  private final EtcdBackend backend;

  EtcdLockSets(EtcdBackend backend) {
    this.backend = backend;
  }

  /** One name's key, made for one try. */
  private static final class Made {
    final ByteSequence key;
    final EtcdBackend.Slot slot;
    final EtcdBackend.KeyEntry entry;

    Made(ByteSequence key, EtcdBackend.Slot slot, EtcdBackend.KeyEntry entry) {
      this.key = key;
      this.slot = slot;
      this.entry = entry;
    }
  }

  /** See {@link dev.locksmith.spi.LockBackend#acquireAll}. */
  List<Poll> acquireAll(List<String> names, List<String> ownerIds) throws InterruptedException {
    int n = names.size();
    if (n > MAX_NAMES) {
      return null;
    }
    if (backend.endLeasePastTtl()) {
      // the lease went a TTL without keep-alive: its keys may go at any moment; as a single poll,
      // answer busy (nothing made) and let the next try start on a new lease
      return List.of();
    }
    String what = "taking a set of " + n + " lock" + (n == 1 ? "" : "s");
    for (int round = 0; round < 2; round++) {
      EtcdBackend.Session session = backend.session();
      List<Made> made = new ArrayList<>(n);
      Cmp[] free = new Cmp[n];
      Op[] puts = new Op[n];
      long seen = backend.seenRevision();
      PutOption onLease = PutOption.builder().withLeaseId(session.leaseId).build();
      for (int i = 0; i < n; i++) {
        String prefix = KeyNames.lockPrefix(backend.settings.prefix, names.get(i));
        EtcdBackend.Slot slot = session.takeSlot(names.get(i));
        ByteSequence key =
            KeyNames.bytes(
                prefix + Long.toHexString(session.leaseId) + "-" + Integer.toHexString(slot.index));
        // registered before the transaction is sent, as a single acquire does: the delete watch
        // must not miss the key's deletion; a delete at or below `seen` is of an earlier key
        EtcdBackend.KeyEntry entry = new EtcdBackend.KeyEntry(ownerIds.get(i), session);
        entry.createRevision = seen;
        backend.keys.put(key, entry);
        made.add(new Made(key, slot, entry));
        free[i] = RangeCompares.noKeyUnder(KeyNames.bytes(prefix));
        puts[i] = Op.put(key, KeyNames.bytes(ownerIds.get(i)), onLease);
      }
      CompletableFuture<TxnResponse> call =
          send(() -> backend.client.getKVClient().txn().If(free).Then(puts).commit());
      TxnResponse r;
      try {
        // awaited through a copy: an interrupt or a timeout cancels the copy, and the give-back
        // can still learn when the transaction itself is done
        r =
            backend.calls.await(
                () -> call.thenApply(x -> x),
                backend.settings.requestTimeout,
                what,
                EtcdSettings.REQUEST_TIMEOUT);
      } catch (InterruptedException e) {
        giveBack(call, made, session, "an interrupted set's keys");
        throw e;
      } catch (BackendUnavailableException e) {
        if (EtcdCalls.leaseNotFound(e)) {
          // our lease expired before the keep-alive noticed: nothing was made; try on a new one
          backend.leaseGone(session);
          forget(made);
          continue;
        }
        giveBack(call, made, session, "the keys of a set whose answer was lost");
        throw e;
      }
      long revision = r.getHeader().getRevision();
      backend.saw(revision);
      if (!r.isSucceeded()) {
        forget(made); // a name is held or waited for: nothing was written
        return List.of();
      }
      boolean gone = session.dead;
      for (Made m : made) {
        m.entry.createRevision = revision;
        backend.deleteWatch.granted(m.entry);
        gone |= m.entry.deleted;
      }
      if (gone || session.dead) {
        for (Made m : made) {
          m.entry.held = false;
        }
        deleteAll(made, session, "the keys of a set lost as it was granted");
        throw new BackendUnavailableException(
            backend.settings.describe()
                + ": the lease of a set of "
                + n
                + " locks was lost as the set was granted; every name was given back");
      }
      List<Poll> granted = new ArrayList<>(n);
      for (Made m : made) {
        granted.add(Poll.grantedForSession(revision, new EtcdBackend.Held(m.key, m.slot, m.entry)));
      }
      return granted;
    }
    return List.of(); // the lease was gone twice in a row: busy, nothing made
  }

  /** Forgets keys that were never written. */
  private void forget(List<Made> made) {
    for (Made m : made) {
      backend.keys.remove(m.key, m.entry);
      m.slot.free();
    }
  }

  /**
   * A set's transaction may have been applied without our seeing its answer: waits for it to be
   * done first (etcd serves each request on its own, so a delete sent now could be applied before
   * the puts, and the keys would then stay on our kept-alive lease), then deletes every key.
   */
  private void giveBack(
      CompletableFuture<TxnResponse> pending,
      List<Made> made,
      EtcdBackend.Session session,
      String why) {
    if (!pending.isDone()) {
      try {
        backend.calls.awaitUninterruptibly(
            () -> pending, backend.settings.requestTimeout, "finishing " + why);
      } catch (RuntimeException e) {
        // its outcome stays unknown: delete anyway (retried in the background if that fails)
      }
    }
    deleteAll(made, session, "deleting " + why);
  }

  /**
   * Deletes keys of ours in one transaction, waiting for it even if interrupted; keys whose delete
   * fails are deleted in the background.
   */
  private void deleteAll(List<Made> made, EtcdBackend.Session session, String why) {
    Op[] deletes = new Op[made.size()];
    for (int i = 0; i < deletes.length; i++) {
      backend.keys.remove(made.get(i).key, made.get(i).entry);
      deletes[i] = Op.delete(made.get(i).key, DeleteOption.DEFAULT);
    }
    try {
      TxnResponse r =
          backend.calls.awaitUninterruptibly(
              () -> backend.client.getKVClient().txn().Then(deletes).commit(),
              backend.settings.requestTimeout,
              why);
      backend.saw(r.getHeader().getRevision());
      made.forEach(m -> m.slot.free());
    } catch (RuntimeException e) {
      if (!backend.isClosed()) {
        for (Made m : made) {
          backend.deletes.retryLater(m.key, session, m.slot::free);
        }
      }
    }
  }

  /**
   * See {@link dev.locksmith.spi.LockBackend#releaseAll}: exclusive locks' keys deleted {@value
   * #MAX_NAMES} to a transaction, each plainly as {@link EtcdBackend#release} deletes one.
   *
   * @return null if a lease is not an exclusive lock's (released one by one instead)
   */
  List<Boolean> releaseAll(List<BackendLease> leases) {
    for (BackendLease lease : leases) {
      if (!lease.claim().isExclusive() || !(lease.state() instanceof EtcdBackend.Held)) {
        return null;
      }
    }
    List<Boolean> ours = new ArrayList<>(leases.size());
    RuntimeException failure = null;
    for (int from = 0; from < leases.size(); from += MAX_NAMES) {
      List<BackendLease> chunk = leases.subList(from, Math.min(leases.size(), from + MAX_NAMES));
      try {
        ours.addAll(releaseChunk(chunk));
      } catch (RuntimeException e) {
        chunk.forEach(l -> ours.add(false));
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
    return ours;
  }

  private List<Boolean> releaseChunk(List<BackendLease> leases) {
    List<EtcdBackend.Held> held = new ArrayList<>(leases.size());
    Op[] deletes = new Op[leases.size()];
    for (int i = 0; i < deletes.length; i++) {
      EtcdBackend.Held h = (EtcdBackend.Held) leases.get(i).state();
      backend.keys.remove(h.key, h.entry);
      h.entry.held = false;
      held.add(h);
      deletes[i] = Op.delete(h.key, DeleteOption.DEFAULT);
    }
    try {
      TxnResponse r =
          backend.calls.awaitUninterruptibly(
              () -> backend.client.getKVClient().txn().Then(deletes).commit(),
              backend.settings.requestTimeout,
              "releasing a set of " + leases.size() + " locks");
      backend.saw(r.getHeader().getRevision());
      List<Boolean> ours = new ArrayList<>(held.size());
      for (int i = 0; i < held.size(); i++) {
        ours.add(r.getDeleteResponses().get(i).getDeleted() > 0);
        // deleted now, or gone before (expired, revoked): no key of ours is left under the name
        held.get(i).slot.free();
      }
      return ours;
    } catch (RuntimeException e) {
      // the keys would otherwise stay on a lease we keep alive, and block their locks for good
      for (EtcdBackend.Held h : held) {
        backend.deletes.retryLater(h.key, h.slot.session, h.slot::free);
      }
      throw e;
    } finally {
      held.forEach(h -> backend.leaseControl.endOwnLease(h.entry));
    }
  }
}
