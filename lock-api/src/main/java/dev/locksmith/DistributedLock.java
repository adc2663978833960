package dev.locksmith;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Lock;

/**
 * A named lock of one {@link LockClient}. Cheap to obtain and thread-safe; every method can be
 * called from many threads at once. Each successful acquire returns a {@link Lease}.
 *
 * <pre>{@code
 * DistributedLock lock = client.lock("nightly-report");
 * Optional<Lease> lease = lock.tryAcquire(Duration.ofSeconds(2));
 * if (lease.isPresent()) {
 *   try (Lease held = lease.get()) {
 *     runReport(held.fencingToken());
 *   }
 * }
 * }</pre>
 *
 * <p>Reentrancy ({@link LockOptions#reentrant()}): when it is on, the thread that holds the lock
 * through this client gets its own lease back, counted. When it is off, the holding thread's {@code
 * acquire()}, {@code acquire(Duration)} and {@code tryAcquire(Duration)} with a timeout above zero
 * throw {@link IllegalStateException} at once, saying the calling thread itself holds the lock
 * (waiting for its own release would never end), while {@code tryAcquire()} and a zero timeout
 * answer as for any other holder; other threads' waiting is unaffected.
 *
 * <p>Waiting is woken by the release itself where the backend declares {@link
 * Guarantees.Feature#NOTIFIED_WAKEUP}. An interrupted or cancelled waiter withdraws completely: the
 * next acquirer is not delayed by it.
 */
public interface DistributedLock {

  /**
   * @return the lock's name
   */
  String name();

  /**
   * @return the options this lock is held with
   */
  LockOptions options();

  /**
   * Waits as long as it takes.
   *
   * @return the lease
   * @throws InterruptedException if the thread is interrupted while waiting; nothing is left behind
   * @throws BackendUnavailableException if the server cannot be reached
   * @throws IllegalStateException if reentrancy is off and the calling thread already holds this
   *     lock through this client, or the client is closed
   */
  Lease acquire() throws InterruptedException;

  /**
   * Waits at most {@code timeout}.
   *
   * @param timeout how long to wait; zero means one attempt; a timeout too long to count in
   *     nanoseconds (about 292 years) waits as long as it takes
   * @return the lease
   * @throws LockTimeoutException if the lock was not acquired in time
   * @throws InterruptedException if the thread is interrupted while waiting; nothing is left behind
   * @throws NullPointerException if {@code timeout} is null
   * @throws IllegalArgumentException if {@code timeout} is negative
   * @throws IllegalStateException if reentrancy is off and the calling thread already holds this
   *     lock through this client, or the client is closed
   */
  Lease acquire(Duration timeout) throws InterruptedException;

  /**
   * One attempt, no waiting.
   *
   * @return the lease, or empty if the lock is held, by another holder or (with reentrancy off) by
   *     the calling thread itself
   */
  Optional<Lease> tryAcquire();

  /**
   * Waits at most {@code timeout}.
   *
   * @param timeout how long to wait; zero means one attempt
   * @return the lease, or empty if the lock was not acquired in time
   * @throws InterruptedException if the thread is interrupted while waiting; nothing is left behind
   * @throws NullPointerException if {@code timeout} is null
   * @throws IllegalArgumentException if {@code timeout} is negative
   * @throws IllegalStateException if reentrancy is off and the calling thread already holds this
   *     lock through this client, or the client is closed
   */
  Optional<Lease> tryAcquire(Duration timeout) throws InterruptedException;

  /**
   * Waits in the background. The future completes with the lease, or exceptionally with {@link
   * LockTimeoutException} or another {@link LockException}. Cancelling it withdraws the waiter; a
   * lease granted at the same moment is released. Leases acquired this way are never reentrant:
   * they belong to no thread.
   *
   * @param timeout how long to wait
   * @return the future lease
   * @throws NullPointerException if {@code timeout} is null
   * @throws IllegalArgumentException if {@code timeout} is negative
   */
  CompletableFuture<Lease> acquireAsync(Duration timeout);

  /**
   * As {@link #acquireAsync(Duration)}, with the acquisition, its waiting included, run as a task
   * of {@code executor} instead of on the client's own threads, so that the future completes on a
   * thread of {@code executor}: for a caller that would otherwise hand the lease over to threads of
   * its own (a Reactor scheduler, a virtual-thread executor), one thread hand-off fewer. The task
   * blocks for the round trips to the server and, when the lock is busy, for up to {@code timeout}:
   * give an executor meant for blocking work. The client's locks, semaphores and read-write sides
   * run on it; others (a set of locks, a lock of another implementation) may complete on their own
   * threads, as this default does.
   *
   * @param timeout how long to wait
   * @param executor runs the acquisition; if it rejects the task, the future completes
   *     exceptionally with its {@link java.util.concurrent.RejectedExecutionException}
   * @return the future lease
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code timeout} is negative
   */
  default CompletableFuture<Lease> acquireAsync(
      Duration timeout, java.util.concurrent.Executor executor) {
    Names.checkExecutor(executor);
    return acquireAsync(timeout);
  }

  /**
   * Reads the lock's state without taking it: free or held and, where the backend can tell, the
   * holder's fencing token, the rest of its lease and its owner id. One round trip; nothing is
   * written, so fencing counters do not move. A snapshot that may be stale when it returns: for
   * monitoring and operators, never for deciding to write.
   *
   * @return the state; {@link LockState#unknown()} where the backend does not declare {@link
   *     Guarantees.Feature#STATE_READS}
   * @throws BackendUnavailableException if the server cannot be reached
   */
  LockState state();

  /**
   * A {@link Lock} view, reentrant per thread like {@link java.util.concurrent.locks.ReentrantLock}
   * whatever {@link LockOptions#reentrant()} says. {@code unlock()} by a thread that does not hold
   * it throws {@link IllegalMonitorStateException}; an {@code unlock()} that finds the lease was
   * lost throws {@link LeaseLostException} after releasing. Conditions are not supported.
   *
   * @return the view; the same instance on every call
   */
  Lock asLock();
}
