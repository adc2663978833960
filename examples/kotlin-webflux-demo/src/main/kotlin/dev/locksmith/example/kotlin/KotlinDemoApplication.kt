package dev.locksmith.example.kotlin

import dev.locksmith.LockClient
import dev.locksmith.kotlin.withLock
import java.time.Duration
import java.util.concurrent.CopyOnWriteArrayList
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.runBlocking
import org.slf4j.LoggerFactory
import org.springframework.boot.ApplicationArguments
import org.springframework.boot.ApplicationRunner
import org.springframework.boot.autoconfigure.SpringBootApplication
import org.springframework.boot.runApplication
import org.springframework.context.annotation.Bean

/**
 * A Kotlin service on Spring WebFlux whose stock is taken under `@Locked` suspend functions: the
 * lock is held across the function's suspensions, and no thread waits for it.
 */
@SpringBootApplication(proxyBeanMethods = false)
class KotlinDemoApplication {
  @Bean fun store(): StockStore = StockStore(100)

  @Bean fun stock(store: StockStore): Stock = Stock(store)

  @Bean fun demo(stock: Stock, store: StockStore, client: LockClient): Demo = Demo(stock, store, client)
}

/** What the application does at start, as three lines (kept for its test). */
class Demo(
    private val stock: Stock,
    private val store: StockStore,
    private val client: LockClient,
) : ApplicationRunner {
  val lines: MutableList<String> = CopyOnWriteArrayList()

  override fun run(args: ApplicationArguments) = runBlocking {
    // 4 coroutines on 2 threads or more, 5 takes each, every take suspended while it holds the lock
    (1..4).map { async(Dispatchers.Default) { repeat(5) { stock.take("sku-demo") } } }.awaitAll()
    say("4 coroutines took 20 items under @Locked suspend functions: ${store.left("sku-demo")} of 100 left")

    val latest = store.lastToken("sku-demo")
    val accepted = store.write("sku-demo", 0, latest - 1)
    say(
        "a zombie writing with an old fencing token (${latest - 1}, latest $latest): " +
            if (accepted) "ACCEPTED" else "refused by the fence")

    // lock-kotlin without the annotation: a suspend block under a lock, released however it ends
    val token = client.withLock("stock-report", Duration.ofSeconds(5)) { lease -> lease.fencingToken() }
    say("client.withLock(\"stock-report\") ran its block under fencing token $token")
  }

  private fun say(line: String) {
    lines.add(line)
    LOG.info(line)
  }

  private companion object {
    val LOG = LoggerFactory.getLogger(Demo::class.java)
  }
}

/** Starts the application: `examples/run kotlin`. */
fun main(args: Array<String>) {
  runApplication<KotlinDemoApplication>(*args)
}
