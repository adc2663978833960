package dev.locksmith.spring;

import dev.locksmith.Lease;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;

/**
 * The lease of the innermost {@link Locked} method or {@link LockTemplate} call running on this
 * thread, for code that passes the fencing token on: {@code store.write(row,
 * CurrentLease.get().orElseThrow().fencingToken())}.
 *
 * <p>A {@code Mono} or {@code Flux} that a {@link Locked} method returns runs on other threads: its
 * operators find the lease in the Reactor context under {@link #CONTEXT_KEY}, for example {@code
 * Mono.deferContextual(ctx -> store.write(row, ctx.<Lease>get(CurrentLease.CONTEXT_KEY)
 * .fencingToken()))}; {@link #get()} answers it only while the method itself runs.
 */
public final class CurrentLease {
  /**
   * The key of the lease in the Reactor context of the publisher a {@link Locked} method returns.
   */
  public static final String CONTEXT_KEY = "dev.locksmith.spring.CurrentLease";

  private static final ThreadLocal<Deque<Lease>> STACK = ThreadLocal.withInitial(ArrayDeque::new);

  private CurrentLease() {}

  /**
   * @return the lease, or empty outside a locked method
   */
  public static Optional<Lease> get() {
    return Optional.ofNullable(STACK.get().peek());
  }

  static void push(Lease lease) {
    STACK.get().push(lease);
  }

  static void pop() {
    Deque<Lease> stack = STACK.get();
    stack.pop();
    if (stack.isEmpty()) {
      STACK.remove();
    }
  }
}
