package dev.locksmith.example.kotlin

import dev.locksmith.Lease
import dev.locksmith.spring.Locked
import java.util.concurrent.ConcurrentHashMap
import kotlinx.coroutines.delay
import org.springframework.web.bind.annotation.PathVariable
import org.springframework.web.bind.annotation.PostMapping
import org.springframework.web.bind.annotation.RestController

/** One take: the stock left and the fencing token the write used. */
data class Taken(val sku: String, val left: Int, val fencingToken: Long)

/**
 * The stock, taken one item at a time under a lock per SKU. `open`, so that Spring can proxy it
 * (or use the kotlin-spring compiler plugin).
 */
open class Stock(private val store: StockStore) {
  /**
   * Reads the count, suspends (as a call to a database or another service would), and writes it
   * back fenced: without the lock, two takes would read the same count and one item would be lost.
   * The advice fills [lease]; callers leave it out.
   */
  @Locked(name = "stock", key = "#sku", waitFor = "10s")
  open suspend fun take(sku: String, lease: Lease? = null): Taken {
    val left = store.left(sku)
    delay(2)
    val token = lease!!.fencingToken()
    check(store.write(sku, left - 1, token)) { "the fence refused token $token for $sku" }
    return Taken(sku, left - 1, token)
  }
}

/**
 * The data the lock guards: a count per SKU, and the highest fencing token that wrote it, so that
 * a write with a lower token (a holder whose lease ran out while it was paused) is refused.
 */
class StockStore(private val initial: Int) {
  private class Row(val left: Int, val token: Long)

  private val rows = ConcurrentHashMap<String, Row>()

  /** @return how many items of [sku] are left */
  fun left(sku: String): Int = rows[sku]?.left ?: initial

  /** @return the highest fencing token that wrote [sku], 0 if none did */
  fun lastToken(sku: String): Long = rows[sku]?.token ?: 0

  /** Writes [left] under [token]; @return false, writing nothing, if a higher token wrote before */
  fun write(sku: String, left: Int, token: Long): Boolean {
    var written = false
    rows.compute(sku) { _, row ->
      if (row != null && token < row.token) {
        row
      } else {
        written = true
        Row(left, token)
      }
    }
    return written
  }
}

/** `POST /stock/{sku}/take`: a suspend handler calling the locked suspend function. */
@RestController
class StockController(private val stock: Stock) {
  @PostMapping("/stock/{sku}/take")
  suspend fun take(@PathVariable("sku") sku: String): Taken = stock.take(sku)
}
