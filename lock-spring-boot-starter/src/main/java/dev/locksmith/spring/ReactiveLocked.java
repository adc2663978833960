package dev.locksmith.spring;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockTimeoutException;
import dev.locksmith.reactor.ReactiveLocks;
import java.lang.reflect.InvocationTargetException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.aopalliance.intercept.MethodInvocation;
import org.reactivestreams.Publisher;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.core.CoroutinesUtils;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * {@link Locked} methods that return {@code Mono} or {@code Flux}, and Kotlin {@code suspend}
 * functions (which Spring calls as a {@code Mono} that its proxy awaits), through lock-reactor's
 * {@link ReactiveLocks}: nothing happens until the returned publisher is subscribed to; then the
 * lock is acquired without blocking, the method runs with the lease (a {@link Lease} parameter,
 * {@link CurrentLease#get()} while it runs, {@link CurrentLease#CONTEXT_KEY} in the Reactor
 * context), and its publisher is subscribed to; the lease is released when that publisher
 * completes, fails or is cancelled, before the caller sees its end. Each subscription calls the
 * method again and takes the lock again. Loaded only when such a method is called, so Reactor is
 * needed only then.
 */
final class ReactiveLocked {
  private ReactiveLocked() {}

  /**
   * A failure of the method's own publisher, carried past the busy handling so that a {@link
   * LockTimeoutException} of the method's work is not taken for a busy lock.
   */
  private static final class BodyFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BodyFailure(Throwable cause) {
      super(null, cause, false, false);
    }
  }

  static Object invoke(
      MethodInvocation invocation,
      LockedOperation op,
      LockClient client,
      DistributedLock lock,
      LockObserver observer,
      Object target) {
    ReactiveLocks locks = ReactiveLocks.of(client);
    Object[] args = invocation.getArguments().clone();
    // a suspend function: Spring gives its call as a Mono, and its proxy awaits what we return
    if (op.returns == LockedOperation.Returns.MONO
        || op.returns == LockedOperation.Returns.SUSPEND) {
      return Mono.defer(
          () -> {
            LockObserver.Acquiring acquiring = observer.acquiring(lock);
            return locks
                .withLockMono(
                    lock,
                    op.wait,
                    lease -> {
                      acquiring.acquired(lease);
                      return Mono.from(run(invocation, op, args, observer, lease));
                    })
                .doOnError(notAcquired(acquiring))
                .doOnCancel(acquiring::cancelled)
                .onErrorResume(
                    LockTimeoutException.class,
                    busy -> Mono.from(busy(op, lock.name(), target, args)))
                .onErrorMap(BodyFailure.class, Throwable::getCause);
          });
    }
    return Flux.defer(
        () -> {
          LockObserver.Acquiring acquiring = observer.acquiring(lock);
          return locks
              .withLock(
                  lock,
                  op.wait,
                  lease -> {
                    acquiring.acquired(lease);
                    return run(invocation, op, args, observer, lease);
                  })
              .doOnError(notAcquired(acquiring))
              .doOnCancel(acquiring::cancelled)
              .onErrorResume(
                  LockTimeoutException.class,
                  busy -> Flux.from(busy(op, lock.name(), target, args)))
              .onErrorMap(BodyFailure.class, Throwable::getCause);
        });
  }

  /**
   * Ends the acquire's observation when the lock was not acquired: timed out (a {@link
   * LockTimeoutException} here is the acquire's: the body's errors come wrapped) or failed. After
   * the grant it is ignored: the hold is observed instead.
   */
  private static Consumer<Throwable> notAcquired(LockObserver.Acquiring acquiring) {
    return e -> {
      if (e instanceof LockTimeoutException) {
        acquiring.timedOut();
      } else {
        acquiring.failed(e instanceof BodyFailure ? e.getCause() : e);
      }
    };
  }

  /** Calls the method with the lease and gives its publisher, observed as one hold. */
  private static Publisher<Object> run(
      MethodInvocation invocation,
      LockedOperation op,
      Object[] args,
      LockObserver observer,
      Lease lease) {
    Object[] callArgs = args.clone();
    LockedInterceptor.fillLease(op, callArgs, lease);
    // a fresh invocation per subscription: a proxy's invocation can be proceeded once
    MethodInvocation call =
        invocation instanceof ProxyMethodInvocation proxied
            ? proxied.invocableClone(callArgs)
            : invocation;
    LockObserver.Hold hold = observer.hold(lease);
    AtomicBoolean stopped = new AtomicBoolean();
    Object published;
    CurrentLease.push(lease);
    try {
      published = call.proceed();
    } catch (Throwable t) {
      hold.stop(t);
      return Flux.error(new BodyFailure(t));
    } finally {
      CurrentLease.pop();
    }
    if (published == null) { // a null publisher: nothing to wait for
      hold.stop(null);
      return Flux.empty();
    }
    return Flux.from((Publisher<?>) published)
        .cast(Object.class)
        .doOnError(
            e -> {
              if (stopped.compareAndSet(false, true)) {
                hold.stop(e);
              }
            })
        .doFinally(
            signal -> {
              if (stopped.compareAndSet(false, true)) {
                hold.stop(null);
              }
            })
        .onErrorMap(BodyFailure::new)
        .contextWrite(ctx -> ctx.put(CurrentLease.CONTEXT_KEY, lease));
  }

  /** What onBusy says, as a publisher. */
  private static Publisher<?> busy(LockedOperation op, String name, Object target, Object[] args) {
    switch (op.onBusy) {
      case SKIP:
        return Mono.empty();
      case FALLBACK:
        return Flux.<Object>defer(
            () -> {
              try {
                if (op.returns == LockedOperation.Returns.SUSPEND) {
                  // a suspend fallback runs as its own coroutine, awaited like the method
                  return Flux.from(
                      CoroutinesUtils.invokeSuspendingFunction(op.fallback, target, args));
                }
                Object fallback = op.fallback.invoke(target, args);
                return fallback == null ? Mono.empty() : Flux.from((Publisher<?>) fallback);
              } catch (InvocationTargetException e) {
                return Mono.error(e.getCause());
              } catch (IllegalAccessException e) {
                return Mono.error(e);
              }
            });
      default:
        return Mono.error(new LockBusyException(name, op.wait, op.where));
    }
  }
}
