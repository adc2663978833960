package dev.locksmith.spring;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockException;
import dev.locksmith.LockOptions;
import dev.locksmith.LockTimeoutException;
import java.lang.reflect.InvocationTargetException;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.function.BiFunction;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.expression.BeanResolver;

/**
 * The advice of {@link Locked} methods: acquire, run, release; or what onBusy says. A key that is a
 * collection or an array holds one lock per element, all or none ({@code LockClient.locks}).
 */
final class LockedInterceptor implements MethodInterceptor {
  private final LockedOperations operations;
  private final ObjectProvider<LockClient> clients;
  private final BeanResolver beans;
  private final ObjectProvider<LockClients> named;
  private final BiFunction<LockClient, String, LockObserver> observers;

  /**
   * Per client name ("" for the default client): the client and its observer, resolved on first
   * use.
   */
  private final Map<String, Using> using = new ConcurrentHashMap<>();

  private record Using(LockClient client, LockObserver observer) {}

  LockedInterceptor(
      LockedOperations operations,
      ObjectProvider<LockClient> clients,
      ObjectProvider<LockClients> named,
      BeanResolver beans,
      BiFunction<LockClient, String, LockObserver> observers) {
    this.operations = operations;
    this.clients = clients;
    this.named = named;
    this.beans = beans;
    this.observers = observers;
  }

  private Using using(String clientName) {
    // resolved on first use: the advisor is created before most beans
    return using.computeIfAbsent(
        clientName,
        k -> {
          LockClient c = k.isEmpty() ? clients.getObject() : named.getObject().get(k);
          return new Using(c, observers.apply(c, k.isEmpty() ? null : k));
        });
  }

  @Override
  public Object invoke(MethodInvocation invocation) throws Throwable {
    Object target = invocation.getThis();
    Class<?> targetClass =
        target == null
            ? invocation.getMethod().getDeclaringClass()
            : AopUtils.getTargetClass(target);
    LockedOperation op = operations.get(invocation.getMethod(), targetClass);
    if (op == null) {
      return invocation.proceed();
    }
    Object[] args = invocation.getArguments();
    LockedOperation.Names names = op.lockNames(target, args, beans);
    Using u = using(op.client);
    LockClient c = u.client();
    LockObserver observer = u.observer();
    LockOptions options = op.options(c.config().defaults());
    // a collection key: every name all or none, in the client's one global order
    DistributedLock lock =
        names.set() ? c.locks(names.names(), options) : c.lock(names.single(), options);
    String name = lock.name();
    if (op.returns == LockedOperation.Returns.FUTURE) {
      return invokeAsync(invocation, op, lock, observer, target, args);
    }
    if (op.returns == LockedOperation.Returns.MONO
        || op.returns == LockedOperation.Returns.FLUX
        || op.returns == LockedOperation.Returns.SUSPEND) {
      // only here is Reactor needed: the class is loaded on the first such call
      return ReactiveLocked.invoke(invocation, op, c, lock, observer, target);
    }
    Optional<Lease> acquired;
    try {
      acquired = observer.tryAcquire(lock, op.wait);
    } catch (InterruptedException e) {
      return interrupted(op, name, e);
    }
    if (acquired.isEmpty()) {
      return busy(op, name, target, args);
    }
    try (Lease lease = acquired.get()) {
      LockObserver.Hold hold = observer.hold(lease);
      Throwable failure = null;
      fillLease(op, args, lease);
      CurrentLease.push(lease);
      try (AutoCloseable scope = hold.openScope()) {
        return invocation.proceed();
      } catch (Throwable t) {
        failure = t;
        throw t;
      } finally {
        CurrentLease.pop();
        hold.stop(failure);
      }
    }
  }

  private Object invokeAsync(
      MethodInvocation invocation,
      LockedOperation op,
      DistributedLock lock,
      LockObserver observer,
      Object target,
      Object[] args)
      throws Throwable {
    LockObserver.Acquiring acquiring = observer.acquiring(lock);
    CompletableFuture<Lease> pending = lock.acquireAsync(op.wait);
    Lease lease;
    try {
      lease = pending.get();
    } catch (InterruptedException e) {
      pending.cancel(true); // withdraws the waiter; a lease granted meanwhile is released
      acquiring.cancelled();
      return interrupted(op, lock.name(), e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof LockTimeoutException) {
        acquiring.timedOut();
        return busy(op, lock.name(), target, args);
      }
      acquiring.failed(e.getCause());
      throw e.getCause();
    }
    acquiring.acquired(lease);
    Object result;
    LockObserver.Hold hold = observer.hold(lease);
    fillLease(op, args, lease);
    CurrentLease.push(lease);
    try (AutoCloseable scope = hold.openScope()) {
      result = invocation.proceed();
    } catch (Throwable t) {
      lease.close();
      hold.stop(t);
      throw t;
    } finally {
      CurrentLease.pop();
    }
    if (result == null) {
      lease.close();
      hold.stop(null);
      return null;
    }
    // the caller sees completion only after the lease is released
    return ((CompletionStage<?>) result)
        .toCompletableFuture()
        .whenComplete(
            (r, e) -> {
              lease.close();
              hold.stop(e);
            });
  }

  static void fillLease(LockedOperation op, Object[] args, Lease lease) {
    for (int i : op.leaseParams) {
      args[i] = lease;
    }
  }

  private static Object interrupted(LockedOperation op, String name, InterruptedException e)
      throws InterruptedException {
    for (Class<?> declared : op.method.getExceptionTypes()) {
      if (declared.isAssignableFrom(InterruptedException.class)) {
        throw e;
      }
    }
    Thread.currentThread().interrupt();
    throw new LockException("interrupted while waiting for lock '" + name + "' of " + op.where, e);
  }

  private static Object busy(LockedOperation op, String name, Object target, Object[] args)
      throws Throwable {
    switch (op.onBusy) {
      case SKIP:
        switch (op.returns) {
          case OPTIONAL:
            return Optional.empty();
          case FUTURE:
            return CompletableFuture.completedFuture(null);
          default:
            return null;
        }
      case FALLBACK:
        try {
          return op.fallback.invoke(target, args);
        } catch (InvocationTargetException e) {
          throw e.getCause();
        }
      default:
        throw new LockBusyException(name, op.wait, op.where);
    }
  }
}
