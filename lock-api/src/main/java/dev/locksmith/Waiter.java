package dev.locksmith;

import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Where one acquiring thread sleeps between polls. A wake-up that arrives while the thread is
 * polling is remembered, so a release between a busy poll and the sleep is never missed.
 */
final class Waiter {
  private final ReentrantLock mutex = new ReentrantLock();
  private final Condition changed = mutex.newCondition();
  private boolean signalled;
  private volatile boolean cancelled;

  void wake() {
    mutex.lock();
    try {
      signalled = true;
      changed.signalAll();
    } finally {
      mutex.unlock();
    }
  }

  void clear() {
    mutex.lock();
    try {
      signalled = false;
    } finally {
      mutex.unlock();
    }
  }

  void await(long nanos) throws InterruptedException {
    mutex.lock();
    try {
      long left = nanos;
      while (!signalled && !cancelled && left > 0) {
        left = changed.awaitNanos(left);
      }
    } finally {
      mutex.unlock();
    }
  }

  void cancel() {
    cancelled = true;
    wake();
  }

  boolean isCancelled() {
    return cancelled;
  }
}
