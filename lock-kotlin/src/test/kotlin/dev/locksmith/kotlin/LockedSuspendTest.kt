package dev.locksmith.kotlin

import dev.locksmith.Lease
import dev.locksmith.LockClient
import dev.locksmith.Locks
import dev.locksmith.spring.Locked
import dev.locksmith.spring.LockBusyException
import dev.locksmith.spring.LocksmithAutoConfiguration
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flowOf
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.yield
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.Test
import org.springframework.boot.autoconfigure.AutoConfigurations
import org.springframework.boot.test.context.runner.ApplicationContextRunner
import org.springframework.context.annotation.Bean
import org.springframework.context.annotation.Configuration

/**
 * `@Locked` on Kotlin `suspend` functions, through the starter's advice in a real Spring context on
 * `local:`: the lock is held from the call until the function returns, throws or is cancelled,
 * across its suspensions, and onBusy keeps its meaning. Before the starter knew suspend functions,
 * the advice released the lock as soon as Spring handed it the function's (not yet started) call,
 * so every test here that looks at the lock while the function is suspended failed.
 */
class LockedSuspendTest {
  /** What the bodies did: kept outside the bean, whose proxy has fields of its own. */
  class Seen {
    val calls = AtomicInteger()
    val running = AtomicInteger()
    val most = AtomicInteger()
    val events = CopyOnWriteArrayList<String>()
  }

  /** The service under test: open, so Spring can proxy it. */
  open class Jobs(private val seen: Seen) {
    @Locked(name = "suspend", key = "#id")
    open suspend fun waitsFor(id: String, gate: CompletableDeferred<Unit>, lease: Lease?): String {
      seen.calls.incrementAndGet()
      seen.events.add("token ${lease?.fencingToken()} of ${lease?.lockName()}")
      gate.await()
      return "done $id"
    }

    @Locked(name = "count", waitFor = "10s")
    open suspend fun counts(): Int {
      val now = seen.running.incrementAndGet()
      seen.most.accumulateAndGet(now) { a, b -> maxOf(a, b) }
      delay(5)
      yield()
      seen.running.decrementAndGet()
      return now
    }

    @Locked(name = "fails")
    open suspend fun fails(): String {
      delay(1)
      throw IllegalStateException("the work failed")
    }

    @Locked(name = "busy")
    open suspend fun busyThrows(): String = "ran"

    @Locked(name = "busy", onBusy = Locked.OnBusy.SKIP)
    open suspend fun busySkips(): String? = "ran"

    @Locked(name = "busy", onBusy = Locked.OnBusy.FALLBACK, fallback = "whenBusy")
    open suspend fun busyFallsBack(): String = "ran"

    open suspend fun whenBusy(): String {
      delay(1)
      return "fallback"
    }
  }

  /** The application. */
  @Configuration(proxyBeanMethods = false)
  open class App {
    @Bean open fun seen(): Seen = Seen()

    @Bean open fun jobs(seen: Seen): Jobs = Jobs(seen)
  }

  /** A suspend function whose result, a stream, would be consumed after the lock is gone. */
  open class ReturnsAFlow {
    @Locked(name = "flow") open suspend fun values(): Flow<Int> = flowOf(1, 2)
  }

  /** A suspend function that SKIP would make return null, though its type says it never does. */
  open class SkipsToNull {
    @Locked(name = "skip", onBusy = Locked.OnBusy.SKIP) open suspend fun value(): String = "v"
  }

  /** The starter on `local:`, with no bean of the test's own. */
  private fun bare(): ApplicationContextRunner =
      ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration::class.java))
          .withPropertyValues("locksmith.uri=local:locked-suspend-test")

  private val runner = bare().withUserConfiguration(App::class.java)

  private fun heldForOthers(name: String): Boolean {
    val state = OTHER.lock(name).state()
    assertThat(state.isKnown).isTrue()
    return state.isHeld
  }

  @Test
  fun theLockIsHeldWhileTheFunctionIsSuspendedAndFreedWhenItReturns() {
    runner.run { ctx ->
      val jobs = ctx.getBean(Jobs::class.java)
      val seen = ctx.getBean(Seen::class.java)
      runBlocking {
        val gate = CompletableDeferred<Unit>()
        val call = async(Dispatchers.Default) { jobs.waitsFor("a", gate, null) }
        withTimeout(10_000) { while (seen.calls.get() == 0) delay(5) }
        assertThat(heldForOthers("suspend:a"))
            .`as`("held while the function is suspended in gate.await()")
            .isTrue()
        assertThat(OTHER.lock("suspend:a").tryAcquire()).isEmpty()
        gate.complete(Unit)
        assertThat(call.await()).isEqualTo("done a")
        assertThat(heldForOthers("suspend:a")).`as`("free once it returned").isFalse()
      }
      assertThat(seen.events.single()).matches("token [1-9][0-9]* of suspend:a")
    }
  }

  @Test
  fun callsOnOneLockTakeTurns() {
    runner.run { ctx ->
      val jobs = ctx.getBean(Jobs::class.java)
      val seen = ctx.getBean(Seen::class.java)
      runBlocking(Dispatchers.Default) {
        val results = (1..20).map { async { jobs.counts() } }.map { it.await() }
        assertThat(results).containsOnly(1)
      }
      assertThat(seen.most.get()).`as`("bodies running at once").isEqualTo(1)
      assertThat(heldForOthers("count")).isFalse()
    }
  }

  @Test
  fun aFailureIsTheCallersAndReleasesTheLock() {
    runner.run { ctx ->
      val jobs = ctx.getBean(Jobs::class.java)
      val thrown = runBlocking { runCatching { jobs.fails() }.exceptionOrNull() }
      assertThat(thrown)
          .isInstanceOf(IllegalStateException::class.java)
          .hasMessage("the work failed")
      assertThat(heldForOthers("fails")).isFalse()
    }
  }

  @Test
  fun cancellingTheCallerReleasesTheLock() {
    runner.run { ctx ->
      val jobs = ctx.getBean(Jobs::class.java)
      val seen = ctx.getBean(Seen::class.java)
      runBlocking {
        val gate = CompletableDeferred<Unit>()
        val job = launch(Dispatchers.Default) { jobs.waitsFor("c", gate, null) }
        withTimeout(10_000) { while (seen.calls.get() == 0) delay(5) }
        assertThat(heldForOthers("suspend:c")).isTrue()
        job.cancelAndJoin()
        withTimeout(10_000) { while (heldForOthers("suspend:c")) delay(5) }
        assertThat(gate.isCompleted).`as`("the body never went on").isFalse()
      }
    }
  }

  @Test
  fun onBusyThrowsSkipsOrFallsBack() {
    runner.run { ctx ->
      val jobs = ctx.getBean(Jobs::class.java)
      OTHER.lock("busy").acquire().use {
        runBlocking {
          assertThat(runCatching { jobs.busyThrows() }.exceptionOrNull())
              .isInstanceOf(LockBusyException::class.java)
              .hasMessageContaining("busy")
          assertThat(jobs.busySkips()).isNull()
          assertThat(jobs.busyFallsBack()).isEqualTo("fallback")
        }
      }
      runBlocking {
        assertThat(jobs.busyThrows()).isEqualTo("ran")
        assertThat(jobs.busySkips()).isEqualTo("ran")
        assertThat(jobs.busyFallsBack()).isEqualTo("ran")
      }
    }
  }

  @Test
  fun aSuspendFunctionReturningAStreamFailsTheStartNamingIt() {
    bare()
        .withBean(ReturnsAFlow::class.java)
        .run { ctx ->
          assertThat(ctx.startupFailure)
              .rootCause()
              .hasMessageContaining("ReturnsAFlow.values(")
              .hasMessageContaining("suspend function returning kotlinx.coroutines.flow.Flow")
        }
  }

  @Test
  fun skipOnANonNullableResultFailsTheStartNamingIt() {
    bare()
        .withBean(SkipsToNull::class.java)
        .run { ctx ->
          assertThat(ctx.startupFailure)
              .rootCause()
              .hasMessageContaining("SkipsToNull.value(")
              .hasMessageContaining("onBusy = SKIP returns null")
              .hasMessageContaining("not nullable")
        }
  }

  private companion object {
    /** Another client of the same in-process space: it sees what the advice holds. */
    val OTHER: LockClient = Locks.connect("local:locked-suspend-test")
  }
}
