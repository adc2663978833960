package dev.locksmith.redlock;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * One call per server, all at once, and a wait that ends as soon as the answers so far decide the
 * outcome or a deadline passes. Calls still running at the deadline keep running; their futures let
 * the caller react to a late answer (release what a late acquire took).
 *
 * @param <T> what one server answers
 */
final class Fanout<T> {
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final List<CompletableFuture<T>> futures;
  private final Object[] results;
  private final boolean[] finished;
  private int done;

  private Fanout(int size) {
    this.futures = new ArrayList<>(size);
    this.results = new Object[size];
    this.finished = new boolean[size];
  }

  /**
   * Starts {@code call} for every target on {@code executor}.
   *
   * @return the fan-out, to await
   */
  static <M, T> Fanout<T> start(List<M> targets, Function<M, T> call, Executor executor) {
    Fanout<T> f = new Fanout<>(targets.size());
    for (int i = 0; i < targets.size(); i++) {
      M target = targets.get(i);
      int index = i;
      CompletableFuture<T> future;
      try {
        future = CompletableFuture.supplyAsync(() -> call.apply(target), executor);
      } catch (RejectedExecutionException e) {
        future = CompletableFuture.failedFuture(e);
      }
      f.futures.add(future);
      future.whenComplete((r, e) -> f.record(index, r, e));
    }
    return f;
  }

  private void record(int index, T result, Throwable error) {
    lock.lock();
    try {
      results[index] = error != null ? unwrap(error) : result;
      finished[index] = true;
      done++;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  static Throwable unwrap(Throwable e) {
    while ((e instanceof CompletionException || e instanceof ExecutionException)
        && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  /**
   * Waits until every call answered, {@code decided} holds, or the deadline passes.
   *
   * @param deadlineNanos a {@link System#nanoTime()} value
   * @param decided looks at the answers so far (under this fan-out's lock)
   * @throws InterruptedException if interrupted while waiting
   */
  void await(long deadlineNanos, Predicate<Fanout<T>> decided) throws InterruptedException {
    lock.lock();
    try {
      while (done < results.length && !decided.test(this)) {
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0) {
          return;
        }
        changed.awaitNanos(left);
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Like {@link #await(long, Predicate)}, but an interrupt ends the wait and is kept in the
   * thread's flag.
   */
  void awaitUninterruptibly(long deadlineNanos, Predicate<Fanout<T>> decided) {
    try {
      await(deadlineNanos, decided);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  int size() {
    return results.length;
  }

  /**
   * @return whether call {@code i} has answered (a result or a failure)
   */
  boolean answered(int i) {
    lock.lock();
    try {
      return finished[i];
    } finally {
      lock.unlock();
    }
  }

  /**
   * @return the answer of call {@code i}: its result, the {@link Throwable} it failed with, or null
   *     while pending
   */
  Object answer(int i) {
    lock.lock();
    try {
      return results[i];
    } finally {
      lock.unlock();
    }
  }

  /**
   * @return the future of call {@code i}, to act on a late answer
   */
  CompletableFuture<T> future(int i) {
    return futures.get(i);
  }
}
