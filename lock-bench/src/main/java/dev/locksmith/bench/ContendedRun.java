package dev.locksmith.bench;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The contended run, in a JVM of its own: N clients (each its own connection or session) loop on
 * ONE lock name for a fixed time: acquire, about 1 ms of simulated work (parked, so the two cores
 * stay free for the clients and the server), release, and straight back to acquire. The first
 * second is warm-up; figures count only acquisitions that completed in the measured window.
 *
 * <p>A semaphore implementation ({@code redisson-semaphore@2}) is run the same way: its clients
 * contend for its permits, and an overlap is a holding that starts while all of them are held.
 *
 * <p>Usage: {@code ContendedRun <impl> <clients> <warmup-ms> <measure-ms> <work-us>}; prints its
 * figures as properties on standard output.
 */
public final class ContendedRun {
  private ContendedRun() {}

  /** What one run measured. */
  static final class Result {
    long handoffs;
    long overlaps;
    int mostHolders;
    long[] perClient;
    long[] waitsNanos;
    long[] waiterWaitsNanos;
    int stillWaiting;
    double seconds;
    long errors;
    String firstError;

    Properties toProperties() {
      Properties p = new Properties();
      Percentiles w = new Percentiles(waitsNanos);
      p.setProperty("handoffs", Long.toString(handoffs));
      p.setProperty("handoffsPerSec", Double.toString(handoffs / seconds));
      p.setProperty("acquisitions", Long.toString(w.count()));
      p.setProperty("acquisitionsPerSec", Double.toString(w.count() / seconds));
      p.setProperty("overlaps", Long.toString(overlaps));
      p.setProperty("mostHolders", Integer.toString(mostHolders));
      p.setProperty("waitP50Us", Double.toString(w.at(50) / 1e3));
      p.setProperty("waitP99Us", Double.toString(w.at(99) / 1e3));
      p.setProperty("waitMaxUs", Double.toString(w.max() / 1e3));
      Percentiles ww = new Percentiles(waiterWaitsNanos);
      p.setProperty("waiterWaits", Long.toString(ww.count()));
      p.setProperty("waiterP50Us", Double.toString(ww.at(50) / 1e3));
      p.setProperty("waiterP99Us", Double.toString(ww.at(99) / 1e3));
      p.setProperty("waiterMaxUs", Double.toString(ww.max() / 1e3));
      p.setProperty("stillWaitingAtEnd", Integer.toString(stillWaiting));
      StringBuilder spread = new StringBuilder();
      for (long n : perClient) {
        spread.append(spread.length() == 0 ? "" : "/").append(n);
      }
      p.setProperty("perClient", spread.toString());
      p.setProperty("errors", Long.toString(errors));
      if (firstError != null) {
        p.setProperty("firstError", firstError);
      }
      return p;
    }
  }

  static Result run(String implId, int clients, long warmupNanos, long measureNanos, long workNanos)
      throws Exception {
    List<LockImpl> impls = new ArrayList<>();
    try {
      for (int i = 0; i < clients; i++) {
        impls.add(Impls.open(implId));
      }
      String name = "bench-c-" + Long.toHexString(System.nanoTime());
      HandoffCounter counter = new HandoffCounter(clients, Impls.permits(implId));
      CountDownLatch ready = new CountDownLatch(clients);
      CountDownLatch go = new CountDownLatch(1);
      long[] window = new long[2];
      LongList[] waits = new LongList[clients];
      LongList[] waiterWaits = new LongList[clients];
      AtomicLongArray waitingSince = new AtomicLongArray(clients);
      long[] errors = new long[clients];
      AtomicReference<String> firstError = new AtomicReference<>();
      List<Thread> threads = new ArrayList<>();
      for (int i = 0; i < clients; i++) {
        int me = i;
        LockImpl impl = impls.get(i);
        waits[i] = new LongList();
        waiterWaits[i] = new LongList();
        Thread t =
            new Thread(
                () -> {
                  ready.countDown();
                  try {
                    go.await();
                    while (true) {
                      long t0 = System.nanoTime();
                      if (t0 - window[1] >= 0) {
                        return;
                      }
                      Held held;
                      waitingSince.set(me, t0);
                      try {
                        held = impl.acquire(name, Duration.ofSeconds(60));
                      } catch (Exception e) {
                        errors[me]++;
                        firstError.compareAndSet(null, e.toString());
                        continue;
                      } finally {
                        waitingSince.set(me, 0);
                      }
                      long t1 = System.nanoTime();
                      if (held == null) {
                        errors[me]++;
                        firstError.compareAndSet(null, "acquire timed out after 60 s");
                        continue;
                      }
                      boolean counted = t1 - window[0] >= 0 && t1 - window[1] < 0;
                      boolean handoff = counter.acquired(me, counted);
                      if (counted) {
                        waits[me].add(t1 - t0);
                        if (handoff) {
                          waiterWaits[me].add(t1 - t0);
                        }
                      }
                      LockSupport.parkNanos(workNanos);
                      counter.releasing();
                      try {
                        held.release();
                      } catch (Exception e) {
                        errors[me]++;
                        firstError.compareAndSet(null, e.toString());
                      }
                    }
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                },
                "contender-" + i);
        threads.add(t);
        t.start();
      }
      ready.await();
      long start = System.nanoTime();
      window[0] = start + warmupNanos;
      window[1] = window[0] + measureNanos;
      go.countDown();
      // A client starved past the window's end has a wait that never completed: count it as it
      // stood at the end, or starvation would hide by producing no samples.
      long toEnd = window[1] - System.nanoTime();
      if (toEnd > 0) {
        TimeUnit.NANOSECONDS.sleep(toEnd);
      }
      long[] censored = new long[clients];
      for (int i = 0; i < clients; i++) {
        long since = waitingSince.get(i);
        censored[i] = since != 0 && window[1] - since > 0 ? window[1] - since : -1;
      }
      for (Thread t : threads) {
        t.join(TimeUnit.NANOSECONDS.toMillis(warmupNanos + measureNanos) + 120_000);
      }
      Result r = new Result();
      r.handoffs = counter.handoffs();
      r.overlaps = counter.overlaps();
      r.mostHolders = counter.mostOpen();
      r.perClient = counter.perClient();
      LongList all = new LongList();
      for (LongList w : waits) {
        for (long v : w.toArray()) {
          all.add(v);
        }
      }
      r.waitsNanos = all.toArray();
      LongList waiterAll = new LongList();
      for (LongList w : waiterWaits) {
        for (long v : w.toArray()) {
          waiterAll.add(v);
        }
      }
      for (long c : censored) {
        if (c >= 0) {
          waiterAll.add(c);
          r.stillWaiting++;
        }
      }
      r.waiterWaitsNanos = waiterAll.toArray();
      r.seconds = measureNanos / 1e9;
      for (long e : errors) {
        r.errors += e;
      }
      r.firstError = firstError.get();
      return r;
    } finally {
      for (LockImpl impl : impls) {
        try {
          impl.close();
        } catch (RuntimeException e) {
          // closing after the measurement: nothing to report
        }
      }
    }
  }

  /**
   * @param args implementation id, clients, warm-up ms, measured ms, work per hold in µs
   * @throws Exception if the clients cannot be opened
   */
  public static void main(String[] args) throws Exception {
    String impl = args[0];
    int clients = Integer.parseInt(args[1]);
    long warmup = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[2]));
    long measure = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[3]));
    long work = TimeUnit.MICROSECONDS.toNanos(Long.parseLong(args[4]));
    Result r = run(impl, clients, warmup, measure, work);
    PrintStream out = System.out;
    out.println("#RESULT");
    r.toProperties().store(out, impl);
    out.flush();
    System.exit(0);
  }
}
