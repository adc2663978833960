package dev.locksmith;

import java.util.List;
import java.util.Optional;

/**
 * One page of a listing ({@link LockClient#list}): the held locks, semaphores and read-write locks
 * it found, in the backend's order (a name is listed once for each kind held), and the cursor of
 * the next page. A page may hold fewer locks than asked for, even none, while there is a next page:
 * go on until {@link #next()} is empty.
 */
public final class LockPage {
  private final List<HeldLock> locks;
  private final String next;

  LockPage(List<HeldLock> locks, String next) {
    this.locks = List.copyOf(locks);
    this.next = next;
  }

  /**
   * @return what this page found held
   */
  public List<HeldLock> locks() {
    return locks;
  }

  /**
   * @return the cursor to pass to {@link LockClient#list} for the next page, or empty after the
   *     last
   */
  public Optional<String> next() {
    return Optional.ofNullable(next);
  }

  @Override
  public String toString() {
    return locks + (next == null ? " (last page)" : " (more after)");
  }
}
