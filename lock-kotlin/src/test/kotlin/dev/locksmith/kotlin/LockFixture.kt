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
 * Two clients of one backend and a fresh lock name per test, a single-threaded dispatcher, and the
 * checks of whether a lock is held, shared by the suspend and Flow tests of each backend.
 */
abstract class LockFixture {
  companion object {
    /** Long enough to never run out on a loaded CI machine; a lock left held makes it run out. */
    val LONG: Duration = Duration.ofSeconds(30)

    /** A wait nobody sits through: a waiter left behind would hold up the next acquirer so long. */
    val FOREVER: Duration = Duration.ofMinutes(10)
  }

  lateinit var client: LockClient
  lateinit var other: LockClient
  lateinit var name: String

  /** The dispatcher's only thread: anything that parks it stops every coroutine on it. */
  private lateinit var onlyThread: ExecutorService
  lateinit var single: CoroutineDispatcher

  /** The backend's URI. */
  abstract fun uri(): String

  @BeforeEach
  fun open(test: TestInfo) {
    // Leases far longer than LONG: a lock left held is found held, never freed by its expiry.
    val leased = uri() + (if (uri().contains("?")) "&" else "?") + "lease=300s"
    client = Locks.connect(leased)
    other = Locks.connect(leased)
    name = "kotlin-" + test.testMethod.orElseThrow().name + "-" + System.nanoTime()
    onlyThread = Executors.newSingleThreadExecutor { r -> Thread(r, "only-thread") }
    single = onlyThread.asCoroutineDispatcher()
  }

  @AfterEach
  fun close() {
    try {
      client.close()
      other.close()
    } finally {
      onlyThread.shutdownNow()
      onlyThread.awaitTermination(10, TimeUnit.SECONDS)
    }
  }

  /** Whether another client finds [lock] held now (one attempt, released at once). */
  fun isHeld(lock: String): Boolean {
    val lease = other.lock(lock).tryAcquire()
    lease.ifPresent { it.release() }
    return lease.isEmpty
  }

  fun assertHeld(lock: String) {
    assertThat(isHeld(lock)).`as`("lock %s held", lock).isTrue()
  }

  /** Free at once: for releases that complete before the call returns. */
  fun assertFreeNow(lock: String) {
    assertThat(isHeld(lock)).`as`("lock %s free at once", lock).isFalse()
  }

  /** Free within [LONG]: for releases made in the background after a cancel. */
  fun assertFree(lock: String) {
    val lease = other.lock(lock).tryAcquire(LONG)
    assertThat(lease).`as`("lock %s free within %s", lock, LONG).isPresent()
    lease.get().release()
  }

  suspend fun awaitUntil(what: String, condition: () -> Boolean) {
    val found = withTimeoutOrNull(LONG.toMillis()) {
      while (!condition()) {
        delay(2)
      }
      true
    }
    if (found == null) {
      fail<Unit>("waited $LONG for $what")
    }
  }
}
