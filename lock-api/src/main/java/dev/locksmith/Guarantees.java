package dev.locksmith;

import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * What a backend promises, as data: the features it has and, for each fault scenario, whether
 * mutual exclusion survives it. The compatibility kit checks every declared feature; the
 * comparison tool measures every fault and prints this declaration beside what it observed.
 *
 * <pre>{@code
 * Guarantees g = client.guarantees();
 * if (g.promise(Fault.HOLDER_PAUSE) == Promise.SAFE_WITH_FENCING) { ... pass lease.fencingToken() on ... }
 * }</pre>
 */
public final class Guarantees {

  /** A capability a backend has or lacks. */
  public enum Feature {
    /** Every lease has a fencing token, strictly increasing per lock name across holders. */
    FENCING,
    /** Waiters acquire in the order they started waiting. */
    FIFO_FAIRNESS,
    /** A held lease can be renewed (auto-renew keeps it beyond its lease time). */
    RENEWAL,
    /** Losing a lease is detected and signalled through {@link Lease#lost()}. */
    LOSS_DETECTION,
    /** A waiter is woken by the release itself, not by a polling interval. */
    NOTIFIED_WAKEUP,
    /** The same thread acquiring again gets the same lease (the core provides this for every backend). */
    REENTRANCY,
    /** Locks are shared by separate processes (false for the in-process {@code local:} backend). */
    SHARED_ACROSS_PROCESSES,
    /** {@link DistributedLock#state()} reads whether a lock is held, and the holder's token, without taking it. */
    STATE_READS,
    /**
     * {@link Lease#extend(java.time.Duration)} moves the server's expiry of a lease held without
     * auto-renew, owner-checked; and such a lease is ended by the server at its expiry even if
     * its holder vanishes (for session backends too, not only when the session ends).
     */
    EXTEND,
    /**
     * {@link Lease#releaseAfter(java.time.Duration)} gives a lease up but has the server keep
     * the lock held until a time, through the holder's close, crash or killed process.
     */
    HOLD_AFTER_RELEASE,
    /**
     * {@link LockClient#semaphore(String, int)}: at most N leases at once, each leased, renewed,
     * owner-checked and fenced like a lock's; a dead holder's permit comes back within its lease
     * plus the backend's slack.
     */
    SEMAPHORES,
    /**
     * {@link LockClient#readWriteLock(String)}: many readers or one writer, leased, renewed,
     * owner-checked and fenced like a lock; a waiting writer is not starved by a stream of readers.
     */
    READ_WRITE_LOCKS
  }

  /**
   * A fault scenario, numbered as in the project's FAULTS.md. Each has a promise per backend.
   */
  public enum Fault {
    /** 1: the holder pauses (GC, SIGSTOP) longer than its lease, then writes. */
    HOLDER_PAUSE,
    /** 2: the holder crashes without releasing. */
    HOLDER_CRASH,
    /** 3: the client pauses while the acquire reply is in flight. */
    PAUSE_DURING_ACQUIRE,
    /** 4: the lock server restarts without persistent state. */
    SERVER_RESTART,
    /** 5: the lock server pauses. */
    SERVER_PAUSE,
    /** 6: the client is cut off from the server. */
    PARTITION,
    /** 7: the leader or primary of a replicated server is killed during contention. */
    LEADER_FAILOVER,
    /** 8: the clock jumps on the lock server or the client. */
    CLOCK_JUMP,
    /** 9: a release arrives after the lease expired and someone else holds the lock. */
    RELEASE_AFTER_EXPIRY,
    /** 10: the client timed out on an acquire that the server granted. */
    AMBIGUOUS_ACQUIRE,
    /** 11: fencing tokens never go backwards across holders. */
    TOKEN_MONOTONICITY
  }

  /** What a backend promises under a fault. */
  public enum Promise {
    /** Mutual exclusion holds. */
    SAFE,
    /** Two holders can overlap, but fencing tokens let the protected resource reject the stale one. */
    SAFE_WITH_FENCING,
    /** Unsafe even with fencing: the lock state or the token order can be lost. */
    UNSAFE,
    /** The lock cannot be acquired while the fault lasts, but stays safe. */
    UNAVAILABLE,
    /** The scenario does not apply to this backend. */
    NOT_APPLICABLE
  }

  private final Set<Feature> features;
  private final Map<Fault, Promise> promises;
  private final Map<Fault, String> notes;

  private Guarantees(Builder b) {
    this.features = Collections.unmodifiableSet(EnumSet.copyOf(b.features));
    this.promises = Collections.unmodifiableMap(new EnumMap<>(b.promises));
    this.notes = Collections.unmodifiableMap(new EnumMap<>(b.notes));
  }

  /** @return a builder; every fault must be given a promise before {@link Builder#build()} */
  public static Builder builder() {
    return new Builder();
  }

  /** @return the declared features */
  public Set<Feature> features() {
    return features;
  }

  /**
   * @param feature a feature
   * @return whether it is declared
   */
  public boolean has(Feature feature) {
    return features.contains(Objects.requireNonNull(feature, "feature"));
  }

  /**
   * @param fault a fault scenario
   * @return the promise for it
   */
  public Promise promise(Fault fault) {
    return promises.get(Objects.requireNonNull(fault, "fault"));
  }

  /**
   * @param fault a fault scenario
   * @return the backend's explanation of its promise, or an empty string
   */
  public String note(Fault fault) {
    return notes.getOrDefault(Objects.requireNonNull(fault, "fault"), "");
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Guarantees && ((Guarantees) o).features.equals(features)
        && ((Guarantees) o).promises.equals(promises) && ((Guarantees) o).notes.equals(notes);
  }

  @Override
  public int hashCode() {
    return Objects.hash(features, promises, notes);
  }

  @Override
  public String toString() {
    return "Guarantees{features=" + features + ", promises=" + promises + "}";
  }

  /** Builds a {@link Guarantees}; every fault needs a promise. */
  public static final class Builder {
    private final Set<Feature> features = EnumSet.noneOf(Feature.class);
    private final Map<Fault, Promise> promises = new EnumMap<>(Fault.class);
    private final Map<Fault, String> notes = new EnumMap<>(Fault.class);

    private Builder() {}

    /**
     * @param declared features the backend has
     * @return this builder
     */
    public Builder features(Feature... declared) {
      for (Feature f : declared) {
        features.add(Objects.requireNonNull(f, "feature"));
      }
      return this;
    }

    /**
     * @param fault the scenario
     * @param promise what the backend promises under it
     * @param note why, in one sentence (shown in comparison reports)
     * @return this builder
     */
    public Builder promise(Fault fault, Promise promise, String note) {
      promises.put(Objects.requireNonNull(fault, "fault"), Objects.requireNonNull(promise, "promise"));
      notes.put(fault, note == null ? "" : note);
      return this;
    }

    /**
     * @return the guarantees
     * @throws IllegalStateException naming the faults that have no promise yet
     */
    public Guarantees build() {
      Set<Fault> missing = EnumSet.allOf(Fault.class);
      missing.removeAll(promises.keySet());
      if (!missing.isEmpty()) {
        throw new IllegalStateException("guarantees must give a promise for every fault; missing " + missing);
      }
      return new Guarantees(this);
    }
  }
}
