/**
 * Suspend forms of the lock API for Kotlin coroutines, over the public API of `lock-api` only.
 *
 * Waiting for a lock parks no thread: it is [DistributedLock.acquireAsync], which waits on the
 * client's own threads, and the coroutine resumes on its own dispatcher when the lease (or the
 * error) arrives. Every [Lease.release] made here, a blocking call that does network I/O on real
 * backends, runs on [Dispatchers.IO], never on the caller's dispatcher nor on the client's threads.
 */
@file:JvmName("SuspendingLocks")

package dev.locksmith.kotlin

import dev.locksmith.DistributedLock
import dev.locksmith.Lease
import dev.locksmith.LockClient
import dev.locksmith.LockTimeoutException
import java.util.concurrent.CompletableFuture
import java.util.concurrent.CompletionException
import kotlin.coroutines.resumeWithException
import kotlin.time.toJavaDuration
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.asExecutor
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlinx.coroutines.withContext
import org.slf4j.LoggerFactory

private val log = LoggerFactory.getLogger("dev.locksmith.kotlin.SuspendingLocks")

/**
 * Acquires this lock, suspending until it is granted or [wait] runs out. No thread is parked while
 * it waits ([DistributedLock.acquireAsync] waits on the client's threads); the coroutine resumes
 * on its own dispatcher.
 *
 * Cancelling the coroutine while it waits (its job, or a `withTimeout` around the call) withdraws
 * the waiter: the next acquirer is not delayed by it. A lease granted at the same moment as the
 * cancellation is released (on [Dispatchers.IO]), never left held, and the call throws the
 * [kotlinx.coroutines.CancellationException]. Leases acquired this way belong to no thread, so
 * they are never reentrant.
 *
 * ```kotlin
 * val lease = client.lock("report").acquireSuspending(Duration.ofSeconds(5))
 * try { report(lease.fencingToken()) } finally { lease.releaseSuspending() }
 * ```
 *
 * @param wait how long to wait; zero means one attempt
 * @return the lease, the caller's to release ([releaseSuspending]), or use [withLock] instead
 * @throws LockTimeoutException if the lock was not acquired in time
 * @throws IllegalArgumentException if [wait] is negative
 * @throws IllegalStateException if the client is closed
 * @throws dev.locksmith.LockException as [DistributedLock.acquireAsync] fails otherwise, for
 *   example [dev.locksmith.BackendUnavailableException]
 */
public suspend fun DistributedLock.acquireSuspending(wait: java.time.Duration): Lease {
  checkWait(wait)
  currentCoroutineContext().ensureActive() // cancelled already: ask nothing of the backend
  return awaitGrant(this, wait)
}

/**
 * [acquireSuspending] with a [kotlin.time.Duration]: `lock.acquireSuspending(5.seconds)`.
 * [kotlin.time.Duration.INFINITE] waits as long as it takes.
 *
 * @param wait how long to wait; zero means one attempt
 * @return the lease, the caller's to release
 * @throws LockTimeoutException if the lock was not acquired in time
 * @throws IllegalArgumentException if [wait] is negative
 */
public suspend fun DistributedLock.acquireSuspending(wait: kotlin.time.Duration): Lease =
    acquireSuspending(toJava(wait))

/**
 * One attempt at this lock, without waiting for it ([DistributedLock.acquireAsync] with a zero
 * wait, so the round trip to the server parks no thread either). Cancellation is handled as for
 * [acquireSuspending]: a lease granted as the coroutine is cancelled is released.
 *
 * @return the lease, the caller's to release, or null if the lock is held (for a semaphore: no
 *   permit is free; for a set of locks: one of its names is held, and none is kept)
 * @throws IllegalStateException if the client is closed
 */
public suspend fun DistributedLock.tryAcquireSuspending(): Lease? =
    try {
      acquireSuspending(java.time.Duration.ZERO)
    } catch (busy: LockTimeoutException) {
      null
    }

/**
 * Runs [block] while holding this lock: acquires it as [acquireSuspending] does, runs [block] with
 * the lease in the calling coroutine's context, and releases the lease when [block] returns,
 * throws, or the coroutine is cancelled. The release runs in `withContext(NonCancellable +
 * Dispatchers.IO)`: on a thread where blocking is allowed, and to the end even when the coroutine
 * is cancelled, before this function returns or throws. It releases as try-with-resources would
 * ([Lease.close]): a server that cannot be reached is logged, not thrown, and the lock expires at
 * the end of its lease; any other failure of the release is thrown, or added as suppressed to
 * [block]'s own exception.
 *
 * If the lock is not acquired in time, [block] is never called and [LockTimeoutException] is
 * thrown. A lease can be lost while [block] runs (expired, taken, renewal failed, session lost);
 * [block] can watch [Lease.lost] and should pass [Lease.fencingToken] to whatever the lock
 * protects. Nothing here stops [block] by itself.
 *
 * @param wait how long to wait for the lock; zero means one attempt
 * @param block what to run while the lock is held, given the lease
 * @return what [block] returns
 * @throws LockTimeoutException if the lock was not acquired in time
 * @throws IllegalArgumentException if [wait] is negative
 */
public suspend fun <T> DistributedLock.withLock(
    wait: java.time.Duration,
    block: suspend (Lease) -> T,
): T {
  val lease = acquireSuspending(wait)
  var failure: Throwable? = null
  try {
    return block(lease)
  } catch (e: Throwable) {
    failure = e
    throw e
  } finally {
    withContext(NonCancellable + Dispatchers.IO) {
      try {
        lease.close()
      } catch (e: RuntimeException) {
        val first = failure
        if (first == null) throw e else first.addSuppressed(e)
      }
    }
  }
}

/**
 * [withLock] with a [kotlin.time.Duration]: `lock.withLock(5.seconds) { lease -> ... }`.
 *
 * @param wait how long to wait for the lock; zero means one attempt
 * @param block what to run while the lock is held, given the lease
 * @return what [block] returns
 * @throws LockTimeoutException if the lock was not acquired in time
 * @throws IllegalArgumentException if [wait] is negative
 */
public suspend fun <T> DistributedLock.withLock(
    wait: kotlin.time.Duration,
    block: suspend (Lease) -> T,
): T = withLock(toJava(wait), block)

/**
 * Runs [block] while holding the exclusive lock `lock(name)` of this client, as
 * [DistributedLock.withLock] does.
 *
 * @param name the lock's name
 * @param wait how long to wait for the lock; zero means one attempt
 * @param block what to run while the lock is held, given the lease
 * @return what [block] returns
 * @throws LockTimeoutException if the lock was not acquired in time
 * @throws IllegalArgumentException if [wait] is negative or [name] is not a valid lock name
 * @throws IllegalStateException if the client is closed
 */
public suspend fun <T> LockClient.withLock(
    name: String,
    wait: java.time.Duration,
    block: suspend (Lease) -> T,
): T {
  checkWait(wait)
  return lock(name).withLock(wait, block)
}

/**
 * [LockClient.withLock] with a [kotlin.time.Duration]: `client.withLock("pay:42", 5.seconds) { ... }`.
 *
 * @param name the lock's name
 * @param wait how long to wait for the lock; zero means one attempt
 * @param block what to run while the lock is held, given the lease
 * @return what [block] returns
 * @throws LockTimeoutException if the lock was not acquired in time
 * @throws IllegalArgumentException if [wait] is negative or [name] is not a valid lock name
 * @throws IllegalStateException if the client is closed
 */
public suspend fun <T> LockClient.withLock(
    name: String,
    wait: kotlin.time.Duration,
    block: suspend (Lease) -> T,
): T = withLock(name, toJava(wait), block)

/**
 * Releases this lease ([Lease.release]) on [Dispatchers.IO]. The release runs to the end even if
 * the calling coroutine is cancelled (it is `NonCancellable`), so a release in a `finally` block
 * of a cancelled coroutine is not skipped.
 *
 * @return true if the lease was still held up to this release; false if it had already been
 *   released, lost or expired
 * @throws dev.locksmith.BackendUnavailableException if the server could not be reached; the lock
 *   then expires at the end of its lease
 */
public suspend fun Lease.releaseSuspending(): Boolean =
    withContext(NonCancellable + Dispatchers.IO) { release() }

/**
 * Waits for [DistributedLock.acquireAsync]'s future without parking a thread. Either the grant (or
 * failure) resumes the coroutine, or the cancellation wins:
 * - cancelled before the future completes: the future is cancelled, which withdraws the waiter
 *   and has the client release a lease granted at that same moment;
 * - the future completed first but the coroutine is cancelled before it runs again (or was
 *   cancelled just before the grant arrived): `resume`'s onCancellation handler gets the lease and
 *   releases it.
 *
 * Both the withdrawal and that release are handed to [Dispatchers.IO]: the thread that cancels or
 * completes may be a single-threaded dispatcher's or the client's own.
 */
private suspend fun awaitGrant(lock: DistributedLock, wait: java.time.Duration): Lease =
    suspendCancellableCoroutine { cont ->
      val pending: CompletableFuture<Lease> = lock.acquireAsync(wait)
      cont.invokeOnCancellation { offload { pending.cancel(false) } }
      pending.whenComplete { lease, error ->
        if (error == null) {
          cont.resume(lease) { _, granted, _ -> offload { closeQuietly(granted) } }
        } else {
          cont.resumeWithException(unwrap(error))
        }
      }
    }

private fun offload(task: () -> Unit) {
  ioExecutor.execute(task)
}

private val ioExecutor = Dispatchers.IO.asExecutor()

private fun closeQuietly(lease: Lease) {
  try {
    lease.close()
  } catch (e: RuntimeException) {
    // close() logs a server it cannot reach; anything else is logged here, as there is nobody to
    // throw it to: the coroutine that would have held this lease was cancelled.
    log.warn(
        "could not release lock '{}' granted to a cancelled coroutine; it expires at the end of" +
            " its lease",
        lease.lockName(),
        e,
    )
  }
}

private fun unwrap(error: Throwable): Throwable =
    if (error is CompletionException && error.cause != null) error.cause!! else error

private fun checkWait(wait: java.time.Duration) {
  require(!wait.isNegative) { "`wait` was $wait but it must be zero (one attempt) or above" }
}

private fun toJava(wait: kotlin.time.Duration): java.time.Duration {
  require(!wait.isNegative()) { "`wait` was $wait but it must be zero (one attempt) or above" }
  // INFINITE has no java.time form; the longest Duration waits as long as it takes
  // (acquireAsync treats a wait too long to count in nanoseconds so).
  return if (wait.isInfinite()) java.time.Duration.ofSeconds(Long.MAX_VALUE)
  else wait.toJavaDuration()
}
