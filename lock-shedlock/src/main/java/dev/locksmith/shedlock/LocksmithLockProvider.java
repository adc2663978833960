package dev.locksmith.shedlock;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;

/**
 * A ShedLock {@link ExtensibleLockProvider} over any Locksmith {@link LockClient}: the lock server
 * itself ends a lock at {@code lockAtMostFor} and keeps it until {@code lockAtLeastUntil} after
 * {@code unlock()}, even if this process is shut down or killed in between.
 *
 * <pre>{@code
 * @Bean
 * LockProvider lockProvider(LockClient locksmith) {
 *   return new LocksmithLockProvider(locksmith);     // Locks.connect("redis://..."), "jdbc:postgresql://...", ...
 * }
 * }</pre>
 *
 * <p>Each {@link #lock(LockConfiguration)} is one {@link DistributedLock#tryAcquire()} (no waiting)
 * of a lease of {@code lockAtMostFor} from now, not renewed and not reentrant: a second lock of the
 * same name, from any thread including the holding one, answers empty. {@code unlock()} is {@link
 * Lease#releaseAfter(Duration)} of what is left until {@code lockAtLeastUntil} (a plain release
 * when nothing is left); {@code extend(atMostFor, atLeastFor)} is {@link Lease#extend(Duration)}
 * and returns a new lock, after which the old one refuses {@code unlock()} and {@code extend()}
 * with {@link IllegalStateException}.
 *
 * <p>The fencing token of the lock a task runs under: {@link #currentFencingToken()}, read on the
 * thread that took the lock (the task's thread under ShedLock's {@code DefaultLockingTaskExecutor}
 * and its Spring integration), between {@code lock} and {@code unlock}.
 *
 * <p>Thread-safe; share one per {@link LockClient}. Closing the client is the caller's business.
 */
public final class LocksmithLockProvider implements ExtensibleLockProvider {

  /** Locks taken on this thread and not yet unlocked or extended, innermost last. */
  private static final ThreadLocal<Deque<ShedLockLease>> HELD_HERE =
      ThreadLocal.withInitial(ArrayDeque::new);

  /**
   * Every lock taken and not yet unlocked, extended or expired, whatever became of the thread that
   * took it: a ShedLock lock that its code lets go of without unlocking stays taken until {@code
   * lockAtMostFor}, as its contract says, rather than being released when the client finds its
   * lease dropped (see {@code LockConfig#droppedLeases()}). Pruned at each {@link #lock}.
   */
  private static final Set<ShedLockLease> OPEN = ConcurrentHashMap.newKeySet();

  private final LockClient client;

  /**
   * @param client the Locksmith client to lock through; its backend must declare {@link
   *     Guarantees.Feature#EXTEND} and {@link Guarantees.Feature#HOLD_AFTER_RELEASE}
   * @throws NullPointerException if {@code client} is null
   * @throws IllegalArgumentException if the backend lacks either feature, naming what is missing
   */
  public LocksmithLockProvider(LockClient client) {
    this.client =
        Objects.requireNonNull(client, "`client` was null but it must be a Locksmith LockClient");
    Guarantees guarantees = client.guarantees();
    List<String> missing = new ArrayList<>();
    for (Guarantees.Feature needed :
        List.of(Guarantees.Feature.EXTEND, Guarantees.Feature.HOLD_AFTER_RELEASE)) {
      if (!guarantees.has(needed)) {
        missing.add(needed.name());
      }
    }
    if (!missing.isEmpty()) {
      throw new IllegalArgumentException(
          "`client` was a lock client for "
              + client.config().uri()
              + " but its backend does not declare "
              + String.join(" and ", missing)
              + " (it declares "
              + guarantees.features()
              + "); ShedLock needs EXTEND for lockAtMostFor and extend(), and HOLD_AFTER_RELEASE"
              + " for lockAtLeastFor to outlive this process: use a backend that declares both");
    }
  }

  /**
   * Takes the lock once, without waiting, for {@code lockAtMostFor} from now.
   *
   * @param lockConfiguration ShedLock's lock: name, lockAtMostFor, lockAtLeastFor
   * @return the lock, or empty if it is held (by anyone, this thread included) or still kept after
   *     an earlier holder's {@code lockAtLeastFor}
   * @throws NullPointerException if {@code lockConfiguration} is null
   * @throws IllegalArgumentException if {@code lockAtMostFor} is not above zero or above {@link
   *     LockOptions#MAX_LEASE}, or the name is not a valid Locksmith lock name
   * @throws dev.locksmith.BackendUnavailableException if the lock server cannot be reached
   */
  @Override
  public Optional<SimpleLock> lock(LockConfiguration lockConfiguration) {
    Objects.requireNonNull(
        lockConfiguration,
        "`lockConfiguration` was null but it must be ShedLock's LockConfiguration");
    Duration lease =
        leaseFor(
            "lockAtMostFor",
            lockConfiguration.getLockAtMostFor(),
            lockConfiguration.getLockAtMostUntil());
    LockOptions options =
        LockOptions.builder().lease(lease).autoRenew(false).reentrant(false).build();
    DistributedLock lock = client.lock(lockConfiguration.getName(), options);
    OPEN.removeIf(open -> !open.isCurrent());
    Optional<Lease> lease0 = lock.tryAcquire();
    if (lease0.isEmpty()) {
      return Optional.empty();
    }
    ShedLockLease held = new ShedLockLease(lease0.get(), lockConfiguration.getLockAtLeastUntil());
    OPEN.add(held);
    HELD_HERE.get().addLast(held);
    return Optional.of(held);
  }

  /**
   * The lease for a lockAtMostFor: what is left of it from now, at least {@link
   * LockOptions#MIN_LEASE} (the configuration may have been made a moment ago).
   */
  static Duration leaseFor(String parameter, Duration atMostFor, Instant atMostUntil) {
    if (atMostFor == null || atMostFor.isNegative() || atMostFor.isZero()) {
      throw new IllegalArgumentException(
          "`"
              + parameter
              + "` was "
              + atMostFor
              + " but it must be above zero, at most "
              + LockOptions.MAX_LEASE
              + ": it is how long the lock server keeps the lock if the job never unlocks");
    }
    if (atMostFor.compareTo(LockOptions.MAX_LEASE) > 0) {
      throw new IllegalArgumentException(
          "`"
              + parameter
              + "` was "
              + atMostFor
              + " but Locksmith leases last at most "
              + LockOptions.MAX_LEASE
              + " (7 days); a job that may run longer than that should extend its lock as it goes");
    }
    Duration left = Duration.between(ClockProvider.now(), atMostUntil);
    return left.compareTo(LockOptions.MIN_LEASE) < 0
        ? LockOptions.MIN_LEASE
        : left.compareTo(LockOptions.MAX_LEASE) > 0 ? LockOptions.MAX_LEASE : left;
  }

  /**
   * The fencing token of the innermost ShedLock lock that the calling thread took through a {@code
   * LocksmithLockProvider} and still holds: the running task's, under ShedLock's executor. Pass it
   * to whatever the task writes, so the store can refuse a holder that lost the lock past {@code
   * lockAtMostFor} without knowing it.
   *
   * @return the token, or empty outside a locked task (or when the lock was taken on another
   *     thread)
   */
  public static OptionalLong currentFencingToken() {
    return find(null);
  }

  /**
   * @param lockName the name of a ShedLock lock
   * @return the fencing token of that lock if the calling thread took it through a {@code
   *     LocksmithLockProvider} and still holds it, else empty
   * @throws NullPointerException if {@code lockName} is null
   */
  public static OptionalLong fencingToken(String lockName) {
    return find(
        Objects.requireNonNull(
            lockName, "`lockName` was null but it must be the name of a ShedLock lock"));
  }

  private static OptionalLong find(String name) {
    Deque<ShedLockLease> here = HELD_HERE.get();
    for (Iterator<ShedLockLease> it = here.descendingIterator(); it.hasNext(); ) {
      ShedLockLease held = it.next();
      if (!held.isCurrent()) {
        it.remove(); // unlocked or extended, perhaps from another thread
        continue;
      }
      if (name == null || name.equals(held.lockName())) {
        return OptionalLong.of(held.fencingToken());
      }
    }
    if (here.isEmpty()) {
      HELD_HERE.remove();
    }
    return OptionalLong.empty();
  }

  /** Called on the thread that extends: the new lock takes the old one's place there. */
  static void replaced(ShedLockLease old, ShedLockLease successor) {
    OPEN.remove(old);
    if (successor != null) {
      OPEN.add(successor);
    }
    Deque<ShedLockLease> here = HELD_HERE.get();
    if (here.remove(old) && successor != null) {
      here.addLast(successor);
    }
    if (here.isEmpty()) {
      HELD_HERE.remove();
    }
  }

  @Override
  public String toString() {
    return "LocksmithLockProvider{" + client.config().uri() + "}";
  }
}
