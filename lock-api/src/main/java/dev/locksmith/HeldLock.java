package dev.locksmith;

import java.util.Objects;

/**
 * A lock held when it was listed ({@link LockClient#list}): its name and its state, read as {@link
 * DistributedLock#state()} reads it.
 */
public final class HeldLock {
  private final String name;
  private final LockState state;

  HeldLock(String name, LockState state) {
    this.name = name;
    this.state = state;
  }

  /**
   * @return the lock's name
   */
  public String name() {
    return name;
  }

  /**
   * @return its state when it was listed: held, with the holder's token, remaining lease and holder
   *     where the backend reads them
   */
  public LockState state() {
    return state;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof HeldLock
        && ((HeldLock) o).name.equals(name)
        && ((HeldLock) o).state.equals(state);
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, state);
  }

  @Override
  public String toString() {
    return "'" + name + "': " + state;
  }
}
