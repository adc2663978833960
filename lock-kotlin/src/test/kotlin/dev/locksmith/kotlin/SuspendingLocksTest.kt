package dev.locksmith.kotlin

import java.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.cancel
import kotlinx.coroutines.test.runTest
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.Test

/** The suspend functions on `local:`: the whole contract, then what needs no server. */
class SuspendingLocksTest : SuspendingLocksContract() {
  override fun uri(): String = "local:kotlin-test"

  @Test
  fun aNegativeWaitIsRefusedNamingTheParameterItsValueAndWhatIsValid() = runTest {
    val lock = CountingLock(client.lock(name))
    for (call in
        listOf<suspend () -> Any?>(
            { lock.acquireSuspending(Duration.ofMillis(-1)) },
            { lock.acquireSuspending((-1).milliseconds) },
            { lock.withLock(Duration.ofSeconds(-1)) { 1 } },
            { lock.withLock((-1).seconds) { 1 } },
            { client.withLock(name, Duration.ofSeconds(-1)) { 1 } },
            { client.withLock(name, (-1).seconds) { 1 } },
        )) {
      val thrown = runCatching { call() }.exceptionOrNull()
      assertThat(thrown)
          .isInstanceOf(IllegalArgumentException::class.java)
          .hasMessageContaining("`wait` was ")
          .hasMessageContaining("-")
          .hasMessageContaining("it must be zero (one attempt) or above")
    }
    assertThat(runCatching { lock.acquireSuspending(Duration.ofMillis(-1500)) }.exceptionOrNull())
        .hasMessageContaining("PT-1.5S")
    assertThat(lock.futures).`as`("what was asked of the backend").isEmpty()
    assertFreeNow(name)
  }

  @Test
  fun anElectionsCandidateCampaignsSuspendingUnderItsIdentity() = runTest {
    val election = client.election(name)
    val term =
        election.candidate("kotlin-1").withLock(Duration.ofSeconds(5)) { lease ->
          val leader = other.election(name).leader().orElseThrow()
          assertThat(leader.identity()).contains("kotlin-1")
          assertThat(leader.term().asLong).isEqualTo(lease.fencingToken())
          lease.fencingToken()
        }
    assertThat(term).isPositive()
    assertThat(election.leader()).isEmpty()
  }

  @Test
  fun aZeroWaitIsOneAttemptAndAnInfiniteOneWaitsAsLongAsItTakes() = runTest {
    val held = client.lock(name).acquireSuspending(Duration.ZERO)
    assertThat(runCatching { other.lock(name).acquireSuspending(kotlin.time.Duration.ZERO) }
            .exceptionOrNull())
        .isInstanceOf(dev.locksmith.LockTimeoutException::class.java)
    held.releaseSuspending()
    val forever = other.lock(name).acquireSuspending(kotlin.time.Duration.INFINITE)
    assertThat(forever.releaseSuspending()).isTrue()
    assertFreeNow(name)
  }

  @Test
  fun anAlreadyCancelledCoroutineAsksNothingOfTheBackend() = runTest {
    val lock = CountingLock(client.lock(name))
    val attempt =
        async(start = CoroutineStart.UNDISPATCHED) {
          cancel() // this coroutine, before it asks for the lock
          lock.acquireSuspending(LONG)
        }
    assertThat(runCatching { attempt.await() }.exceptionOrNull())
        .isInstanceOf(kotlinx.coroutines.CancellationException::class.java)
    assertThat(lock.futures).isEmpty()
    assertFreeNow(name)
  }

  @Test
  fun aClosedClientIsIllegalStateException() = runTest {
    val lock = client.lock(name)
    client.close()
    assertThat(runCatching { lock.acquireSuspending(LONG) }.exceptionOrNull())
        .isInstanceOf(IllegalStateException::class.java)
    assertThat(runCatching { lock.tryAcquireSuspending() }.exceptionOrNull())
        .isInstanceOf(IllegalStateException::class.java)
  }
}
