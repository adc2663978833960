package dev.locksmith.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * A diagnostic, not a benchmark of record: runs the uncontended loop of one implementation on N
 * threads for a while and prints ops/s, the client's CPU time per operation, and that CPU split by
 * thread (grouped by name without the trailing number), so the threads a library adds next to the
 * caller's (event dispatch, renewal, pools, I/O loops) show. On 2 cores shared with the server,
 * client CPU per operation is what caps throughput. It also prints the bytes each thread group
 * allocates per operation, and the CPU no Java thread accounts for (the JVM's own threads: the JIT
 * compilers and the garbage collector).
 *
 * <p>Usage: {@code CpuProfileRun <impl> <threads> <seconds>}.
 */
public final class CpuProfileRun {
  private CpuProfileRun() {}

  /**
   * @param args implementation id, threads, measured seconds (after 2 s of warm-up)
   * @throws Exception if the run fails
   */
  public static void main(String[] args) throws Exception {
    String implId = args[0];
    int threads = Integer.parseInt(args[1]);
    long seconds = Long.parseLong(args[2]);
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    LongAdder ops = new LongAdder();
    try (LockImpl impl = Impls.open(implId)) {
      CountDownLatch done = new CountDownLatch(threads);
      long warmEnd = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
      long end = warmEnd + TimeUnit.SECONDS.toNanos(seconds);
      Map<String, Long> before = new TreeMap<>();
      Map<String, Long> allocBefore = new TreeMap<>();
      long[] cpuBefore = new long[1];
      long[] wallBefore = new long[1];
      for (int i = 0; i < threads; i++) {
        String name = "bench-p-" + System.nanoTime() + "-" + i;
        Thread t =
            new Thread(
                () -> {
                  try (LockImpl mine = impl.forThread()) {
                    while (System.nanoTime() - end < 0) {
                      Held h = mine.acquire(name, null);
                      h.release();
                      if (System.nanoTime() - warmEnd >= 0) {
                        ops.increment();
                      }
                    }
                  } catch (Exception e) {
                    e.printStackTrace();
                  } finally {
                    done.countDown();
                  }
                },
                "bench-caller-" + i);
        t.start();
      }
      TimeUnit.NANOSECONDS.sleep(warmEnd - System.nanoTime());
      snapshot(mx, before, allocBefore);
      double redisBefore = redisCpuSeconds();
      cpuBefore[0] = os.getProcessCpuTime();
      wallBefore[0] = System.nanoTime();
      long opsBefore = ops.sum();
      // read the callers' CPU before they end: a finished thread's CPU time can no longer be read
      TimeUnit.NANOSECONDS.sleep(
          Math.max(0, end - System.nanoTime() - TimeUnit.MILLISECONDS.toNanos(50)));
      long wall = System.nanoTime() - wallBefore[0];
      long cpu = os.getProcessCpuTime() - cpuBefore[0];
      long n = ops.sum() - opsBefore;
      Map<String, Long> after = new TreeMap<>();
      Map<String, Long> allocAfter = new TreeMap<>();
      snapshot(mx, after, allocAfter);
      double redisCpu = redisCpuSeconds() - redisBefore;
      done.await();
      System.out.printf(
          "%s, %d threads: %.0f ops/s, client CPU %.1f µs/op (%.0f%% of one core)%n",
          implId, threads, n / (wall / 1e9), cpu / 1e3 / n, 100.0 * cpu / wall);
      if (redisBefore >= 0) {
        System.out.printf("  redis-server CPU %.1f µs/op%n", redisCpu * 1e6 / n);
      }
      long[] javaThreads = new long[1];
      after.forEach(
          (group, ns) -> {
            long d = ns - before.getOrDefault(group, 0L);
            javaThreads[0] += d;
            if (d > cpu / 100) {
              System.out.printf("  %-50s %6.1f µs/op%n", group, d / 1e3 / n);
            }
          });
      System.out.printf(
          "  %-50s %6.1f µs/op%n",
          "(no Java thread: JIT compilers, GC)", (cpu - javaThreads[0]) / 1e3 / n);
      allocAfter.forEach(
          (group, bytes) -> {
            long d = bytes - allocBefore.getOrDefault(group, 0L);
            if (d > 100L * n) {
              System.out.printf("  allocated by %-38s %6.0f B/op%n", group, (double) d / n);
            }
          });
    }
    System.exit(0);
  }

  /**
   * @return redis-server's CPU seconds so far (INFO cpu), or -1 without a Redis endpoint
   */
  private static double redisCpuSeconds() {
    String endpoint = Endpoints.redis();
    if (endpoint == null) {
      return -1;
    }
    try (redis.clients.jedis.Jedis j =
        new redis.clients.jedis.Jedis(redis.clients.jedis.HostAndPort.from(endpoint))) {
      double sum = 0;
      for (String line : j.info("cpu").split("\r?\n")) {
        if (line.startsWith("used_cpu_sys:") || line.startsWith("used_cpu_user:")) {
          sum += Double.parseDouble(line.substring(line.indexOf(':') + 1).trim());
        }
      }
      return sum;
    }
  }

  private static void snapshot(
      ThreadMXBean mx, Map<String, Long> into, Map<String, Long> allocated) {
    for (ThreadInfo info : mx.getThreadInfo(mx.getAllThreadIds())) {
      if (info == null) {
        continue;
      }
      String group =
          info.getThreadName().replaceAll("[-#]?\\d+$", "-N").replaceAll("-\\d+-N$", "-N-N");
      long cpu = mx.getThreadCpuTime(info.getThreadId());
      if (cpu > 0) {
        into.merge(group, cpu, Long::sum);
      }
      if (mx instanceof com.sun.management.ThreadMXBean) {
        long bytes =
            ((com.sun.management.ThreadMXBean) mx).getThreadAllocatedBytes(info.getThreadId());
        if (bytes > 0) {
          allocated.merge(group, bytes, Long::sum);
        }
      }
    }
  }
}
