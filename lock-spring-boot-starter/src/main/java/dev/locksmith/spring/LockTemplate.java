package dev.locksmith.spring;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockException;
import java.time.Duration;
import java.util.Collection;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Runs code under a lock without annotations. A bean of the starter; or {@code new
 * LockTemplate(client)}.
 *
 * <pre>{@code
 * long total = locks.locked("stock:" + sku, Duration.ofSeconds(5), lease -> inventory.take(sku, 1, lease.fencingToken()));
 * }</pre>
 *
 * <p>The forms taking a {@code Collection} of names hold every name, all or none.
 */
public final class LockTemplate {
  private final LockClient client;
  private final LockObserver observer;

  /**
   * @param client the client whose locks are used
   * @throws NullPointerException if {@code client} is null
   */
  public LockTemplate(LockClient client) {
    this(client, LockObserver.PLAIN);
  }

  LockTemplate(LockClient client, LockObserver observer) {
    this.client =
        Objects.requireNonNull(
            client, "`client` was null but it must be the LockClient to lock with");
    this.observer = observer;
  }

  /**
   * Waits up to {@code wait} for the lock, runs {@code work} with the lease, and releases it.
   *
   * @param name the lock
   * @param wait how long to wait; zero tries once
   * @param work what to run while holding it; it gets the lease (for its fencing token)
   * @param <T> what {@code work} returns
   * @return what {@code work} returned
   * @throws LockBusyException if the lock was not acquired in time
   * @throws LockException if the thread was interrupted while waiting (the interrupt flag is set
   *     again), or the backend failed
   */
  public <T> T locked(String name, Duration wait, Function<Lease, T> work) {
    return run(
        name,
        wait,
        work,
        () -> {
          throw new LockBusyException(name, wait, "LockTemplate.locked");
        });
  }

  /**
   * Like {@link #locked}, but a busy lock is an empty result instead of an exception.
   *
   * @param name the lock
   * @param wait how long to wait; zero tries once
   * @param work what to run while holding it
   * @param <T> what {@code work} returns
   * @return what {@code work} returned; empty if the lock was busy (or {@code work} returned null)
   */
  public <T> Optional<T> tryLocked(String name, Duration wait, Function<Lease, T> work) {
    return Optional.ofNullable(run(name, wait, work, () -> null));
  }

  /**
   * Waits up to {@code wait} for every lock of {@code names}, all or none ({@link
   * LockClient#locks(Collection)}: taken in one global order, so calls with overlapping names in
   * any order do not deadlock), runs {@code work} with the set's lease, and releases them all.
   *
   * <pre>{@code
   * locks.locked(List.of("account:7", "account:42"), Duration.ofSeconds(5),
   *     lease -> ledger.move(7, 42, amount, lease.fencingToken("account:7"), lease.fencingToken("account:42")));
   * }</pre>
   *
   * @param names 1 to {@link LockClient#MAX_NAMES_PER_SET} lock names; a name given twice is one
   * @param wait how long to wait for the whole set; zero tries once
   * @param work what to run while holding them; it gets the set's lease ({@link
   *     Lease#fencingToken(String)} gives each name's token)
   * @param <T> what {@code work} returns
   * @return what {@code work} returned
   * @throws NullPointerException if an argument or one of the names is null
   * @throws IllegalArgumentException if {@code names} is empty, too large or has a name that is not
   *     valid
   * @throws LockBusyException if not every lock was acquired in time (none is then held)
   * @throws LockException if the thread was interrupted while waiting (the interrupt flag is set
   *     again), or the backend failed
   */
  public <T> T locked(Collection<String> names, Duration wait, Function<Lease, T> work) {
    DistributedLock lock = set(names);
    return run(
        lock,
        wait,
        work,
        () -> {
          throw new LockBusyException(lock.name(), wait, "LockTemplate.locked");
        });
  }

  /**
   * Like {@link #locked(Collection, Duration, Function)}, but a set that is not all acquired in
   * time is an empty result instead of an exception.
   *
   * @param names 1 to {@link LockClient#MAX_NAMES_PER_SET} lock names; a name given twice is one
   * @param wait how long to wait for the whole set; zero tries once
   * @param work what to run while holding them
   * @param <T> what {@code work} returns
   * @return what {@code work} returned; empty if a lock was busy (or {@code work} returned null)
   * @throws NullPointerException if an argument or one of the names is null
   * @throws IllegalArgumentException if {@code names} is empty, too large or has a name that is not
   *     valid
   */
  public <T> Optional<T> tryLocked(
      Collection<String> names, Duration wait, Function<Lease, T> work) {
    return Optional.ofNullable(run(set(names), wait, work, () -> null));
  }

  private DistributedLock set(Collection<String> names) {
    return client.locks(names); // checks the names, naming the parameter and the element
  }

  private <T> T run(String name, Duration wait, Function<Lease, T> work, Supplier<T> busy) {
    Objects.requireNonNull(name, "`name` was null but it must be a lock name");
    return run(client.lock(name), wait, work, busy);
  }

  private <T> T run(
      DistributedLock lock, Duration wait, Function<Lease, T> work, Supplier<T> busy) {
    Objects.requireNonNull(wait, "`wait` was null but it must be a duration, zero to try once");
    Objects.requireNonNull(work, "`work` was null but it must be the code to run under the lock");
    Optional<Lease> lease;
    try {
      lease = observer.tryAcquire(lock, wait);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new LockException("interrupted while waiting for lock '" + lock.name() + "'", e);
    }
    if (lease.isEmpty()) {
      return busy.get();
    }
    try (Lease held = lease.get()) {
      LockObserver.Hold hold = observer.hold(held);
      RuntimeException failure = null;
      CurrentLease.push(held);
      try (AutoCloseable scope = hold.openScope()) {
        return work.apply(held);
      } catch (RuntimeException e) {
        failure = e;
        throw e;
      } catch (Exception e) {
        throw new IllegalStateException(
            "closing an observation scope failed", e); // scopes do not throw checked exceptions
      } finally {
        CurrentLease.pop();
        hold.stop(failure);
      }
    }
  }
}
