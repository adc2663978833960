package dev.locksmith.spring;

import dev.locksmith.Lease;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;

/**
 * The lease of the innermost {@link Locked} method or {@link LockTemplate} call running on this
 * thread, for code that passes the fencing token on: {@code store.write(row,
 * CurrentLease.get().orElseThrow().fencingToken())}.
 */
public final class CurrentLease {
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
