package dev.locksmith;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A lock, semaphore or read-write lock held when it was listed ({@link LockClient#list}): its name,
 * what kind of hold it is, and each holder's state (token, remaining lease and holder where the
 * backend reads them). An exclusive lock or a write lock has one holder; a semaphore has one per
 * holding (a holding of several permits counts once), and a read lock one per reader.
 */
public final class HeldLock {
  /** What is held. */
  public enum Kind {
    /** An exclusive lock ({@link LockClient#lock}), one holder. */
    LOCK,
    /** Permits of a semaphore ({@link LockClient#semaphore}), one state per holding. */
    SEMAPHORE,
    /** The read side of a read-write lock ({@link LockClient#readWriteLock}), one per reader. */
    READ,
    /** The write side of a read-write lock, one holder. */
    WRITE
  }

  private final String name;
  private final Kind kind;
  private final List<LockState> holders;

  private HeldLock(String name, Kind kind, List<LockState> holders) {
    this.name = name;
    this.kind = kind;
    this.holders = holders;
  }

  HeldLock(String name, LockState state) {
    this(name, Kind.LOCK, List.of(state));
  }

  /**
   * For backends that list semaphores and read-write locks ({@code
   * dev.locksmith.spi.LockBackend#inspectHolders}).
   *
   * @param name the name as given
   * @param kind what is held
   * @param holders each holder's state, at least one, every one held; one at most for {@link
   *     Kind#LOCK} and {@link Kind#WRITE}
   * @return the held lock, its holders in the order given
   * @throws IllegalArgumentException if {@code holders} is empty, has a state that is not held, or
   *     has more than one state for a kind with one holder
   * @throws NullPointerException if an argument or a state is null
   */
  public static HeldLock of(String name, Kind kind, List<LockState> holders) {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(kind, "kind");
    List<LockState> copy = new ArrayList<>(holders);
    if (copy.isEmpty()) {
      throw new IllegalArgumentException(
          "`holders` of '" + name + "' was empty but a held " + kind + " has at least one");
    }
    for (LockState s : copy) {
      if (!Objects.requireNonNull(s, "a holder's state").isHeld()) {
        throw new IllegalArgumentException(
            "`holders` of '" + name + "' had " + s + " but every holder's state must be held");
      }
    }
    if ((kind == Kind.LOCK || kind == Kind.WRITE) && copy.size() > 1) {
      throw new IllegalArgumentException(
          "`holders` of '"
              + name
              + "' had "
              + copy.size()
              + " states but a "
              + kind
              + " has one holder");
    }
    return new HeldLock(name, kind, List.copyOf(copy));
  }

  /**
   * @return the name
   */
  public String name() {
    return name;
  }

  /**
   * @return what is held: a lock, a semaphore's permits, or a read-write lock's read or write side
   */
  public Kind kind() {
    return kind;
  }

  /**
   * @return the first holder's state when it was listed (for a lock or a write lock, its holder's):
   *     held, with the token, remaining lease and holder where the backend reads them
   */
  public LockState state() {
    return holders.get(0);
  }

  /**
   * @return how many callers were waiting for it when it was listed, where the backend counts them
   *     (the first holder's {@link LockState#waiting()})
   */
  public java.util.OptionalInt waiting() {
    return state().waiting();
  }

  /**
   * @return every holder's state when it was listed, at least one
   */
  public List<LockState> holders() {
    return holders;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof HeldLock
        && ((HeldLock) o).name.equals(name)
        && ((HeldLock) o).kind == kind
        && ((HeldLock) o).holders.equals(holders);
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, kind, holders);
  }

  @Override
  public String toString() {
    return "'"
        + name
        + "': "
        + (kind == Kind.LOCK ? state().toString() : kind.name().toLowerCase() + " " + holders);
  }
}
