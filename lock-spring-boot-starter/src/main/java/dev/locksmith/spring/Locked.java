package dev.locksmith.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated method while holding a distributed lock of the application's {@code
 * LockClient}. The lock is named {@link #name()}, followed by {@code ':'} and the value of {@link
 * #key()} when a key is given:
 *
 * <pre>{@code
 * @Locked(name = "pay", key = "#orderId", waitFor = "5s")
 * @Transactional
 * public void pay(long orderId) { ... }     // lock "pay:42" held until after the commit
 * }</pre>
 *
 * <p>A key that evaluates to a {@code Collection} or an array locks every element, all or none
 * ({@code LockClient.locks}): each element is a key of its own, named {@code name:element}, and the
 * names are taken in one global order, so calls with overlapping keys in any order do not deadlock.
 * The lease is the set's: {@code lease.fencingToken("account:7")} is each name's token.
 *
 * <pre>{@code
 * @Locked(name = "account", key = "#transfer.accountIds()", waitFor = "5s")
 * public void transfer(Transfer transfer) { ... }   // locks "account:7" and "account:42", or neither
 * }</pre>
 *
 * <p>The advice runs outside {@code @Transactional} by default ({@link
 * LocksmithProperties.Annotation#getOrder()}), so the lock is released after the commit. Everything
 * is checked when the bean is created: a bad expression, an unknown argument name, a bad duration,
 * a missing fallback, a private, final or static method, or a return type that cannot be held until
 * the work ends (a plain {@code Future}, a publisher other than Reactor's {@code Mono} and {@code
 * Flux}, or those two without lock-reactor on the classpath) fails the application's start naming
 * the method.
 *
 * <p>Inside the method the lease is reachable through {@link CurrentLease#get()}, or as a parameter
 * of type {@code dev.locksmith.Lease}, which the advice fills (callers pass null). A method
 * returning {@code CompletableFuture} or {@code CompletionStage} keeps the lock until the returned
 * stage completes; such a lease is not reentrant (it belongs to no thread). A method returning
 * Reactor's {@code Mono} or {@code Flux} (with {@code dev.locksmith:lock-reactor} on the classpath)
 * does nothing until the publisher is subscribed to, then acquires the lock without blocking, calls
 * the method, and keeps the lock until its publisher completes, fails or is cancelled; its
 * operators find the lease in the Reactor context under {@link CurrentLease#CONTEXT_KEY}. A Kotlin
 * {@code suspend} function (with lock-reactor, kotlinx-coroutines-reactor and kotlin-reflect on the
 * classpath, else refused at startup) holds the lock from its call until it returns, throws or its
 * coroutine is cancelled, across its suspensions; its key sees its own arguments, not its
 * continuation, and it gets the lease through a {@code Lease} parameter.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Locked {

  /**
   * @return the lock's name, or its prefix when a {@link #key()} is given; a literal, not an
   *     expression
   */
  String name();

  /**
   * @return a SpEL expression over the method's arguments by name ({@code #orderId}, {@code
   *     #req.userId + ':' + #req.orderId}), {@code #root.method}, {@code #root.args}, {@code
   *     #root.target} and beans ({@code @tenant.id()}); a literal key is a SpEL string, {@code
   *     "'room#5'"}. Empty for no key. A key that evaluates to null or empty fails the call. A
   *     {@code Collection} or array locks each element ({@code name:element}) all or none; one that
   *     is empty, or holds a null or empty element, fails the call.
   */
  String key() default "";

  /**
   * @return the lease, such as {@code 30s}; empty for the client's default ({@code
   *     locksmith.lease})
   */
  String lease() default "";

  /**
   * @return how long to wait for the lock, such as {@code 5s}; {@code 0} (the default) tries once
   */
  String waitFor() default "0";

  /**
   * @return {@code true} or {@code false}: renew the lease while held; empty for the client's
   *     default
   */
  String renew() default "";

  /**
   * @return {@code true} or {@code false}: reentrant per thread; empty for the client's default
   */
  String reentrant() default "";

  /**
   * @return what to do when the lock is not acquired within {@link #waitFor()}
   */
  OnBusy onBusy() default OnBusy.THROW;

  /**
   * @return for {@link OnBusy#FALLBACK}: the name of a method of the same class with the same
   *     parameter types and a compatible return type, called with the same arguments
   */
  String fallback() default "";

  /**
   * @return the name of a client declared as {@code locksmith.clients.<name>.uri}; empty (the
   *     default) for the application's {@code LockClient} bean
   */
  String client() default "";

  /** What a {@link Locked} method does when the lock is busy. */
  enum OnBusy {
    /** Throw {@link LockBusyException}. */
    THROW,
    /** Do not run; return null, {@code Optional.empty()} or a future completed with null. */
    SKIP,
    /** Call the {@link Locked#fallback()} method instead. */
    FALLBACK
  }
}
