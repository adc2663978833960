package dev.locksmith.etcd;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Guarantees;
import dev.locksmith.HeldLock;
import dev.locksmith.LockState;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Reads who holds a semaphore or a read-write lock, for listing ({@link
 * EtcdBackend#inspectHolders}), writing nothing. A resource's range holds the keys of its holders
 * and of its waiters alike, in arrival order (create revision); {@link QueueRule} says which keys
 * may be granted: a permit with fewer keys than its count ahead of it, a writer with no key ahead,
 * a reader with no writer's key ahead. Such a key holds if it was granted, which its key tells:
 *
 * <ul>
 *   <li>moved onto an etcd lease of its own ({@link EtcdLeaseControl#extend}; its name carries its
 *       session's lease): granted, its token in its value after the owner id;
 *   <li>written again on its session's lease (version 2): granted after waiting, by that write,
 *       whose revision (its mod revision) is the token;
 *   <li>written once (version 1): granted in its create transaction, its create revision the token,
 *       if nothing it must not pass was ahead of it then. A waiter the last key ahead of it has
 *       just left is written once too until its next poll grants it, or for good if its client
 *       paused or vanished: so for these keys the range is read as it was at their create revision
 *       (names only, up to the count that still lets it in; one transaction for up to 100 of them).
 *       A revision etcd has compacted cannot be read: such a key counts as granted at its create.
 * </ul>
 *
 * The rest of a holder's lease is not reported, as for a lock ({@link EtcdBackend#inspect}): the
 * key lives on the holding client's etcd lease, which that client keeps alive whatever the
 * holding's own lease.
 */
final class EtcdHolders {
  /** Reads of past revisions per transaction: etcd's default {@code --max-txn-ops} is 128. */
  private static final int CHECKS_PER_TXN = 100;

  private final EtcdBackend backend;

  EtcdHolders(EtcdBackend backend) {
    this.backend = backend;
  }

  HeldLock inspect(String name, Guarantees.Primitive primitive) {
    boolean semaphore = primitive == Guarantees.Primitive.SEMAPHORE;
    if (!semaphore && primitive != Guarantees.Primitive.READ_WRITE_LOCK) {
      throw new IllegalArgumentException(
          "`primitive` was " + primitive + " but it must be SEMAPHORE or READ_WRITE_LOCK");
    }
    String prefix = backend.settings.prefix;
    String range =
        semaphore ? KeyNames.semaphorePrefix(prefix, name) : KeyNames.readWritePrefix(prefix, name);
    String what = (semaphore ? "semaphore '" : "read-write lock '") + name + "'";
    GetOption inOrder =
        GetOption.builder()
            .isPrefix(true)
            .withSortField(GetOption.SortTarget.CREATE)
            .withSortOrder(GetOption.SortOrder.ASCEND)
            .build();
    GetResponse got =
        backend.calls.awaitUninterruptibly(
            () -> backend.client.getKVClient().get(KeyNames.bytes(range), inOrder),
            backend.settings.requestTimeout,
            "reading the holders of " + what);
    backend.saw(got.getHeader().getRevision());
    List<KeyValue> kvs = got.getKvs();
    if (kvs.isEmpty()) {
      return null;
    }
    // the keys that may be granted, what each must not have had ahead of it, and how many
    List<KeyValue> grantable = new ArrayList<>();
    List<Integer> rooms = new ArrayList<>();
    ByteSequence blockers;
    HeldLock.Kind kind;
    if (semaphore) {
      kind = HeldLock.Kind.SEMAPHORE;
      blockers = KeyNames.bytes(range);
      int count = QueueRule.permitsOf(range, kvs.get(0).getKey());
      for (int i = 0; i < kvs.size() && i < count; i++) {
        // a key behind one of another count is refused (its attempt deletes it)
        if (QueueRule.permitsOf(range, kvs.get(i).getKey()) != count) {
          break;
        }
        grantable.add(kvs.get(i));
        rooms.add(count);
      }
    } else {
      String writes = range + "w/";
      blockers = KeyNames.bytes(writes);
      kind = HeldLock.Kind.READ;
      for (int i = 0; i < kvs.size(); i++) {
        KeyValue kv = kvs.get(i);
        if (key(kv).startsWith(writes)) {
          if (i == 0) {
            // the first key is a writer's: nothing is ahead of it, and no reader is granted
            kind = HeldLock.Kind.WRITE;
            blockers = KeyNames.bytes(range);
            grantable.add(kv);
            rooms.add(1);
          }
          break; // a reader behind a writer's key waits
        }
        grantable.add(kv);
        rooms.add(1);
      }
    }
    List<LockState> holders = holding(grantable, rooms, blockers, what);
    return holders.isEmpty() ? null : HeldLock.of(name, kind, holders);
  }

  /**
   * @param grantable keys that may be granted, in create order
   * @param rooms per key, how many keys it may have had ahead of it at its create and still be
   *     granted
   * @param blockers the range of the keys it must not pass
   * @return the states of those that hold
   */
  private List<LockState> holding(
      List<KeyValue> grantable, List<Integer> rooms, ByteSequence blockers, String what) {
    // keys written once: granted at their create, unless too many keys were ahead of them then
    List<KeyValue> once = new ArrayList<>();
    List<Integer> onceRooms = new ArrayList<>();
    for (int i = 0; i < grantable.size(); i++) {
      KeyValue kv = grantable.get(i);
      if (!movedToOwnLease(kv) && kv.getVersion() < 2) {
        once.add(kv);
        onceRooms.add(rooms.get(i));
      }
    }
    java.util.Set<Long> grantedAtCreate = grantedAtCreate(once, onceRooms, blockers, what);
    List<LockState> states = new ArrayList<>();
    for (KeyValue kv : grantable) {
      String value = kv.getValue().toString(StandardCharsets.UTF_8);
      LockState state = LockState.held();
      if (movedToOwnLease(kv)) {
        int mark = value.lastIndexOf(EtcdLeaseControl.TOKEN_MARK);
        if (mark >= 0) {
          try {
            state = state.withFencingToken(Long.parseLong(value.substring(mark + 1)));
          } catch (NumberFormatException e) {
            // not a value of ours: the token is not known
          }
          value = value.substring(0, mark);
        }
      } else if (kv.getVersion() >= 2) {
        state = state.withFencingToken(kv.getModRevision());
      } else if (grantedAtCreate.contains(kv.getCreateRevision())) {
        state = state.withFencingToken(kv.getCreateRevision());
      } else {
        continue; // a waiter whose poll has not granted it (yet)
      }
      states.add(value.isEmpty() ? state : state.withHolder(value));
    }
    return states;
  }

  /**
   * @return whether a key was moved off the etcd lease its name carries: only a granted key is
   *     ({@link EtcdLeaseControl#extend})
   */
  private static boolean movedToOwnLease(KeyValue kv) {
    return kv.getLease() != EtcdLeaseControl.sessionLeaseOf(kv.getKey());
  }

  /**
   * Reads, at each key's create revision, how many keys of {@code blockers} were ahead of it:
   * whether its create transaction granted it. A revision etcd has compacted away cannot be read;
   * such a key has been grantable since before the compaction, and counts as granted.
   *
   * @return the create revisions of the keys granted at their create
   */
  private java.util.Set<Long> grantedAtCreate(
      List<KeyValue> keys, List<Integer> rooms, ByteSequence blockers, String what) {
    java.util.Set<Long> granted = new java.util.HashSet<>();
    for (int from = 0; from < keys.size(); from += CHECKS_PER_TXN) {
      int to = Math.min(keys.size(), from + CHECKS_PER_TXN);
      List<KeyValue> chunk = keys.subList(from, to);
      List<Long> ahead;
      try {
        ahead = aheadAtCreate(chunk, rooms.subList(from, to), blockers, what);
      } catch (BackendUnavailableException e) {
        if (!compacted(e)) {
          throw e;
        }
        ahead = new ArrayList<>();
        for (int i = 0; i < chunk.size(); i++) {
          KeyValue kv = chunk.get(i);
          int room = rooms.get(from + i);
          try {
            ahead.add(aheadAtCreate(List.of(kv), List.of(room), blockers, what).get(0));
          } catch (BackendUnavailableException e2) {
            if (!compacted(e2)) {
              throw e2;
            }
            ahead.add(0L);
          }
        }
      }
      for (int i = 0; i < chunk.size(); i++) {
        if (ahead.get(i) < rooms.get(from + i)) {
          granted.add(chunk.get(i).getCreateRevision());
        }
      }
    }
    return granted;
  }

  /**
   * @return per key, how many keys of {@code blockers} created before it were there at its create
   *     revision, counted up to its room (one transaction). Names only, and counted here: etcd's
   *     count of a range ignores the create-revision filter.
   */
  private List<Long> aheadAtCreate(
      List<KeyValue> keys, List<Integer> rooms, ByteSequence blockers, String what) {
    Op[] reads = new Op[keys.size()];
    for (int i = 0; i < reads.length; i++) {
      long created = keys.get(i).getCreateRevision();
      reads[i] =
          Op.get(
              blockers,
              GetOption.builder()
                  .isPrefix(true)
                  .withKeysOnly(true)
                  .withLimit(rooms.get(i))
                  .withRevision(created)
                  .withMaxCreateRevision(created - 1)
                  .build());
    }
    TxnResponse r =
        backend.calls.awaitUninterruptibly(
            () -> backend.client.getKVClient().txn().Then(reads).commit(),
            backend.settings.requestTimeout,
            "reading when the holders of " + what + " were granted");
    List<Long> counts = new ArrayList<>();
    for (GetResponse g : r.getGetResponses()) {
      counts.add((long) g.getKvs().size());
    }
    return counts;
  }

  private static boolean compacted(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      String m = t.getMessage();
      if (m != null && m.toLowerCase(Locale.ROOT).contains("compacted")) {
        return true;
      }
    }
    return false;
  }

  private static String key(KeyValue kv) {
    return kv.getKey().toString(StandardCharsets.UTF_8);
  }
}
