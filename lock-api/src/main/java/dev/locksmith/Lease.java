package dev.locksmith;

import java.util.concurrent.CompletionStage;

/**
 * One holding of a lock. Close it (try-with-resources) or {@link #release()} it when done; both are
 * idempotent. Pass {@link #fencingToken()} to whatever the lock protects so it can reject a holder
 * that lost the lock without knowing it (a "zombie" paused past its lease).
 *
 * <pre>{@code
 * try (Lease lease = client.lock("stock:sku-123").acquire(Duration.ofSeconds(5))) {
 *   lease.lost().thenAccept(e -> log.warn("stop writing: {}", e.getMessage()));
 *   inventory.update(sku, qty, lease.fencingToken());   // the store rejects tokens lower than it has seen
 * }
 * }</pre>
 */
public interface Lease extends AutoCloseable {

  /**
   * @return the name of the lock this lease holds
   */
  String lockName();

  /**
   * @return a number greater than zero that is strictly greater than the token of every earlier
   *     holder of this lock name (where the backend declares {@link Guarantees.Feature#FENCING};
   *     its {@link Guarantees} say under which faults that holds). A reentrant re-acquire returns
   *     the same token.
   */
  long fencingToken();

  /**
   * @return the names this lease holds: the one lock's name, or a set's names in the order they
   *     were taken ({@link LockClient#locks(java.util.Collection)})
   */
  default java.util.List<String> lockNames() {
    return java.util.List.of(lockName());
  }

  /**
   * @param name one of {@link #lockNames()}
   * @return that name's fencing token, as {@link #fencingToken()} is for a single lock: pass each
   *     resource the token of its own name
   * @throws IllegalArgumentException if this lease does not hold {@code name}
   */
  default long fencingToken(String name) {
    if (!lockName().equals(name)) {
      throw new IllegalArgumentException(
          "`name` was "
              + (name == null ? "null" : "'" + Names.show(name) + "'")
              + " but this lease holds only lock '"
              + Names.show(lockName())
              + "'");
    }
    return fencingToken();
  }

  /**
   * @return whether this lease is still held as far as the client can tell: not released, not known
   *     lost, and within its lease time since the last successful renewal. A paused process cannot
   *     know; that is what the fencing token is for.
   */
  boolean isValid();

  /**
   * @return a stage that completes, on the client's event thread, with the reason when this lease
   *     is lost while held (expired, taken, renewal failed, session lost, client closed). It never
   *     completes if the lease is released normally.
   */
  CompletionStage<LeaseLostException> lost();

  /**
   * Releases this holding. For a reentrant lock held several times by one thread, the lock itself
   * is released with the last holding.
   *
   * @return true if we still held the lock up to this release; false if this lease had already been
   *     released, had been lost, or had expired (in which case someone else's lock is never
   *     touched)
   * @throws BackendUnavailableException if the server could not be reached; the lock will expire at
   *     the end of its lease
   */
  boolean release();

  /**
   * Moves this lease's expiry on the server to {@code lease} from now, longer or shorter, if it is
   * still ours (owner-checked on the server, in one step). For leases held without auto-renew
   * ({@link LockOptions#autoRenew()} false): a renewed lease extends itself. Backends that can do
   * it declare {@link Guarantees.Feature#EXTEND}; the server then ends the lease at the new expiry
   * even if this process dies.
   *
   * <pre>{@code
   * Lease lease = lock.acquire(Duration.ofSeconds(5));   // options: autoRenew(false), lease 30s
   * for (Batch b : batches) {
   *   if (!lease.extend(Duration.ofSeconds(30))) { break; }   // lost it: stop
   *   b.process(lease.fencingToken());
   * }
   * }</pre>
   *
   * @param lease from {@link LockOptions#MIN_LEASE} to {@link LockOptions#MAX_LEASE}
   * @return true if the server now keeps it until then; false if it was no longer ours (released,
   *     lost, expired or taken), in which case nothing is changed
   * @throws NullPointerException if {@code lease} is null
   * @throws IllegalArgumentException if {@code lease} is out of range
   * @throws IllegalStateException if this lease is renewed automatically
   * @throws UnsupportedOperationException if the backend does not declare EXTEND, or this is a
   *     semaphore's or read-write lock's lease (extend is for exclusive locks)
   * @throws BackendUnavailableException if the server could not be reached; the old expiry stands
   */
  boolean extend(java.time.Duration lease);

  /**
   * Gives this lease up but has the server keep the lock held for {@code keep} from now, then free
   * it by itself: nobody acquires it sooner, even when this client is closed or its process is
   * killed right after. For "run at most once per period" jobs (ShedLock's {@code lockAtLeastFor}).
   * Like {@link #release()}, the lease is no longer valid afterwards and renewal stops. Backends
   * that can do it declare {@link Guarantees.Feature#HOLD_AFTER_RELEASE}.
   *
   * @param keep how long the server keeps the lock; zero or negative is a plain {@link #release()};
   *     at most {@link LockOptions#MAX_LEASE}
   * @return true if we still held the lock up to this call (and the server keeps it until then);
   *     false if this lease had already been released, lost or expired
   * @throws NullPointerException if {@code keep} is null
   * @throws IllegalArgumentException if {@code keep} is above the maximum
   * @throws IllegalStateException if the same thread holds this lock more than once (reentrantly):
   *     release the inner holdings first
   * @throws UnsupportedOperationException if the backend does not declare HOLD_AFTER_RELEASE, or
   *     this is a semaphore's or read-write lock's lease (releaseAfter is for exclusive locks)
   * @throws BackendUnavailableException if the server could not be reached; the lock expires at the
   *     end of its lease
   */
  boolean releaseAfter(java.time.Duration keep);

  /**
   * Same as {@link #release()}, except that a server that cannot be reached is logged instead of
   * thrown, so that closing never hides the exception of a try block.
   */
  @Override
  void close();
}
