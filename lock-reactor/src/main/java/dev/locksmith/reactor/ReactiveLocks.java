package dev.locksmith.reactor;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockTimeoutException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Sinks;
import reactor.core.publisher.SynchronousSink;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * A {@link LockClient}'s locks as {@link Mono} and {@link Flux}: acquire without blocking a thread,
 * and run a publisher while a lock is held, released whatever way it ends. Works for every client
 * through the public API only: exclusive locks by name, and any {@link DistributedLock} (a {@link
 * LockClient#semaphore semaphore}, a {@link dev.locksmith.DistributedReadWriteLock read-write
 * lock}'s side, a {@link LockClient#locks set of locks}) through the overloads that take one.
 *
 * <pre>{@code
 * ReactiveLocks locks = ReactiveLocks.of(client);
 * Mono<Receipt> paid =
 *     locks.withLockMono("pay:42", Duration.ofSeconds(5),
 *         lease -> payments.charge(order, lease.fencingToken()));   // released when it ends
 * }</pre>
 *
 * <p><b>Threads.</b> Waiting for a lock takes no thread of the caller: it is {@link
 * DistributedLock#acquireAsync(Duration)}, which waits on the client's own threads. The lease, or
 * the error, is then signalled on {@link Schedulers#boundedElastic()}, so the code that follows it
 * (a {@code withLock} body included) runs where blocking is allowed and never on the client's
 * threads. {@link Lease#release()} does I/O on real backends: every release made here, and the
 * withdrawal of a cancelled waiter (which releases what a {@link LockClient#locks set} had taken so
 * far), runs on {@link Schedulers#boundedElastic()}, never on the thread that completed or
 * cancelled, which may be one of Reactor's non-blocking threads.
 *
 * <p>Every publisher here is lazy (nothing is asked of the backend before it is subscribed to) and
 * acquires again on every subscription, so {@code retry()} and {@code repeat()} take the lock
 * again. Arguments are checked when the method is called.
 */
public final class ReactiveLocks {
  private final LockClient client;
  private final Scheduler blocking;

  /**
   * True on a thread while it runs a task of {@link #onBlocking}: work that may block can go on
   * there instead of hopping to another thread of the same scheduler.
   */
  private static final ThreadLocal<Boolean> INSIDE = new ThreadLocal<>();

  /** The blocking scheduler as an executor whose tasks mark their thread ({@link #INSIDE}). */
  private final Executor onBlocking;

  private ReactiveLocks(LockClient client, Scheduler blocking) {
    this.client = client;
    this.blocking = blocking;
    this.onBlocking =
        task ->
            blocking.schedule(
                () -> {
                  INSIDE.set(Boolean.TRUE);
                  try {
                    task.run();
                  } finally {
                    INSIDE.remove();
                  }
                });
  }

  /**
   * @param client the client whose locks to use; it stays the caller's to close
   * @return the client's locks as publishers
   * @throws NullPointerException if {@code client} is null
   */
  public static ReactiveLocks of(LockClient client) {
    return new ReactiveLocks(
        Objects.requireNonNull(client, "`client` was null but it must be a LockClient"),
        Schedulers.boundedElastic());
  }

  /**
   * @return the client these locks belong to
   */
  public LockClient client() {
    return client;
  }

  /**
   * Acquires the exclusive lock {@code client.lock(name)}, as {@link #acquire(DistributedLock,
   * Duration)} does.
   *
   * @param name the lock's name; an invalid name, like a closed client, is signalled as an error
   *     when subscribed to
   * @param wait how long to wait; zero means one attempt
   * @return a mono of the lease, or of {@link LockTimeoutException} if it was not acquired in time
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code wait} is negative
   */
  public Mono<Lease> acquire(String name, Duration wait) {
    checkName(name);
    checkWait(wait);
    return Mono.defer(() -> acquire(client.lock(name), wait));
  }

  /**
   * Acquires {@code lock} on subscription: one attempt on {@link Schedulers#boundedElastic()}
   * ({@link DistributedLock#acquireAsync(Duration, java.util.concurrent.Executor)} with no wait),
   * then, if the lock was busy, {@link DistributedLock#acquireAsync(Duration)} for what is left of
   * {@code wait}, which waits on the client's threads. The lease is the subscriber's to release:
   * with {@link #release(Lease)}, or by using {@link #withLock(DistributedLock, Duration,
   * Function)} instead. Cancelling while waiting withdraws the waiter (a set of locks gives back
   * the names it took); a lease granted at the same moment is released, never left held, as long as
   * it has not yet been signalled. Once {@code onNext} is called with the lease it is the
   * subscriber's, even if the subscriber cancelled at that very moment: release a lease you are
   * given after cancelling. {@code subscribe(Consumer)} cannot, since after {@code dispose()} it
   * drops what it is given (Reactor's {@code onNextDropped}), and the lock then stays held to the
   * end of its lease; {@link #withLock(DistributedLock, Duration, Function)} releases in every
   * case. Leases acquired this way belong to no thread, so they are never reentrant.
   *
   * @param lock any lock of the client: a lock, a semaphore, a read-write lock's side or a set
   * @param wait how long to wait; zero means one attempt
   * @return a mono of the lease, signalled on {@link Schedulers#boundedElastic()}; an error of
   *     {@link LockTimeoutException} if it was not acquired in time, or of another exception as
   *     {@code acquireAsync} fails
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code wait} is negative
   */
  public Mono<Lease> acquire(DistributedLock lock, Duration wait) {
    checkLock(lock);
    checkWait(wait);
    return Mono.defer(
        () -> {
          Handoff handoff = new Handoff();
          return Mono.<Lease>create(sink -> handoff.start(lock, wait, sink))
              .handle(
                  (Lease lease, SynchronousSink<Lease> out) -> {
                    if (handoff.signalled(lease)) {
                      out.next(lease);
                    }
                  })
              .doOnCancel(handoff::cancel);
        });
  }

  /**
   * One attempt at the exclusive lock {@code client.lock(name)}, as {@link
   * #tryAcquire(DistributedLock)} makes it.
   *
   * @param name the lock's name; an invalid name, like a closed client, is signalled as an error
   *     when subscribed to
   * @return a mono of the lease, or empty if the lock is held
   * @throws NullPointerException if {@code name} is null
   */
  public Mono<Lease> tryAcquire(String name) {
    checkName(name);
    return Mono.defer(() -> tryAcquire(client.lock(name)));
  }

  /**
   * One attempt at {@code lock} on subscription, without waiting for it ({@link
   * DistributedLock#acquireAsync(Duration)} with a zero wait). The lease is the subscriber's to
   * release, as for {@link #acquire(DistributedLock, Duration)}.
   *
   * @param lock any lock of the client
   * @return a mono of the lease, signalled on {@link Schedulers#boundedElastic()}, or empty if the
   *     lock is held (for a semaphore: no permit is free; for a set: one of its names is held, and
   *     none is kept)
   * @throws NullPointerException if {@code lock} is null
   */
  public Mono<Lease> tryAcquire(DistributedLock lock) {
    return acquire(lock, Duration.ZERO)
        .onErrorResume(LockTimeoutException.class, busy -> Mono.empty());
  }

  /**
   * Runs {@code body} while holding the exclusive lock {@code client.lock(name)}, as {@link
   * #withLock(DistributedLock, Duration, Function)} does.
   *
   * @param name the lock's name; an invalid name, like a closed client, is signalled as an error
   *     when subscribed to
   * @param wait how long to wait for the lock
   * @param body makes the publisher to run while the lock is held, from the lease
   * @param <T> what the body publishes
   * @return the body's signals, then completion once the lock is released
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code wait} is negative
   */
  public <T> Flux<T> withLock(
      String name, Duration wait, Function<? super Lease, ? extends Publisher<? extends T>> body) {
    checkName(name);
    checkWait(wait);
    checkBody(body);
    return Flux.defer(() -> withLock(client.lock(name), wait, body));
  }

  /**
   * Runs {@code body} while holding {@code lock}: acquires it as {@link #acquire(DistributedLock,
   * Duration)} does, subscribes to the publisher {@code body} makes from the lease, and releases
   * the lease when that publisher completes, fails or is cancelled (the release runs on {@link
   * Schedulers#boundedElastic()}; completion and the body's error are signalled after it). It is
   * released as try-with-resources would ({@link Lease#close()}): a server that cannot be reached
   * is logged, not signalled, and the lock expires at the end of its lease. If the lock is not
   * acquired in time the body is never called and the flux fails with {@link LockTimeoutException}.
   *
   * <p>A lease can be lost while the body runs (expired, taken, renewal failed, session lost). To
   * stop on it, let the body watch {@link Lease#lost()}, for example {@code
   * work.takeUntilOther(Mono.fromCompletionStage(lease.lost()))}, and pass {@link
   * Lease#fencingToken()} to whatever the lock protects.
   *
   * @param lock any lock of the client: a lock, a semaphore, a read-write lock's side or a set
   * @param wait how long to wait for the lock
   * @param body makes the publisher to run while the lock is held, from the lease; it is called on
   *     {@link Schedulers#boundedElastic()}
   * @param <T> what the body publishes
   * @return the body's signals, then completion once the lock is released
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code wait} is negative
   */
  public <T> Flux<T> withLock(
      DistributedLock lock,
      Duration wait,
      Function<? super Lease, ? extends Publisher<? extends T>> body) {
    checkLock(lock);
    checkWait(wait);
    checkBody(body);
    // A cancel that reaches usingWhen while the lease is on its way, before usingWhen has
    // subscribed to the body, is not passed to the body it subscribes next: the body (say a
    // Flux.never()) would run, and hold the lease, forever. The body also ends when this flux is
    // cancelled, so that a body subscribed too late completes at once and the lease is released.
    return Flux.defer(
        () -> {
          Sinks.One<Boolean> cancelled = Sinks.one();
          return Flux.usingWhen(
                  acquire(lock, wait),
                  lease -> Flux.<T>from(body.apply(lease)).takeUntilOther(cancelled.asMono()),
                  this::closeLater,
                  (lease, error) -> closeLater(lease),
                  this::closeLater)
              .doOnCancel(() -> cancelled.tryEmitValue(Boolean.TRUE));
        });
  }

  /**
   * Runs the mono {@code body} makes while holding the exclusive lock {@code client.lock(name)}, as
   * {@link #withLockMono(DistributedLock, Duration, Function)} does.
   *
   * @param name the lock's name; an invalid name, like a closed client, is signalled as an error
   *     when subscribed to
   * @param wait how long to wait for the lock
   * @param body makes the mono to run while the lock is held, from the lease
   * @param <T> the body's value
   * @return the body's value (or emptiness, or error), signalled once the lock is released
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code wait} is negative
   */
  public <T> Mono<T> withLockMono(
      String name, Duration wait, Function<? super Lease, ? extends Mono<? extends T>> body) {
    checkName(name);
    checkWait(wait);
    checkBody(body);
    return Mono.defer(() -> withLockMono(client.lock(name), wait, body));
  }

  /**
   * {@link #withLock(DistributedLock, Duration, Function)} for a body of one value: acquires {@code
   * lock}, runs the mono {@code body} makes from the lease, releases the lease when it succeeds,
   * fails or is cancelled, and then signals the body's value.
   *
   * @param lock any lock of the client: a lock, a semaphore, a read-write lock's side or a set
   * @param wait how long to wait for the lock
   * @param body makes the mono to run while the lock is held, from the lease; it is called on
   *     {@link Schedulers#boundedElastic()}
   * @param <T> the body's value
   * @return the body's value (or emptiness, or error), signalled once the lock is released; {@link
   *     LockTimeoutException} if the lock was not acquired in time
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code wait} is negative
   */
  public <T> Mono<T> withLockMono(
      DistributedLock lock,
      Duration wait,
      Function<? super Lease, ? extends Mono<? extends T>> body) {
    checkLock(lock);
    checkWait(wait);
    checkBody(body);
    return Mono.defer(
        () -> {
          Sinks.One<Boolean> cancelled = Sinks.one();
          return Mono.usingWhen(
                  acquire(lock, wait),
                  lease -> Mono.<T>from(body.apply(lease)).takeUntilOther(cancelled.asMono()),
                  this::closeLater,
                  (lease, error) -> closeLater(lease),
                  this::closeLater)
              .doOnCancel(() -> cancelled.tryEmitValue(Boolean.TRUE));
        });
  }

  /**
   * Releases a lease ({@link Lease#release()}) on {@link Schedulers#boundedElastic()}, for leases
   * from {@link #acquire} and {@link #tryAcquire}. Lazy, like the rest: nothing is released until
   * it is subscribed to.
   *
   * @param lease the lease to release
   * @return a mono of what {@link Lease#release()} answers: true if the lease was still held up to
   *     this release, false if it had already been released, lost or expired; an error of {@link
   *     dev.locksmith.BackendUnavailableException} if the server could not be reached (the lock
   *     then expires at the end of its lease)
   * @throws NullPointerException if {@code lease} is null
   */
  public Mono<Boolean> release(Lease lease) {
    Objects.requireNonNull(lease, "`lease` was null but it must be a Lease to release");
    return Mono.fromCallable(lease::release).subscribeOn(blocking);
  }

  /**
   * Who owns the lease of one subscription to {@link #acquire(DistributedLock, Duration)}: this
   * hand-off until the lease is signalled downstream, the subscriber from then on. Reactor's own
   * sink cannot be trusted with it: a value given to {@code Mono.create}'s sink at the moment the
   * subscriber cancels is dropped (onNextDropped), neither delivered nor discarded, so a lock
   * granted at that moment would stay held. Here the grant and the cancel race on one reference:
   * whichever comes second gives the lease back.
   */
  private final class Handoff {
    /** Not yet granted; then the granted lease, then SIGNALLED or CANCELLED. */
    private final AtomicReference<Object> slot = new AtomicReference<>();

    private volatile CompletableFuture<Lease> pending;

    /**
     * One attempt first, run on the blocking scheduler ({@link #onBlocking}): a free lock is
     * granted on that thread, where the subscriber then runs, and a release that follows at once
     * runs there too, so an uncontended acquire, body and release cost one thread hand-off, not
     * four. A busy lock is then waited for on the client's threads, for what is left of {@code
     * wait}, as {@code acquireAsync} waits.
     */
    void start(DistributedLock lock, Duration wait, MonoSink<Lease> sink) {
      if (slot.get() == CANCELLED) {
        return; // cancelled before the acquire was asked for: ask nothing
      }
      long startedAt = System.nanoTime();
      CompletableFuture<Lease> first;
      try {
        first = lock.acquireAsync(Duration.ZERO, onBlocking);
      } catch (RuntimeException e) {
        sink.error(e);
        return;
      }
      track(first);
      first.whenComplete(
          (lease, error) -> {
            if (error != null && !wait.isZero() && unwrap(error) instanceof LockTimeoutException) {
              Duration left = wait.minusNanos(System.nanoTime() - startedAt);
              waitFor(lock, left.isNegative() ? Duration.ZERO : left, sink);
            } else {
              here(() -> granted(lease, error, sink));
            }
          });
    }

    /** The lock was busy: waits for it on the client's threads. */
    private void waitFor(DistributedLock lock, Duration wait, MonoSink<Lease> sink) {
      if (slot.get() == CANCELLED) {
        return;
      }
      CompletableFuture<Lease> future;
      try {
        future = lock.acquireAsync(wait);
      } catch (RuntimeException e) {
        if (slot.get() != CANCELLED) {
          sink.error(e);
        }
        return;
      }
      track(future);
      future.whenComplete((lease, error) -> offload(() -> granted(lease, error, sink)));
    }

    /** Remembers the acquisition for a cancel, and cancels it if the cancel came first. */
    private void track(CompletableFuture<Lease> future) {
      pending = future;
      if (slot.get() == CANCELLED) {
        // The cancel came while acquireAsync was being called and found no future to cancel.
        offload(() -> future.cancel(false));
      }
    }

    private void granted(Lease lease, Throwable error, MonoSink<Lease> sink) {
      if (error != null) {
        if (slot.get() != CANCELLED) {
          sink.error(unwrap(error));
        }
      } else if (slot.compareAndSet(null, lease)) {
        sink.success(lease);
      } else {
        closeQuietly(lease); // the subscriber cancelled first
      }
    }

    /** On the way downstream: true if the subscriber takes the lease, false if it cancelled. */
    boolean signalled(Lease lease) {
      return slot.compareAndSet(lease, SIGNALLED);
    }

    void cancel() {
      Object was = slot.getAndSet(CANCELLED);
      if (was == null) {
        // Still waiting: the client withdraws the waiter and gives back a grant racing this
        // cancel; a grant that completed first finds CANCELLED and is given back above.
        CompletableFuture<Lease> future = pending;
        if (future != null) {
          offload(() -> future.cancel(false));
        }
      } else if (was instanceof Lease lease) {
        offload(() -> closeQuietly(lease)); // granted, not yet signalled: nobody else has it
      }
    }
  }

  private static final Object SIGNALLED = new Object();
  private static final Object CANCELLED = new Object();

  /**
   * The cleanup of withLock: close() on the blocking scheduler, completing after it; right here
   * when this is already a thread of it that may block (the body ended where the lock was granted).
   */
  private Mono<Void> closeLater(Lease lease) {
    return Mono.defer(
        () ->
            Boolean.TRUE.equals(INSIDE.get())
                ? Mono.<Void>fromRunnable(() -> closeQuietly(lease))
                : Mono.<Void>fromRunnable(() -> closeQuietly(lease)).subscribeOn(blocking));
  }

  /** Runs {@code task} here if this is a task of {@link #onBlocking}, else offloads it. */
  private void here(Runnable task) {
    if (Boolean.TRUE.equals(INSIDE.get())) {
      task.run();
    } else {
      offload(task);
    }
  }

  /** Runs {@code task} on the blocking scheduler; inline only if that scheduler is shut down. */
  private void offload(Runnable task) {
    try {
      blocking.schedule(task);
    } catch (RejectedExecutionException e) {
      task.run();
    }
  }

  private static void closeQuietly(Lease lease) {
    try {
      lease.close();
    } catch (RuntimeException e) {
      // close() logs what it cannot do; nothing here has anyone to tell
    }
  }

  private static Throwable unwrap(Throwable error) {
    return error instanceof CompletionException && error.getCause() != null
        ? error.getCause()
        : error;
  }

  private static void checkName(String name) {
    Objects.requireNonNull(name, "`name` was null but it must be a lock name");
  }

  private static void checkLock(DistributedLock lock) {
    Objects.requireNonNull(lock, "`lock` was null but it must be a DistributedLock of the client");
  }

  private static void checkBody(Function<?, ?> body) {
    Objects.requireNonNull(body, "`body` was null but it must make the publisher to run");
  }

  private static void checkWait(Duration wait) {
    Objects.requireNonNull(
        wait, "`wait` was null but it must be a Duration, such as Duration.ZERO");
    if (wait.isNegative()) {
      throw new IllegalArgumentException(
          "`wait` was " + wait + " but it must be zero (one attempt) or above");
    }
  }
}
