package dev.locksmith;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * What a backend could tell about a lock without taking it: free or held, and of a held lock the
 * holder's fencing token, the rest of its lease, its owner id and how many wait for it, each where
 * the backend can read it. A snapshot, read at one moment: the lock may have changed hands by the
 * time it is looked at, so never decide to write on it; use a {@link Lease} for that.
 *
 * <p>Backends that declare {@link Guarantees.Feature#STATE_READS} answer with a known state; the
 * others answer {@link #unknown()}. Immutable.
 */
public final class LockState {
  private static final LockState UNKNOWN = new LockState(false, false, 0, null, null, -1);
  private static final LockState FREE = new LockState(true, false, 0, null, null, -1);

  private final boolean known;
  private final boolean held;
  private final long fencingToken;
  private final Duration remaining;
  private final String holder;
  private final int waiting;

  private LockState(
      boolean known,
      boolean held,
      long fencingToken,
      Duration remaining,
      String holder,
      int waiting) {
    this.known = known;
    this.held = held;
    this.fencingToken = fencingToken;
    this.remaining = remaining;
    this.holder = holder;
    this.waiting = waiting;
  }

  /**
   * @return the state of a backend that cannot read a lock without taking it
   */
  public static LockState unknown() {
    return UNKNOWN;
  }

  /**
   * @return a lock nobody holds (never taken, released, or its lease ran out)
   */
  public static LockState free() {
    return FREE;
  }

  /**
   * @return a held lock, with nothing known about the holder yet: add it with the {@code with}
   *     methods
   */
  public static LockState held() {
    return new LockState(true, true, 0, null, null, -1);
  }

  /**
   * @param token the holder's fencing token, greater than zero
   * @return this held state with the token
   * @throws IllegalStateException if this state is not {@link #held()}
   * @throws IllegalArgumentException if {@code token} is not positive
   */
  public LockState withFencingToken(long token) {
    requireHeld("withFencingToken");
    if (token <= 0) {
      throw new IllegalArgumentException(
          "`token` was " + token + " but fencing tokens are greater than zero");
    }
    return new LockState(true, true, token, remaining, holder, waiting);
  }

  /**
   * @param left how long the holder's lease lasts if it is not renewed; zero or more
   * @return this held state with the rest of the lease
   * @throws IllegalStateException if this state is not {@link #held()}
   * @throws IllegalArgumentException if {@code left} is negative
   */
  public LockState withRemaining(Duration left) {
    requireHeld("withRemaining");
    Objects.requireNonNull(left, "`left` was null but it must be a duration of zero or more");
    if (left.isNegative()) {
      throw new IllegalArgumentException("`left` was " + left + " but it must be zero or more");
    }
    return new LockState(true, true, fencingToken, left, holder, waiting);
  }

  /**
   * @param ownerId the owner id the backend stored for the holder's lease
   * @return this held state with the holder
   * @throws IllegalStateException if this state is not {@link #held()}
   */
  public LockState withHolder(String ownerId) {
    requireHeld("withHolder");
    Objects.requireNonNull(ownerId, "`ownerId` was null");
    return new LockState(true, true, fencingToken, remaining, ownerId, waiting);
  }

  /**
   * @param count how many callers wait for the lock (or the semaphore or read-write lock) now,
   *     where the backend counts them; zero or more
   * @return this held state with the count
   * @throws IllegalStateException if this state is not {@link #held()}
   * @throws IllegalArgumentException if {@code count} is negative
   */
  public LockState withWaiting(int count) {
    requireHeld("withWaiting");
    if (count < 0) {
      throw new IllegalArgumentException("`count` was " + count + " but it must be zero or more");
    }
    return new LockState(true, true, fencingToken, remaining, holder, count);
  }

  private void requireHeld(String method) {
    if (!held) {
      throw new IllegalStateException(
          method + "() describes a held lock, but this state is " + this);
    }
  }

  /**
   * @return false when the backend cannot read the lock's state
   */
  public boolean isKnown() {
    return known;
  }

  /**
   * @return true when the lock was held when read; false when free or unknown
   */
  public boolean isHeld() {
    return held;
  }

  /**
   * @return the holder's fencing token, where the backend can read it
   */
  public OptionalLong fencingToken() {
    return fencingToken > 0 ? OptionalLong.of(fencingToken) : OptionalLong.empty();
  }

  /**
   * @return how long the holder's lease lasts if not renewed, where the backend times leases per
   *     lock; empty where the lock lives as long as the holder's session (ZooKeeper) or is unknown
   */
  public Optional<Duration> remaining() {
    return Optional.ofNullable(remaining);
  }

  /**
   * @return the owner id the backend stored for the holder, where it can read it
   */
  public Optional<String> holder() {
    return Optional.ofNullable(holder);
  }

  /**
   * @return how many callers were waiting for the lock when it was read (for a semaphore or
   *     read-write lock: for any of it), where the backend counts them; a waiter that gave up may
   *     be counted until the backend notices
   */
  public OptionalInt waiting() {
    return waiting >= 0 ? OptionalInt.of(waiting) : OptionalInt.empty();
  }

  /**
   * Who holds the lock, in words a person reads, where the backend stores the holder's owner id and
   * a Locksmith client wrote it: application, host, process id, thread and when it asked.
   *
   * @return the holder, or empty where {@link #holder()} is empty or not in Locksmith's form
   */
  public Optional<Holder> holderIdentity() {
    return Holder.parse(holder);
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof LockState)) {
      return false;
    }
    LockState s = (LockState) o;
    return known == s.known
        && held == s.held
        && fencingToken == s.fencingToken
        && Objects.equals(remaining, s.remaining)
        && Objects.equals(holder, s.holder)
        && waiting == s.waiting;
  }

  @Override
  public int hashCode() {
    return Objects.hash(known, held, fencingToken, remaining, holder, waiting);
  }

  @Override
  public String toString() {
    if (!known) {
      return "unknown";
    }
    if (!held) {
      return "free";
    }
    StringBuilder b = new StringBuilder("held");
    if (fencingToken > 0) {
      b.append(", fencing token ").append(fencingToken);
    }
    if (remaining != null) {
      b.append(", ").append(remaining.toMillis()).append(" ms left");
    }
    if (holder != null) {
      b.append(", by ").append(holder);
    }
    if (waiting >= 0) {
      b.append(", ").append(waiting).append(" waiting");
    }
    return b.toString();
  }
}
