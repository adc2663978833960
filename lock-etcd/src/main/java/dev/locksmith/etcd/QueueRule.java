package dev.locksmith.etcd;

import dev.locksmith.spi.Claim;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Where one kind of resource keeps its keys on etcd, and which keys ahead of ours keep us waiting.
 * Every kind queues its keys by create revision (arrival order) under one range, and an attempt
 * waits while keys it must not pass are left ahead of it:
 *
 * <ul>
 *   <li>a lock: any key ahead (one holder); we watch the nearest;
 *   <li>the write side of a read-write lock: any key ahead, read or write; we watch the nearest;
 *   <li>the read side: a write key ahead (readers ahead share the lock with us); we watch the
 *       nearest write key;
 *   <li>a semaphore of {@code n} permits: {@code n} keys ahead (holders, or queued before us). No
 *       one key ahead tells when fewer than {@code n} are left (any of them may go first), so for
 *       {@code n > 1} we watch the semaphore's range for deletes and poll once enough of the keys
 *       ahead are gone ({@link #watchesRange}); for one permit, as a lock.
 * </ul>
 *
 * The reads run in one transaction with the check (or the create) of our key, so they see exactly
 * the keys created before ours. Keys are only ever added behind ours, so the keys ahead can only
 * become fewer while we wait.
 */
abstract class QueueRule {
  /** The start of our key's name: the key is {@code <keyPrefix><lease id>-<n>}. */
  final String keyPrefix;

  /**
   * The name this resource's key suffixes are kept under per session (see {@link
   * EtcdBackend.Session#takeSlot}); two resources sharing one would only reuse names less.
   */
  final String slotName;

  /**
   * The range the reads look at, where every key that can keep us waiting lives: a waiter's client
   * watches it for deletes ({@link EtcdQueueWatches#listen}).
   */
  final ByteSequence readRange;

  private QueueRule(String keyPrefix, String slotName, ByteSequence readRange) {
    this.keyPrefix = keyPrefix;
    this.slotName = slotName;
    this.readRange = readRange;
  }

  /**
   * @return the range to watch for deletes when one key ahead is not enough to watch (a semaphore
   *     of more than one permit), else null: watch the key {@link #blocker} returns
   */
  ByteSequence watchesRange() {
    return null;
  }

  /**
   * @return how many keys may be ahead of a granted one: a semaphore's permits, else 1
   */
  int room() {
    return 1;
  }

  /**
   * @param before the create revision of our key: only keys created before it count; 0 when the
   *     reads run in our key's create transaction, before its put
   * @return the reads that tell whether we may be granted, in the order {@link #blocker} takes
   *     their answers
   */
  abstract Op[] reads(long before);

  /**
   * @param resource the resource's name, for messages
   * @param answers the answers to {@link #reads}
   * @return the key that keeps us waiting (the one to watch), or null if we may be granted
   * @throws IllegalStateException if a semaphore is in use with another count than ours
   */
  abstract KeyValue blocker(String resource, List<GetResponse> answers);

  /**
   * @return whether a grant after waiting must be written (our key put again, in a transaction that
   *     checks it is still ours), so that its fencing token is the revision of the grant. A lock
   *     grants one key at a time in create order, so its key's create revision already rises from
   *     grant to grant; a semaphore or the read side may grant a later key before an earlier one
   *     (whichever polls first), and a create revision would then go back.
   */
  abstract boolean grantWrites();

  /**
   * @return the rule of an exclusive lock
   */
  static QueueRule lock(String prefix, String name) {
    String range = KeyNames.lockPrefix(prefix, name);
    ByteSequence rangeBytes = KeyNames.bytes(range);
    return new QueueRule(range, name, rangeBytes) {
      @Override
      Op[] reads(long before) {
        return new Op[] {Op.get(rangeBytes, newestBefore(before, 1, false))};
      }

      @Override
      KeyValue blocker(String resource, List<GetResponse> answers) {
        return first(answers.get(0));
      }

      @Override
      boolean grantWrites() {
        return false;
      }
    };
  }

  /**
   * @return the rule of one permit of a semaphore
   */
  static QueueRule permit(String prefix, String name, int permits) {
    String range = KeyNames.semaphorePrefix(prefix, name);
    ByteSequence rangeBytes = KeyNames.bytes(range);
    String keyPrefix = range + permits + "/";
    return new QueueRule(keyPrefix, keyPrefix, rangeBytes) {
      @Override
      Op[] reads(long before) {
        // every key ahead, names only: their counts, and (waiting) which of them must go
        return new Op[] {Op.get(rangeBytes, newestBefore(before, 0, true))};
      }

      /**
       * Every key ahead must carry our count. A granted key saw every key ahead of it (fewer than
       * {@code permits}), and every key behind it sees it while it holds, so two holders of
       * different counts never live at once; a key of another count may be in the range for a
       * moment only, while its attempt, refused, deletes it (an attempt arriving then is refused
       * too, naming that count).
       */
      @Override
      KeyValue blocker(String resource, List<GetResponse> answers) {
        List<KeyValue> ahead = answers.get(0).getKvs();
        for (KeyValue kv : ahead) {
          int inUse = permitsOf(range, kv.getKey());
          if (inUse > 0 && inUse != permits) {
            throw Claim.permitsInUse(resource, permits, inUse);
          }
        }
        return ahead.size() < permits ? null : ahead.get(permits - 1);
      }

      @Override
      ByteSequence watchesRange() {
        return permits > 1 ? rangeBytes : null;
      }

      @Override
      int room() {
        return permits;
      }

      @Override
      boolean grantWrites() {
        return true;
      }
    };
  }

  /**
   * @return the rule of the read side of a read-write lock
   */
  static QueueRule read(String prefix, String name) {
    String range = KeyNames.readWritePrefix(prefix, name);
    ByteSequence writers = KeyNames.bytes(range + "w/");
    return new QueueRule(range + "r/", range, writers) {
      @Override
      Op[] reads(long before) {
        return new Op[] {Op.get(writers, newestBefore(before, 1, false))};
      }

      @Override
      KeyValue blocker(String resource, List<GetResponse> answers) {
        return first(answers.get(0));
      }

      @Override
      boolean grantWrites() {
        return true;
      }
    };
  }

  /**
   * @return the rule of the write side of a read-write lock
   */
  static QueueRule write(String prefix, String name) {
    String range = KeyNames.readWritePrefix(prefix, name);
    ByteSequence all = KeyNames.bytes(range);
    return new QueueRule(range + "w/", range, all) {
      @Override
      Op[] reads(long before) {
        return new Op[] {Op.get(all, newestBefore(before, 1, false))};
      }

      @Override
      KeyValue blocker(String resource, List<GetResponse> answers) {
        return first(answers.get(0));
      }

      @Override
      boolean grantWrites() {
        // Nothing is ahead of a granted writer, so its create revision is above every earlier
        // grant's; but a reader granted after waiting got the revision of its grant, which may be
        // above our key's: our grant must be a write too.
        return true;
      }
    };
  }

  /**
   * @return the rule for a claim
   */
  static QueueRule of(String prefix, String name, Claim claim) {
    switch (claim.kind()) {
      case PERMIT:
        return permit(prefix, name, claim.permits());
      case READ:
        return read(prefix, name);
      case WRITE:
        return write(prefix, name);
      default:
        return lock(prefix, name);
    }
  }

  private static KeyValue first(GetResponse answer) {
    List<KeyValue> kvs = answer.getKvs();
    return kvs.isEmpty() ? null : kvs.get(0);
  }

  /**
   * @return the count a semaphore key's name carries ({@code <range><permits>/<lease id>-<n>}), or
   *     0 if the key is not one of ours
   */
  static int permitsOf(String range, ByteSequence key) {
    String k = key.toString(StandardCharsets.UTF_8);
    int end = k.indexOf('/', range.length());
    if (!k.startsWith(range) || end < 0) {
      return 0;
    }
    try {
      return Integer.parseInt(k.substring(range.length(), end));
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /**
   * @return the newest {@code limit} keys (all, if 0) of the range created before {@code revision}
   *     (any, if 0), newest first, with their leases, and their values (an owner id, or a hold's)
   *     unless {@code keysOnly}
   */
  static GetOption newestBefore(long revision, int limit, boolean keysOnly) {
    GetOption.Builder b =
        GetOption.builder()
            .isPrefix(true)
            .withKeysOnly(keysOnly)
            .withSortField(GetOption.SortTarget.CREATE)
            .withSortOrder(GetOption.SortOrder.DESCEND);
    if (limit > 0) {
      b.withLimit(limit);
    }
    if (revision > 0) {
      b.withMaxCreateRevision(revision - 1);
    }
    return b.build();
  }
}
