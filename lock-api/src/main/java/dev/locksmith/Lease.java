package dev.locksmith;

import java.util.concurrent.CompletionStage;

/**
 * One holding of a lock. Close it (try-with-resources) or {@link #release()} it when done; both
 * are idempotent. Pass {@link #fencingToken()} to whatever the lock protects so it can reject a
 * holder that lost the lock without knowing it (a "zombie" paused past its lease).
 *
 * <pre>{@code
 * try (Lease lease = client.lock("stock:sku-123").acquire(Duration.ofSeconds(5))) {
 *   lease.lost().thenAccept(e -> log.warn("stop writing: {}", e.getMessage()));
 *   inventory.update(sku, qty, lease.fencingToken());   // the store rejects tokens lower than it has seen
 * }
 * }</pre>
 */
public interface Lease extends AutoCloseable {

  /** @return the name of the lock this lease holds */
  String lockName();

  /**
   * @return a number greater than zero that is strictly greater than the token of every earlier
   *     holder of this lock name (where the backend declares {@link Guarantees.Feature#FENCING};
   *     its {@link Guarantees} say under which faults that holds). A reentrant re-acquire
   *     returns the same token.
   */
  long fencingToken();

  /**
   * @return whether this lease is still held as far as the client can tell: not released, not
   *     known lost, and within its lease time since the last successful renewal. A paused
   *     process cannot know; that is what the fencing token is for.
   */
  boolean isValid();

  /**
   * @return a stage that completes, on the client's event thread, with the reason when this
   *     lease is lost while held (expired, taken, renewal failed, session lost, client closed).
   *     It never completes if the lease is released normally.
   */
  CompletionStage<LeaseLostException> lost();

  /**
   * Releases this holding. For a reentrant lock held several times by one thread, the lock
   * itself is released with the last holding.
   *
   * @return true if we still held the lock up to this release; false if this lease had already
   *     been released, had been lost, or had expired (in which case someone else's lock is never
   *     touched)
   * @throws BackendUnavailableException if the server could not be reached; the lock will expire
   *     at the end of its lease
   */
  boolean release();

  /**
   * Same as {@link #release()}, except that a server that cannot be reached is logged instead of
   * thrown, so that closing never hides the exception of a try block.
   */
  @Override
  void close();
}
