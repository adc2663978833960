package dev.locksmith.example;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /stock/{sku}/take}: takes one item under the lock {@code stock:<sku>} (see
 * {@link Inventory#take}) and answers with what is left and the fencing token the write used.
 */
@RestController
public class StockController {
  private final Inventory inventory;

  StockController(Inventory inventory) {
    this.inventory = inventory;
  }

  /**
   * @param sku the item
   * @return the item, how many are left, and the fencing token of the lock the take held
   */
  @PostMapping("/stock/{sku}/take")
  public Map<String, Object> take(@PathVariable String sku) {
    long token = inventory.take(sku, 1, null); // the @Locked advice fills the Lease parameter
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("sku", sku);
    out.put("left", inventory.qty(sku));
    out.put("fencingToken", token);
    return out;
  }
}
