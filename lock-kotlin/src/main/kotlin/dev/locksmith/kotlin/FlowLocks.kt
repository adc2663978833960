/**
 * [Flow] forms of the lock API: collect a flow while a lock is held, built on the suspend forms of
 * [SuspendingLocks] (so, like them, over the public API of `lock-api` only).
 */
@file:JvmName("FlowLocks")

package dev.locksmith.kotlin

import dev.locksmith.DistributedLock
import dev.locksmith.Lease
import dev.locksmith.LockTimeoutException
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.FlowCollector
import kotlinx.coroutines.flow.emitAll
import kotlinx.coroutines.flow.flow

/**
 * This flow, collected while [lock] is held: each collection acquires the lock as
 * [acquireSuspending] does (nothing is asked of the backend before collection starts, and every
 * collection acquires again, so `retry()` and `repeat`-style re-collection take it again), then
 * collects this flow, and releases the lease as [withLock] does when the collection completes,
 * fails, or is cancelled, also when a downstream operator such as `take(n)` or `first()` stops it
 * early. The release runs on `Dispatchers.IO` and is done before the collection returns or throws.
 *
 * ```kotlin
 * events.lockedBy(client.lock("projector"), 5.seconds).collect { project(it) }
 * ```
 *
 * @param lock any lock of a client: a lock, a semaphore, a read-write lock's side or a set
 * @param wait how long each collection waits for the lock; zero means one attempt
 * @return a cold flow of this flow's values
 * @throws IllegalArgumentException if [wait] is negative (when called, not when collected)
 * @throws LockTimeoutException from the collection, if the lock was not acquired in time (this
 *   flow is then never collected)
 */
public fun <T> Flow<T>.lockedBy(lock: DistributedLock, wait: java.time.Duration): Flow<T> {
  require(!wait.isNegative) { "`wait` was $wait but it must be zero (one attempt) or above" }
  val upstream = this
  return flow { lock.withLock(wait) { emitAll(upstream) } }
}

/**
 * [lockedBy] with a [kotlin.time.Duration]: `events.lockedBy(lock, 5.seconds)`.
 *
 * @param lock any lock of a client
 * @param wait how long each collection waits for the lock; zero means one attempt
 * @return a cold flow of this flow's values
 * @throws IllegalArgumentException if [wait] is negative
 */
public fun <T> Flow<T>.lockedBy(lock: DistributedLock, wait: kotlin.time.Duration): Flow<T> {
  require(!wait.isNegative()) { "`wait` was $wait but it must be zero (one attempt) or above" }
  return lockedBy(
      lock,
      if (wait.isInfinite()) java.time.Duration.ofSeconds(Long.MAX_VALUE)
      else java.time.Duration.ofNanos(wait.inWholeNanoseconds))
}

/**
 * A flow whose values [block] emits while [lock] is held, given the lease (for its fencing token):
 * each collection acquires, runs [block], and releases as [lockedBy] does.
 *
 * ```kotlin
 * val rows = client.lock("export").flowWithLock(5.seconds) { lease ->
 *   for (page in pages()) emit(export(page, lease.fencingToken()))
 * }
 * ```
 *
 * @param wait how long each collection waits for the lock; zero means one attempt
 * @param block emits the flow's values while the lock is held
 * @return a cold flow of what [block] emits
 * @throws IllegalArgumentException if [wait] is negative (when called)
 */
public fun <T> DistributedLock.flowWithLock(
    wait: kotlin.time.Duration,
    block: suspend FlowCollector<T>.(Lease) -> Unit,
): Flow<T> {
  require(!wait.isNegative()) { "`wait` was $wait but it must be zero (one attempt) or above" }
  val lock = this
  return flow { lock.withLock(wait) { lease -> block(lease) } }
}
