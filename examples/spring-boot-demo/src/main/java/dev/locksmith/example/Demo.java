package dev.locksmith.example;

import dev.locksmith.micrometer.LockMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.springframework.boot.CommandLineRunner;

/** What the example shows, printed: concurrent takes that lose nothing, a refused stale write, the meters. */
public class Demo implements CommandLineRunner {
  static final int WORKERS = 4;
  static final int TAKES = 5;

  private final Inventory inventory;
  private final MeterRegistry registry;
  /** What the run printed, for the example's test. */
  final List<String> lines = new ArrayList<>();

  Demo(Inventory inventory, MeterRegistry registry) {
    this.inventory = inventory;
    this.registry = registry;
  }

  private void say(String line) {
    lines.add(line);
    System.out.println(line); // an example application's own output
  }

  @Override
  public void run(String... args) throws Exception {
    inventory.stock("sku-1", 100);
    ExecutorService pool = Executors.newFixedThreadPool(WORKERS);
    long lastToken = 0;
    try {
      List<Future<Long>> tokens = new ArrayList<>();
      for (int i = 0; i < WORKERS * TAKES; i++) {
        tokens.add(pool.submit(() -> inventory.take("sku-1", 1, null)));
      }
      for (Future<Long> t : tokens) {
        lastToken = Math.max(lastToken, t.get(30, TimeUnit.SECONDS));
      }
    } finally {
      pool.shutdownNow();
    }
    say(WORKERS + " workers took " + (WORKERS * TAKES) + " items under @Locked: " + inventory.qty("sku-1") + " of 100 left");
    long stale = lastToken - 1;
    boolean written = inventory.write("sku-1", 0, stale);
    say("a zombie writing with an old fencing token (" + stale + ", latest " + lastToken + "): "
        + (written ? "ACCEPTED (wrong)" : "refused by the fence"));
    Timer acquire = registry.find(LockMetrics.ACQUIRE).tag("outcome", "acquired").timer();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while ((acquire == null || acquire.count() < WORKERS * TAKES) && System.nanoTime() < deadline) {
      Thread.sleep(5); // events reach the meters just after each call
      acquire = registry.find(LockMetrics.ACQUIRE).tag("outcome", "acquired").timer();
    }
    say(String.format("metrics: %s{outcome=acquired} count=%d mean=%.2f ms max=%.2f ms; %s=%.0f", LockMetrics.ACQUIRE,
        acquire == null ? 0 : acquire.count(), acquire == null ? 0 : acquire.mean(TimeUnit.MILLISECONDS),
        acquire == null ? 0 : acquire.max(TimeUnit.MILLISECONDS), LockMetrics.HELD,
        registry.get(LockMetrics.HELD).gauge().value()));
  }
}
