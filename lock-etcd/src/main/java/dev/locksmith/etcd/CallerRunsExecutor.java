package dev.locksmith.etcd;

import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The executor jetcd starts each call on. jetcd hands every call to its executor (through
 * Failsafe's retry policy), and a pool thread then sends it: with its own pool, a caller that waits
 * for the answer pays a wake-up of that thread on every request, on top of the wake-up by the
 * answer. A call started by {@link #send} runs that step on the calling thread instead; it only
 * hands the request to gRPC, which never blocks. Everything else jetcd runs on its executor (a
 * retry after a delay, started from Failsafe's timer; watch and keep-alive work) goes to the pool
 * as before.
 */
final class CallerRunsExecutor extends AbstractExecutorService {
  private static final ThreadLocal<Boolean> SENDING = new ThreadLocal<>();

  private final ExecutorService pool;

  CallerRunsExecutor(String clientId) {
    this.pool =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "locksmith-etcd-calls-" + clientId);
              t.setDaemon(true);
              return t;
            });
  }

  /** Starts a jetcd call, sending it from this thread. */
  static <T> CompletableFuture<T> send(Supplier<CompletableFuture<T>> call) {
    if (SENDING.get() != null) {
      return call.get();
    }
    SENDING.set(Boolean.TRUE);
    try {
      return call.get();
    } finally {
      SENDING.remove();
    }
  }

  @Override
  public void execute(Runnable task) {
    if (SENDING.get() != null && !pool.isShutdown()) {
      task.run();
    } else {
      pool.execute(task);
    }
  }

  @Override
  public void shutdown() {
    pool.shutdown();
  }

  @Override
  public List<Runnable> shutdownNow() {
    return pool.shutdownNow();
  }

  @Override
  public boolean isShutdown() {
    return pool.isShutdown();
  }

  @Override
  public boolean isTerminated() {
    return pool.isTerminated();
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
    return pool.awaitTermination(timeout, unit);
  }
}
