package dev.locksmith;

import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * What a backend promises, as data: the features it has and, for each fault scenario, whether
 * mutual exclusion survives it. The compatibility kit checks every declared feature; the comparison
 * tool measures every fault and prints this declaration beside what it observed.
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
    /**
     * The same thread acquiring again gets the same lease (the core provides this for every
     * backend).
     */
    REENTRANCY,
    /** Locks are shared by separate processes (false for the in-process {@code local:} backend). */
    SHARED_ACROSS_PROCESSES,
    /**
     * {@link DistributedLock#state()} reads whether a lock is held, and the holder's token, without
     * taking it.
     */
    STATE_READS,
    /**
     * {@link Lease#extend(java.time.Duration)} moves the server's expiry of a lease held without
     * auto-renew, owner-checked; and such a lease is ended by the server at its expiry even if its
     * holder vanishes (for session backends too, not only when the session ends).
     */
    EXTEND,
    /**
     * {@link Lease#releaseAfter(java.time.Duration)} gives a lease up but has the server keep the
     * lock held until a time, through the holder's close, crash or killed process.
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
    READ_WRITE_LOCKS,
    /**
     * {@link LockClient#breakLock(String, String)}: an administrator frees another holder's
     * exclusive lock safely. The server forgets the holder's lease (its next renewal fails and
     * {@link Lease#lost()} completes), waiters are woken as by a release, and the fence counter is
     * kept, so the next holder's token is higher and a fence refuses the old holder's writes.
     * Exclusive locks only: not semaphores or read-write locks.
     */
    BREAK_GLASS,
    /**
     * {@link LockClient#list}: what is held under a name prefix, page by page, each with its
     * holders' states (an exclusive lock as {@link DistributedLock#state()} reads it); everything
     * held for the whole listing is listed, and listing takes and renews nothing. Declared for each
     * primitive it lists: a backend that lists its locks but not its semaphores excepts {@link
     * Primitive#SEMAPHORE}, and {@link LockClient#list} then lists no semaphores.
     */
    LISTING,
    /**
     * {@link LockClient#locks(java.util.Collection)}: a set is tried in one step on the server, all
     * or none. A set whose names are all free (held by nobody and waited for by nobody) is taken in
     * one round trip; a set that finds any name held or waited for takes none of its names, not
     * even for a moment, so a single holder of one of them is never refused because of the set.
     * Only then, if the caller waits, does it wait for its names one by one in the set's order (the
     * core's way on every backend). Holds for every set of up to 64 names; a backend whose server
     * caps the size of one request may take a larger set the core's way (its README says from what
     * size). Locks only.
     */
    ATOMIC_LOCK_SETS
  }

  /**
   * A kind of lock a feature can be declared for. A feature declared with {@link Builder#features}
   * holds for every primitive the backend has, unless the backend names an exception with {@link
   * Builder#except}: a backend that wakes lock waiters by notification but lets semaphore waiters
   * poll declares {@link Feature#NOTIFIED_WAKEUP} and excepts {@link #SEMAPHORE}. The compatibility
   * kit checks each feature on each primitive it is declared for. The features of exclusive locks
   * only ({@link Feature#STATE_READS}, {@link Feature#BREAK_GLASS}, {@link
   * Feature#ATOMIC_LOCK_SETS}) never hold for {@link #SEMAPHORE} or {@link #READ_WRITE_LOCK},
   * whatever the backend declares.
   */
  public enum Primitive {
    /** {@link LockClient#lock(String)}. */
    LOCK,
    /** {@link LockClient#semaphore(String, int)}, where {@link Feature#SEMAPHORES} is declared. */
    SEMAPHORE,
    /**
     * {@link LockClient#readWriteLock(String)}, both sides, where {@link Feature#READ_WRITE_LOCKS}
     * is declared.
     */
    READ_WRITE_LOCK
  }

  /** A fault scenario, numbered as in the project's FAULTS.md. Each has a promise per backend. */
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
    /**
     * Two holders can overlap, but fencing tokens let the protected resource reject the stale one.
     */
    SAFE_WITH_FENCING,
    /** Unsafe even with fencing: the lock state or the token order can be lost. */
    UNSAFE,
    /** The lock cannot be acquired while the fault lasts, but stays safe. */
    UNAVAILABLE,
    /** The scenario does not apply to this backend. */
    NOT_APPLICABLE
  }

  private final Set<Feature> features;

  /** Per primitive, the declared features that do not hold for it. */
  private final Map<Primitive, Set<Feature>> exceptions;

  /** Features of exclusive locks only: what they read or free is a lock's single holder. */
  private static final Set<Feature> LOCKS_ONLY =
      Collections.unmodifiableSet(
          EnumSet.of(Feature.STATE_READS, Feature.BREAK_GLASS, Feature.ATOMIC_LOCK_SETS));

  private final Map<Fault, Promise> promises;
  private final Map<Fault, String> notes;

  private Guarantees(Builder b) {
    this.features = Collections.unmodifiableSet(EnumSet.copyOf(b.features));
    Map<Primitive, Set<Feature>> except = new EnumMap<>(Primitive.class);
    b.exceptions.forEach(
        (primitive, excepted) -> {
          if (!excepted.isEmpty()) {
            except.put(primitive, Collections.unmodifiableSet(EnumSet.copyOf(excepted)));
          }
        });
    this.exceptions = Collections.unmodifiableMap(except);
    this.promises = Collections.unmodifiableMap(new EnumMap<>(b.promises));
    this.notes = Collections.unmodifiableMap(new EnumMap<>(b.notes));
  }

  /**
   * @return a builder; every fault must be given a promise before {@link Builder#build()}
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * @return the features that hold for locks: {@code features(Primitive.LOCK)}
   */
  public Set<Feature> features() {
    return features(Primitive.LOCK);
  }

  /**
   * @param primitive a kind of lock
   * @return the features that hold for it: the declared ones less its {@link Builder#except
   *     exceptions}; empty for a semaphore or read-write lock the backend does not have
   */
  public Set<Feature> features(Primitive primitive) {
    Objects.requireNonNull(primitive, "primitive");
    if ((primitive == Primitive.SEMAPHORE && !features.contains(Feature.SEMAPHORES))
        || (primitive == Primitive.READ_WRITE_LOCK
            && !features.contains(Feature.READ_WRITE_LOCKS))) {
      return Collections.emptySet();
    }
    Set<Feature> excepted = exceptions.getOrDefault(primitive, Collections.emptySet());
    boolean shared = primitive != Primitive.LOCK;
    if (excepted.isEmpty() && !(shared && features.stream().anyMatch(LOCKS_ONLY::contains))) {
      return features;
    }
    Set<Feature> held = EnumSet.copyOf(features);
    held.removeAll(excepted);
    if (shared) {
      held.removeAll(LOCKS_ONLY);
    }
    return Collections.unmodifiableSet(held);
  }

  /**
   * @param feature a feature
   * @return whether it is declared (for locks: {@link #has(Feature, Primitive)} tells for the other
   *     primitives)
   */
  public boolean has(Feature feature) {
    return has(feature, Primitive.LOCK);
  }

  /**
   * @param feature a feature
   * @param primitive a kind of lock
   * @return whether the feature holds for that primitive: declared, not excepted for it, and the
   *     primitive is one the backend has
   */
  public boolean has(Feature feature, Primitive primitive) {
    return features(primitive).contains(Objects.requireNonNull(feature, "feature"));
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
    return o instanceof Guarantees
        && ((Guarantees) o).features.equals(features)
        && ((Guarantees) o).exceptions.equals(exceptions)
        && ((Guarantees) o).promises.equals(promises)
        && ((Guarantees) o).notes.equals(notes);
  }

  @Override
  public int hashCode() {
    return Objects.hash(features, exceptions, promises, notes);
  }

  @Override
  public String toString() {
    return "Guarantees{features="
        + features
        + (exceptions.isEmpty() ? "" : ", except=" + exceptions)
        + ", promises="
        + promises
        + "}";
  }

  /** Builds a {@link Guarantees}; every fault needs a promise. */
  public static final class Builder {
    private final Set<Feature> features = EnumSet.noneOf(Feature.class);
    private final Map<Primitive, Set<Feature>> exceptions = new EnumMap<>(Primitive.class);
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
     * Says that declared features do not hold for one primitive, for example notified wake-up for
     * semaphore waiters that poll. {@link Feature#SEMAPHORES} and {@link Feature#READ_WRITE_LOCKS}
     * say which primitives exist and cannot be excepted.
     *
     * @param primitive the primitive the features do not hold for
     * @param excepted features declared with {@link #features} (before or after this call) that it
     *     lacks
     * @return this builder
     * @throws IllegalArgumentException for {@code SEMAPHORES} or {@code READ_WRITE_LOCKS}
     */
    public Builder except(Primitive primitive, Feature... excepted) {
      Objects.requireNonNull(primitive, "primitive");
      for (Feature f : excepted) {
        if (Objects.requireNonNull(f, "feature") == Feature.SEMAPHORES
            || f == Feature.READ_WRITE_LOCKS) {
          throw new IllegalArgumentException(
              "`except` was "
                  + f
                  + " for "
                  + primitive
                  + " but "
                  + f
                  + " says whether the primitive exists; leave it undeclared instead");
        }
        exceptions.computeIfAbsent(primitive, k -> EnumSet.noneOf(Feature.class)).add(f);
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
      promises.put(
          Objects.requireNonNull(fault, "fault"), Objects.requireNonNull(promise, "promise"));
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
        throw new IllegalStateException(
            "guarantees must give a promise for every fault; missing " + missing);
      }
      return new Guarantees(this);
    }
  }
}
