package dev.locksmith.bench;

import java.util.concurrent.ThreadLocalRandom;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * Uncontended acquire + release: every thread takes and gives back a lock of its own name, so
 * nobody ever waits. BenchMain runs it twice per implementation: 1 thread in SampleTime mode
 * (latency percentiles) and 8 threads in Throughput mode.
 */
@State(Scope.Benchmark)
public class UncontendedBench {

  /** The implementation's id, see {@link Impls}. */
  @Param({"locksmith-local"})
  public String impl;

  /** For JMH. */
  public UncontendedBench() {}

  LockImpl shared;
  final String run = Long.toHexString(ThreadLocalRandom.current().nextLong());

  /** Opens the shared client (throws if it cannot connect). */
  @Setup(Level.Trial)
  public void open() throws Exception {
    shared = Impls.open(impl);
  }

  /** Closes the shared client. */
  @TearDown(Level.Trial)
  public void close() {
    shared.close();
  }

  /** One thread's client view and lock name. */
  @State(Scope.Thread)
  public static class PerThread {
    /** For JMH. */
    public PerThread() {}

    LockImpl locker;
    String name;

    /**
     * @param bench the benchmark, whose client this thread uses
     * @param thread which thread this is, for its lock name
     * @throws Exception if a connection of its own cannot be opened
     */
    @Setup(Level.Trial)
    public void open(UncontendedBench bench, ThreadParams thread) throws Exception {
      locker = bench.shared.forThread();
      name = "bench-u-" + bench.run + "-" + thread.getThreadIndex();
    }

    /** Closes what this thread opened. */
    @TearDown(Level.Trial)
    public void close() {
      locker.close();
    }
  }

  /**
   * One acquire and one release of the thread's own lock.
   *
   * @param t the thread's state
   * @throws Exception if the lock was not free or the server failed
   */
  @Benchmark
  public void acquireRelease(PerThread t) throws Exception {
    Held held = t.locker.acquire(t.name, null);
    if (held == null) {
      throw new IllegalStateException(
          t.name + " was not free: the uncontended benchmark found it held");
    }
    held.release();
  }
}
