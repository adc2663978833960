package dev.locksmith.kotlin

import dev.locksmith.Lease
import dev.locksmith.LockClient
import dev.locksmith.LockTimeoutException
import dev.locksmith.Locks
import java.time.Duration
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.ExecutorService
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicBoolean
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicReference
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancel
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.joinAll
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.coroutines.yield
import org.assertj.core.api.Assertions.assertThat
import org.assertj.core.api.Assertions.fail
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInfo

/**
 * What the suspend functions promise, run against one backend by each subclass. Timing-sensitive
 * tests use runBlocking and real dispatchers, not kotlinx-coroutines-test's virtual time: the
 * backends wait in real time on their own threads.
 */
abstract class SuspendingLocksContract : LockFixture() {
  @Test
  fun acquireSuspendingGivesALeaseOnTheCallersDispatcherThatReleaseSuspendingGivesBack() =
      runBlocking<Unit> {
        val (lease, thread) =
            withContext(single) {
              client.lock(name).acquireSuspending(LONG) to Thread.currentThread().name
            }
        assertThat(thread).`as`("where the coroutine resumed").startsWith("only-thread")
        assertThat(lease.lockName()).isEqualTo(name)
        assertThat(lease.fencingToken()).isPositive()
        assertThat(lease.isValid).isTrue()
        assertHeld(name)

        assertThat(withContext(single) { lease.releaseSuspending() }).isTrue()
        assertFreeNow(name)
        assertThat(lease.releaseSuspending()).`as`("a second release").isFalse()

        val again = client.lock(name).acquireSuspending(5.seconds) // kotlin.time.Duration
        assertThat(again.fencingToken()).isGreaterThan(lease.fencingToken())
        assertThat(again.releaseSuspending()).isTrue()
        assertFreeNow(name)
      }

  @Test
  fun tryAcquireSuspendingIsNullWhileHeldAndALeaseWhenFree() = runBlocking<Unit> {
    other.lock(name).acquire(LONG).use { held ->
      assertThat(withContext(single) { client.lock(name).tryAcquireSuspending() }).isNull()
      assertThat(held.isValid).isTrue()
    }
    val lease = client.lock(name).tryAcquireSuspending()
    assertThat(lease).isNotNull()
    assertHeld(name)
    assertThat(lease!!.releaseSuspending()).isTrue()
    assertFreeNow(name)
  }

  @Test
  fun aTimeoutIsLockTimeoutExceptionAndTheBlockIsNeverCalled() = runBlocking<Unit> {
    other.lock(name).acquire(LONG).use {
      val thrown = runCatching { client.lock(name).acquireSuspending(Duration.ofMillis(300)) }
      assertThat(thrown.exceptionOrNull())
          .isInstanceOf(LockTimeoutException::class.java)
          .hasMessageContaining(name)
      val called = AtomicBoolean()
      val viaWithLock = runCatching {
        client.lock(name).withLock(300.milliseconds) { called.set(true) }
      }
      assertThat(viaWithLock.exceptionOrNull()).isInstanceOf(LockTimeoutException::class.java)
      assertThat(called).`as`("the block of a lock not acquired").isFalse()
    }
    assertFreeNow(name)
  }

  @Test
  fun withLockReturnsTheBlocksValueAndReleasesBeforeReturning() = runBlocking<Unit> {
    val token = client.lock(name).withLock(LONG) { lease ->
      assertHeld(name)
      lease.fencingToken()
    }
    assertThat(token).isPositive()
    assertFreeNow(name)
    val byName = client.withLock(name, LONG) { lease -> lease.lockName() }
    assertThat(byName).isEqualTo(name)
    assertFreeNow(name)
    assertThat(client.withLock(name, 5.seconds) { 7 }).isEqualTo(7)
    assertFreeNow(name)
  }

  @Test
  fun withLockReleasesAndRethrowsWhenTheBlockThrows() = runBlocking<Unit> {
    val boom = IllegalStateException("boom")
    val thrown = runCatching { client.lock(name).withLock(LONG) { throw boom } }
    assertThat(thrown.exceptionOrNull()).isSameAs(boom)
    assertThat(boom.suppressed).`as`("nothing went wrong with the release").isEmpty()
    assertFreeNow(name)
  }

  @Test
  fun releasesRunOnDispatchersIoNeverOnTheCallersThread() = runBlocking<Unit> {
    val lock = ThreadRecordingLock(client.lock(name))
    withContext(single) {
      lock.withLock(LONG) {}
      lock.acquireSuspending(LONG).releaseSuspending()
    }
    assertThat(lock.releaseThreads)
        .hasSize(2)
        .allSatisfy { assertThat(it).startsWith("DefaultDispatcher-worker") }
    assertFreeNow(name)
  }

  @Test
  fun waitersParkNoThread() = runBlocking<Unit> {
    // 50 coroutines wait on the dispatcher's only thread for a lock another client holds; one
    // more on that thread releases the holder. A waiter that parked the thread would stop it.
    // Their own scope, not runBlocking's: a failure is reported at once, not after the parked
    // thread lets go (close() then shuts the thread down).
    val holder = other.lock(name).acquire(LONG)
    val scope = CoroutineScope(single + Job())
    val inside = AtomicInteger()
    val most = AtomicInteger()
    val done = AtomicInteger()
    val waiters =
        (1..50).map {
          scope.launch {
            client.lock(name).withLock(FOREVER) {
              most.accumulateAndGet(inside.incrementAndGet(), ::maxOf)
              yield()
              inside.decrementAndGet()
              done.incrementAndGet()
            }
          }
        }
    val releaser =
        scope.launch {
          delay(200)
          holder.releaseSuspending()
        }
    val finished = withTimeoutOrNull(60.seconds) { (waiters + releaser).joinAll() }
    if (finished == null) {
      scope.cancel()
      fail<Unit>(
          "the waiters blocked the thread: after 60 s on a single-threaded dispatcher, the" +
              " holder was released=${releaser.isCompleted}, ${done.get()} of 50 waiters done")
    }
    assertThat(done).hasValue(50)
    assertThat(most).`as`("holders at once").hasValue(1)
    assertFreeNow(name)
  }

  @Test
  fun cancellingAWaitingCoroutineWithdrawsTheWaiter() = runBlocking<Unit> {
    val lock = CountingLock(client.lock(name))
    val held = other.lock(name).acquire(LONG)
    val delivered = AtomicReference<Lease>()
    val waiter = launch(single) { delivered.set(lock.acquireSuspending(FOREVER)) }
    awaitUntil("the waiter to start") { lock.futures.size == 1 }
    waiter.cancelAndJoin()
    assertThat(waiter.isCancelled).isTrue()
    awaitUntil("the waiter's future to be cancelled") { lock.futures[0].isCancelled }
    held.release()

    // Had the waiter stayed, it would get the lock and keep it for its 300 s lease.
    val started = System.nanoTime()
    val next = other.lock(name).tryAcquire(LONG)
    val tookMs = (System.nanoTime() - started) / 1_000_000
    assertThat(next).`as`("the lock, once its holder released it").isPresent()
    assertThat(tookMs).`as`("ms the next acquirer waited").isLessThan(5_000)
    next.get().release()
    assertThat(delivered.get()).`as`("a lease delivered after the cancel").isNull()
    assertFree(name)
  }

  @Test
  fun aTimeoutAroundTheWaitWithdrawsTheWaiter() = runBlocking<Unit> {
    val lock = CountingLock(client.lock(name))
    val held = other.lock(name).acquire(LONG)
    val got = withContext(single) { withTimeoutOrNull(300.milliseconds) { lock.acquireSuspending(FOREVER) } }
    assertThat(got).isNull()
    awaitUntil("the waiter's future to be cancelled") { lock.futures[0].isCancelled }
    held.release()
    val next = other.lock(name).tryAcquire(Duration.ofSeconds(5))
    assertThat(next).`as`("the lock, once its holder released it").isPresent()
    next.get().release()
    assertFree(name)
  }

  @Test
  fun cancellingInsideWithLockReleasesTheLease() = runBlocking<Unit> {
    val entered = CompletableDeferred<Lease>()
    val job = launch(single) {
      client.lock(name).withLock(LONG) { lease ->
        entered.complete(lease)
        awaitCancellation()
      }
    }
    val lease = withTimeout(LONG.toMillis()) { entered.await() }
    assertHeld(name)
    job.cancelAndJoin()
    assertThat(lease.isValid).`as`("the lease after the cancel").isFalse()
    // The release ran before the cancelled coroutine completed: free at once, and for anyone.
    val next = other.lock(name).tryAcquire(Duration.ofSeconds(2))
    assertThat(next).`as`("the lock within 2 s of the cancel").isPresent()
    next.get().release()
  }

  @Test
  fun aGrantRacingACancelNeverLeavesTheLockHeld() = runBlocking<Unit> {
    // Even rounds: acquireSuspending, whose lease is the test's to release only if the coroutine
    // got it before the cancel. Odd rounds: withLock, which must release whatever it got itself.
    val lock = CountingLock(client.lock(name))
    val delivered = ConcurrentLinkedQueue<Lease>()
    for (round in 0 until 200) {
      // A lease left held by the round before (300 s) fails this; one released in the background
      // after the cancel is waited for.
      val held =
          other.lock(name).tryAcquire(Duration.ofSeconds(10)).orElseThrow {
            AssertionError("round $round: the lock stayed held after round ${round - 1}'s cancel")
          }
      val before = lock.futures.size
      val waiter =
          launch(Dispatchers.Default) {
            if (round % 2 == 0) {
              delivered.add(lock.acquireSuspending(LONG))
            } else {
              lock.withLock(LONG) { awaitCancellation() } // withLock's to release, not ours
            }
          }
      awaitUntil("round $round's waiter to start") { lock.futures.size > before }
      held.release()
      repeat(round % 40 * 25) { Thread.onSpinWait() } // cancel at a different moment each round
      waiter.cancelAndJoin()
      while (true) {
        val lease = delivered.poll() ?: break
        lease.release() // a lease acquireSuspending delivered before the cancel is ours to release
      }
    }
    assertFree(name)
  }
}
