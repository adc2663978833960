package dev.locksmith.bench;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The uncontended comparison in interleaved rounds, in a JVM of its own: the implementations of one
 * server (Locksmith, its raw floor, the off-the-shelf locks) are opened side by side, each is
 * warmed up, then each gets a short measured round in turn (A, B, C, C, B, A, A, B, C, ...: the
 * order flips every round so none always follows another), so that whatever else the shared machine
 * does falls on all of them alike and shows as the spread of the per-round ratios.
 *
 * <p>With 1 thread a round records every acquire + release's latency (p50, p99, mean); with more,
 * each thread loops on a name of its own and the round counts operations per second.
 *
 * <p>Usage: {@code RoundsRun <threads> <warmup-ms> <round-ms> <rounds> <impl,impl,...>}; prints
 * {@code <impl>.<round>.p50Us} (and p99Us, meanUs) or {@code <impl>.<round>.opsPerSec} as
 * properties.
 */
public final class RoundsRun {
  private RoundsRun() {}

  /** One implementation's client and its threads' views and names. */
  private static final class Subject {
    final String id;
    final LockImpl shared;
    final List<LockImpl> perThread = new ArrayList<>();
    final List<String> names = new ArrayList<>();

    Subject(String id, int threads, String run) throws Exception {
      this.id = id;
      this.shared = Impls.open(id);
      for (int i = 0; i < threads; i++) {
        perThread.add(shared.forThread());
        names.add("bench-r-" + run + "-" + id + "-" + i);
      }
    }

    void close() {
      for (LockImpl l : perThread) {
        l.close();
      }
      shared.close();
    }
  }

  /** One thread's loop for {@code nanos}; latencies recorded when {@code latencies} is not null. */
  private static long loop(LockImpl locker, String name, long nanos, LongList latencies)
      throws Exception {
    long end = System.nanoTime() + nanos;
    long ops = 0;
    for (long t0 = System.nanoTime(); t0 - end < 0; ) {
      Held held = locker.acquire(name, null);
      if (held == null) {
        throw new IllegalStateException(name + " was not free: the uncontended run found it held");
      }
      held.release();
      long t1 = System.nanoTime();
      if (latencies != null) {
        latencies.add(t1 - t0);
      }
      ops++;
      t0 = t1;
    }
    return ops;
  }

  /**
   * Runs {@code s} for {@code nanos} on all its threads; returns ops/s, or the latencies when
   * single-threaded.
   */
  private static double round(Subject s, long nanos, LongList latencies) throws Exception {
    int threads = s.perThread.size();
    if (threads == 1) {
      long t0 = System.nanoTime();
      long ops = loop(s.perThread.get(0), s.names.get(0), nanos, latencies);
      return ops / ((System.nanoTime() - t0) / 1e9);
    }
    long[] ops = new long[threads];
    AtomicReference<Exception> failure = new AtomicReference<>();
    List<Thread> running = new ArrayList<>();
    long t0 = System.nanoTime();
    for (int i = 0; i < threads; i++) {
      int me = i;
      Thread t =
          new Thread(
              () -> {
                try {
                  ops[me] = loop(s.perThread.get(me), s.names.get(me), nanos, null);
                } catch (Exception e) {
                  failure.compareAndSet(null, e);
                }
              },
              "round-" + s.id + "-" + i);
      running.add(t);
      t.start();
    }
    for (Thread t : running) {
      t.join();
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    if (failure.get() != null) {
      throw failure.get();
    }
    long total = 0;
    for (long n : ops) {
      total += n;
    }
    return total / seconds;
  }

  /**
   * @param args threads, warm-up ms per implementation, ms per measured round, rounds,
   *     implementation ids (comma-separated)
   * @throws Exception if a client cannot be opened
   */
  public static void main(String[] args) throws Exception {
    int threads = Integer.parseInt(args[0]);
    long warmup = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[1]));
    long roundNanos = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[2]));
    int rounds = Integer.parseInt(args[3]);
    String run = Long.toHexString(ThreadLocalRandom.current().nextLong());
    List<Subject> subjects = new ArrayList<>();
    Properties p = new Properties();
    try {
      for (String id : args[4].split(",")) {
        subjects.add(new Subject(id, threads, run));
      }
      // Warm-up, interleaved as well, in slices, so no implementation warms on a machine the others
      // did not see.
      int slices = 4;
      for (int s = 0; s < slices; s++) {
        for (Subject subject : subjects) {
          round(subject, warmup / slices, null);
        }
      }
      for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < subjects.size(); k++) {
          Subject subject = subjects.get(r % 2 == 0 ? k : subjects.size() - 1 - k);
          if (threads == 1) {
            LongList latencies = new LongList();
            round(subject, roundNanos, latencies);
            long[] all = latencies.toArray();
            Percentiles pc = new Percentiles(all);
            double sum = 0;
            for (long v : all) {
              sum += v;
            }
            p.setProperty(subject.id + "." + r + ".p50Us", Double.toString(pc.at(50) / 1e3));
            p.setProperty(subject.id + "." + r + ".p99Us", Double.toString(pc.at(99) / 1e3));
            p.setProperty(
                subject.id + "." + r + ".meanUs",
                Double.toString(all.length == 0 ? 0 : sum / all.length / 1e3));
          } else {
            p.setProperty(
                subject.id + "." + r + ".opsPerSec",
                Double.toString(round(subject, roundNanos, null)));
          }
        }
      }
      p.setProperty("rounds", Integer.toString(rounds));
    } finally {
      for (Subject s : subjects) {
        try {
          s.close();
        } catch (RuntimeException e) {
          // closing after the measurement: nothing to report
        }
      }
    }
    PrintStream out = System.out;
    out.println("#RESULT");
    p.store(out, "rounds");
    out.flush();
    System.exit(0);
  }
}
