package dev.locksmith.example;

import dev.locksmith.Lease;
import dev.locksmith.spring.Locked;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;

/** Stock kept in a table; every change is a read-modify-write that only the lock makes safe. */
public class Inventory {
  private final JdbcTemplate jdbc;

  Inventory(JdbcTemplate jdbc) {
    this.jdbc = jdbc;
    jdbc.execute("CREATE TABLE IF NOT EXISTS stock (sku VARCHAR(32) PRIMARY KEY, qty INT NOT NULL, fence BIGINT NOT NULL)");
  }

  /**
   * @param sku the item
   * @param qty how many there are
   */
  public void stock(String sku, int qty) {
    jdbc.update("MERGE INTO stock (sku, qty, fence) KEY (sku) VALUES (?, ?, 0)", sku, qty);
  }

  /**
   * Takes {@code n} items under lock "stock:&lt;sku&gt;", inside a transaction that commits before
   * the lock is released. The write is fenced: the row remembers the highest token that wrote it
   * and refuses lower ones, so a holder that lost its lock without knowing cannot overwrite.
   *
   * @param sku the item
   * @param n how many to take
   * @param lease filled by the advice; callers pass null
   * @return the fencing token the write used
   */
  @Locked(name = "stock", key = "#sku", waitFor = "10s")
  @Transactional
  public long take(String sku, int n, Lease lease) {
    Integer qty = jdbc.queryForObject("SELECT qty FROM stock WHERE sku = ?", Integer.class, sku);
    if (!write(sku, qty - n, lease.fencingToken())) {
      throw new IllegalStateException("fenced write refused: token " + lease.fencingToken() + " is stale");
    }
    return lease.fencingToken();
  }

  /**
   * @param sku the item
   * @param qty the new quantity
   * @param token the writer's fencing token
   * @return whether the row took it (false: a later holder has written already)
   */
  public boolean write(String sku, int qty, long token) {
    return jdbc.update("UPDATE stock SET qty = ?, fence = ? WHERE sku = ? AND fence < ?", qty, token, sku, token) == 1;
  }

  /**
   * @param sku the item
   * @return how many there are
   */
  public int qty(String sku) {
    return jdbc.queryForObject("SELECT qty FROM stock WHERE sku = ?", Integer.class, sku);
  }
}
