package dev.locksmith.kotlin

import dev.locksmith.DistributedLock
import dev.locksmith.Lease
import java.time.Duration
import java.util.concurrent.CompletableFuture
import java.util.concurrent.CopyOnWriteArrayList

/**
 * A real lock of a real client that records every future [acquireAsync] returned, to see when a
 * waiter has started and that a cancelled waiter's future was cancelled. The futures are the
 * client's own, unchanged: what the suspend functions do with them is what they do with any lock.
 */
class CountingLock(private val lock: DistributedLock) : DistributedLock by lock {
  val futures: MutableList<CompletableFuture<Lease>> = CopyOnWriteArrayList()

  override fun acquireAsync(timeout: Duration): CompletableFuture<Lease> =
      lock.acquireAsync(timeout).also { futures.add(it) }
}

/**
 * A real lock of a real client whose leases record the thread of every [Lease.release] and
 * [Lease.close], to see where the suspend functions release. The future it returns is its own,
 * forwarding a cancel to the client's future (and closing a lease that arrives after the cancel).
 */
class ThreadRecordingLock(private val lock: DistributedLock) : DistributedLock by lock {
  val releaseThreads: MutableList<String> = CopyOnWriteArrayList()

  override fun acquireAsync(timeout: Duration): CompletableFuture<Lease> {
    val theirs = lock.acquireAsync(timeout)
    val ours = CompletableFuture<Lease>()
    theirs.whenComplete { lease, error ->
      if (error != null) {
        ours.completeExceptionally(error)
      } else if (!ours.complete(Recording(lease))) {
        lease.close()
      }
    }
    ours.whenComplete { _, _ -> if (ours.isCancelled) theirs.cancel(false) }
    return ours
  }

  private inner class Recording(private val lease: Lease) : Lease by lease {
    override fun release(): Boolean {
      releaseThreads.add(Thread.currentThread().name)
      return lease.release()
    }

    override fun close() {
      releaseThreads.add(Thread.currentThread().name)
      lease.close()
    }
  }
}
