package dev.locksmith.kotlin

import dev.locksmith.LockTimeoutException
import java.time.Duration
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.flow.catch
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.flow.flowOf
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.Test

/** The Flow forms on `local:`, with the contract's clients and helpers. */
class FlowLocksTest : LockFixture() {
  override fun uri(): String = "local:kotlin-flow-test"

  @Test
  fun theFlowIsCollectedWhileTheLockIsHeldAndReleasedWhenItCompletes() = runBlocking<Unit> {
    val lock = CountingLock(client.lock(name))
    val locked = flowOf(1, 2, 3).lockedBy(lock, LONG)
    assertThat(lock.futures).`as`("asked of the backend before collection").isEmpty()
    val seen = locked.onEach { assertHeld(name) }.toList()
    assertThat(seen).containsExactly(1, 2, 3)
    assertFreeNow(name)
    assertThat(locked.toList()).containsExactly(1, 2, 3)
    assertThat(lock.futures).`as`("one acquire per collection").hasSize(2)
    assertFreeNow(name)
  }

  @Test
  fun aCollectionStoppedEarlyByFirstReleasesTheLock() = runBlocking<Unit> {
    val endless = flow {
      var i = 0
      while (true) emit(i++)
    }
    assertThat(endless.lockedBy(client.lock(name), 5.seconds).first()).isEqualTo(0)
    assertFreeNow(name)
  }

  @Test
  fun aFailingFlowReleasesTheLockAndItsErrorGoesDownstream() = runBlocking<Unit> {
    val failing = flow {
      emit(1)
      throw IllegalStateException("boom")
    }
    val caught =
        failing.lockedBy(client.lock(name), LONG).catch { emit(-1) }.toList()
    assertThat(caught).containsExactly(1, -1)
    assertFreeNow(name)
  }

  @Test
  fun aCancelledCollectionReleasesTheLock() = runBlocking<Unit> {
    val collecting = CompletableDeferred<Unit>()
    val job =
        launch(Dispatchers.Default, start = CoroutineStart.DEFAULT) {
          flow<Int> {
                collecting.complete(Unit)
                awaitCancellation()
              }
              .lockedBy(client.lock(name), LONG)
              .toList()
        }
    // inside the flow, so the lease is withLock's: released before the cancelled job completes.
    // (Cancelled while the grant is on its way, it would be released in the background instead,
    // as the suspend contract checks.)
    collecting.await()
    assertHeld(name)
    job.cancelAndJoin()
    assertFreeNow(name)
  }

  @Test
  fun aHeldLockTimesOutWithoutCollectingTheFlow() = runBlocking<Unit> {
    val held = other.lock(name).acquire()
    var collected = false
    val thrown =
        runCatching {
              flow { collected = true; emit(1) }
                  .lockedBy(client.lock(name), Duration.ZERO)
                  .toList()
            }
            .exceptionOrNull()
    assertThat(thrown).isInstanceOf(LockTimeoutException::class.java)
    assertThat(collected).`as`("the flow collected without the lock").isFalse()
    held.release()
  }

  @Test
  fun flowWithLockEmitsWithTheLeaseWhileHeld() = runBlocking<Unit> {
    val tokens =
        client
            .lock(name)
            .flowWithLock<Long>(5.seconds) { lease ->
              emit(lease.fencingToken())
              emit(lease.fencingToken())
            }
            .map { it }
            .toList()
    assertThat(tokens).hasSize(2).allMatch { it == tokens[0] }
    assertFreeNow(name)
  }

  @Test
  fun aNegativeWaitIsRefusedWhenCalled() {
    for (call in
        listOf(
            { flowOf(1).lockedBy(client.lock(name), Duration.ofMillis(-1)) },
            { flowOf(1).lockedBy(client.lock(name), (-1).seconds) },
            { client.lock(name).flowWithLock<Int>((-1).seconds) {} },
        )) {
      assertThat(runCatching { call() }.exceptionOrNull())
          .isInstanceOf(IllegalArgumentException::class.java)
          .hasMessageContaining("`wait` was ")
          .hasMessageContaining("it must be zero (one attempt) or above")
    }
  }
}
