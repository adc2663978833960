package dev.locksmith;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Locks on virtual threads (Java 21+), with one carrier thread for all of them: surefire's {@code
 * virtual-threads} execution runs this class alone on a JDK of 21 or later ({@code
 * locksmith.jdk21.home}) with {@code jdk.virtualThreadScheduler.parallelism=1} and {@code
 * maxPoolSize=1}. A waiter that pinned its carrier while it waited (a {@code synchronized} block
 * around a blocking wait on Java 21 to 23, a native frame on any) would keep the holder's release
 * from ever running, and every waiter would time out. Compiled for Java 17, so it reaches the
 * virtual-thread API by reflection; on an older runtime it fails, naming how it must run.
 */
class VirtualThreadsTest {
  private static final int WAITERS = 200;

  @Test
  void waitersOnVirtualThreadsLeaveTheOnlyCarrierFreeForTheHolderAndEachOther() throws Exception {
    assertThat(Runtime.version().feature())
        .as(
            "this test runs on Java 21+ in surefire's virtual-threads execution"
                + " (-Dlocksmith.jdk21.home=<a JDK 21+>), not on %s",
            Runtime.version())
        .isGreaterThanOrEqualTo(21);
    assertThat(System.getProperty("jdk.virtualThreadScheduler.parallelism"))
        .as("one carrier thread, so that a pinned waiter blocks everything")
        .isEqualTo("1");
    try (LockClient client = Locks.connect("local:virtual-threads?lease=1s")) {
      DistributedLock lock = client.lock("one-name");
      AtomicInteger inside = new AtomicInteger();
      AtomicInteger most = new AtomicInteger();
      AtomicInteger done = new AtomicInteger();
      List<String> failures = new CopyOnWriteArrayList<>();
      CountDownLatch holding = new CountDownLatch(1);
      CountDownLatch finished = new CountDownLatch(WAITERS + 1);
      List<Thread> threads = new ArrayList<>();
      // the first holder, on a virtual thread too: its release needs the carrier
      threads.add(
          startVirtual(
              () -> {
                try (Lease lease = lock.acquire(Duration.ofSeconds(5))) {
                  holding.countDown();
                  // waiters queue up while renewals run past the lease (1s: renewed every third,
                  // which leaves slack for a loaded machine)
                  Thread.sleep(1_200);
                  assertThat(lease.isValid()).as("renewed while waiters wait").isTrue();
                } catch (Throwable e) {
                  failures.add("holder: " + e);
                } finally {
                  finished.countDown();
                }
              }));
      assertThat(holding.await(10, TimeUnit.SECONDS)).as("the first holder got the lock").isTrue();
      for (int i = 0; i < WAITERS; i++) {
        threads.add(
            startVirtual(
                () -> {
                  try (Lease lease = lock.acquire(Duration.ofSeconds(30))) {
                    most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                    Thread.sleep(1);
                    inside.decrementAndGet();
                    done.incrementAndGet();
                  } catch (Throwable e) {
                    failures.add(Thread.currentThread() + ": " + e);
                  } finally {
                    finished.countDown();
                  }
                }));
      }
      boolean allFinished = finished.await(60, TimeUnit.SECONDS);
      assertThat(failures).as("failures of waiters on virtual threads").isEmpty();
      assertThat(allFinished)
          .as(
              "all %d waiters finished within 60 s on one carrier (%d did): a waiter that pins"
                  + " its carrier while it waits keeps the holder from releasing",
              WAITERS, done.get())
          .isTrue();
      assertThat(done.get()).isEqualTo(WAITERS);
      assertThat(most.get()).as("holders at once").isEqualTo(1);
      Method isVirtual = Thread.class.getMethod("isVirtual");
      for (Thread t : threads) {
        assertThat((Boolean) isVirtual.invoke(t)).as("%s is virtual", t).isTrue();
      }
    }
  }

  /** {@code Thread.ofVirtual().start(task)}, through reflection: this class compiles for 17. */
  private static Thread startVirtual(Runnable task) throws Exception {
    Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
    Method start = Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class);
    return (Thread) start.invoke(builder, task);
  }
}
