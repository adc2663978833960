package dev.locksmith.bench;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The scale run, in a JVM of its own: one client takes N locks with auto-renew on and holds them
 * for several renewal periods. Measures the server's command counts per renewal period (Redis INFO
 * commandstats deltas), the round trips they took, the client process's CPU while only renewing,
 * and the heap each held lock costs (used heap after full GCs, before and after taking them).
 *
 * <p>Usage: {@code ScaleRun <locksmith-redis|redisson-lock> <locks> <lease-ms> <periods>}.
 */
public final class ScaleRun {
  static final java.util.Set<String> CLIENT_REQUESTS =
      java.util.Set.of(
          "eval", "evalsha", "eval_ro", "evalsha_ro", "script|load", "fcall", "fcall_ro");

  private ScaleRun() {}

  /**
   * @param args implementation id, number of locks, lease in ms, renewal periods to measure
   * @throws Exception if the run fails
   */
  public static void main(String[] args) throws Exception {
    String impl = args[0];
    int locks = Integer.parseInt(args[1]);
    long leaseMillis = Long.parseLong(args[2]);
    int periods = Integer.parseInt(args[3]);
    // Both libraries renew every third of the lease.
    long periodMillis = leaseMillis / 3;
    String endpoint = Endpoints.require("redis");
    Properties p = new Properties();
    p.setProperty("locks", Integer.toString(locks));
    p.setProperty("periodMs", Long.toString(periodMillis));
    MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    String prefix = "bench-s-" + Long.toHexString(System.nanoTime()) + "-";
    try (RedisStats stats = new RedisStats(endpoint)) {
      if (impl.equals("locksmith-redis")) {
        try (LockClient client =
            Locks.connect("redis://" + endpoint + "?lease=" + leaseMillis + "ms&renew=true")) {
          client.lock(prefix + "warm").acquire(Duration.ofSeconds(5)).close();
          long heapBefore = usedAfterGc(memory);
          List<Lease> held = new ArrayList<>(locks);
          long t0 = System.nanoTime();
          for (int i = 0; i < locks; i++) {
            held.add(client.lock(prefix + i).acquire(Duration.ofSeconds(10)));
          }
          p.setProperty(
              "acquireAllMs", Long.toString(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)));
          long heapAfter = usedAfterGc(memory);
          p.setProperty("heapPerLockBytes", Long.toString((heapAfter - heapBefore) / locks));
          Object node = redisNode(client);
          measure(p, stats, os, periodMillis, periods, () -> roundTrips(node));
          long valid = held.stream().filter(Lease::isValid).count();
          p.setProperty("stillValid", Long.toString(valid));
          for (Lease lease : held) {
            lease.close();
          }
        }
      } else if (impl.equals("redisson-lock")) {
        Config config = new Config();
        config.useSingleServer().setAddress("redis://" + endpoint);
        config.setLockWatchdogTimeout(leaseMillis);
        RedissonClient redisson = Redisson.create(config);
        try {
          RLock warm = redisson.getLock(prefix + "warm");
          warm.lock();
          warm.unlock();
          long heapBefore = usedAfterGc(memory);
          List<RLock> held = new ArrayList<>(locks);
          long t0 = System.nanoTime();
          for (int i = 0; i < locks; i++) {
            RLock lock = redisson.getLock(prefix + i);
            lock.lock();
            held.add(lock);
          }
          p.setProperty(
              "acquireAllMs", Long.toString(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)));
          long heapAfter = usedAfterGc(memory);
          p.setProperty("heapPerLockBytes", Long.toString((heapAfter - heapBefore) / locks));
          measure(p, stats, os, periodMillis, periods, () -> -1L);
          long valid = held.stream().filter(RLock::isHeldByCurrentThread).count();
          p.setProperty("stillValid", Long.toString(valid));
          for (RLock lock : held) {
            lock.unlock();
          }
        } finally {
          redisson.shutdown();
        }
      } else {
        throw new IllegalArgumentException(
            "scale run knows locksmith-redis and redisson-lock, not '" + impl + "'");
      }
    }
    PrintStream out = System.out;
    out.println("#RESULT");
    p.store(out, impl);
    out.flush();
    System.exit(0);
  }

  private static void measure(
      Properties p,
      RedisStats stats,
      com.sun.management.OperatingSystemMXBean os,
      long periodMillis,
      int periods,
      java.util.function.LongSupplier clientRoundTrips)
      throws InterruptedException {
    // let the first renewal round pass, so the window sees steady state
    Thread.sleep(periodMillis + periodMillis / 2);
    Map<String, Long> before = stats.calls();
    long rtBefore = clientRoundTrips.getAsLong();
    long cpuBefore = os.getProcessCpuTime();
    long wallBefore = System.nanoTime();
    Thread.sleep(periodMillis * periods);
    long cpuAfter = os.getProcessCpuTime();
    long wallAfter = System.nanoTime();
    long rtAfter = clientRoundTrips.getAsLong();
    Map<String, Long> delta = RedisStats.delta(before, stats.calls());
    double measuredPeriods = (wallAfter - wallBefore) / (periodMillis * 1e6);
    // commandstats also counts the commands a script calls (GET, PEXPIRE, ...): the client's own
    // requests are the script calls and script loads.
    long requests = 0;
    for (Map.Entry<String, Long> e : delta.entrySet()) {
      if (CLIENT_REQUESTS.contains(e.getKey())) {
        requests += e.getValue();
      }
    }
    p.setProperty("requestsPerPeriod", Double.toString(requests / measuredPeriods));
    p.setProperty("commands", new TreeMap<>(delta).toString());
    // A pipelined renewal batch starts with one SCRIPT LOAD (RedisNode.evalMany); Redisson sends no
    // SCRIPT LOAD.
    p.setProperty(
        "scriptLoadsPerPeriod",
        Double.toString(delta.getOrDefault("script|load", 0L) / measuredPeriods));
    if (rtBefore >= 0) {
      p.setProperty(
          "clientRoundTripsPerPeriod", Double.toString((rtAfter - rtBefore) / measuredPeriods));
    }
    p.setProperty(
        "cpuPercentOfOneCore",
        Double.toString(100.0 * (cpuAfter - cpuBefore) / (wallAfter - wallBefore)));
    p.setProperty(
        "cpuMsPerPeriod", Double.toString((cpuAfter - cpuBefore) / 1e6 / measuredPeriods));
  }

  private static long usedAfterGc(MemoryMXBean memory) throws InterruptedException {
    long best = Long.MAX_VALUE;
    for (int i = 0; i < 4; i++) {
      System.gc();
      Thread.sleep(100);
      best = Math.min(best, memory.getHeapMemoryUsage().getUsed());
    }
    return best;
  }

  /**
   * The lock-redis backend counts its own round trips (one per command, one per pipeline); it is
   * package-private, so read it reflectively as a cross-check of the server's counts.
   *
   * @return the RedisNode, or null if the internals changed
   */
  private static Object redisNode(LockClient client) {
    try {
      Field backend = client.getClass().getDeclaredField("backend");
      backend.setAccessible(true);
      Object b = backend.get(client);
      Method node = b.getClass().getDeclaredMethod("node");
      node.setAccessible(true);
      return node.invoke(b);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  private static long roundTrips(Object node) {
    if (node == null) {
      return -1;
    }
    try {
      Method m = node.getClass().getDeclaredMethod("roundTrips");
      m.setAccessible(true);
      return (Long) m.invoke(node);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return -1;
    }
  }
}
