package dev.locksmith;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A set of lock names taken all or none, over the client's single locks (the core's fallback for
 * every backend): the names in one global order (their natural {@link String} order), each taken in
 * turn within what is left of the caller's wait, and every name already taken released before a
 * call that did not get the whole set returns. Two sets taken in any order never wait for each
 * other in a cycle, since every caller takes the names they share in the same order.
 */
final class MultiLock implements DistributedLock {
  private final List<String> names;
  private final List<DistributedLock> locks;
  private final LockOptions options;
  private final String description;
  private final Lock view = new View();

  /**
   * The client's core, which tries the set in one step first; null for a client of another kind.
   */
  private final ClientCore core;

  private MultiLock(
      List<String> names, List<DistributedLock> locks, LockOptions options, ClientCore core) {
    this.names = names;
    this.locks = locks;
    this.options = options;
    this.core = core;
    this.description = "[" + String.join(", ", names) + "]";
  }

  /**
   * @param options null for the client's default options
   */
  static DistributedLock of(LockClient client, Collection<String> names, LockOptions options) {
    if (names == null) {
      throw new NullPointerException(
          "`names` was null but it must be a collection of 1 to "
              + LockClient.MAX_NAMES_PER_SET
              + " lock names");
    }
    TreeSet<String> sorted = new TreeSet<>();
    int index = 0;
    for (String name : names) {
      try {
        Names.check(name);
      } catch (RuntimeException e) {
        throw rethrown(e, index);
      }
      sorted.add(name);
      index++;
    }
    if (sorted.isEmpty()) {
      throw new IllegalArgumentException(
          "`names` was empty but it must hold 1 to "
              + LockClient.MAX_NAMES_PER_SET
              + " lock names");
    }
    if (sorted.size() > LockClient.MAX_NAMES_PER_SET) {
      throw new IllegalArgumentException(
          "`names` held "
              + sorted.size()
              + " distinct lock names but a set holds at most "
              + LockClient.MAX_NAMES_PER_SET);
    }
    if (options == null) {
      options = client.lock(sorted.first()).options();
    }
    List<String> ordered = List.copyOf(sorted);
    List<DistributedLock> locks = new ArrayList<>(ordered.size());
    for (String name : ordered) {
      locks.add(client.lock(name, options));
    }
    return new MultiLock(
        ordered, List.copyOf(locks), options, client instanceof ClientCore c ? c : null);
  }

  /** The name check's exception, saying which element of {@code names} it was about. */
  private static RuntimeException rethrown(RuntimeException e, int index) {
    String message =
        e.getMessage().replaceFirst("^`name`", "`names` element " + index + " (`name`)");
    return e instanceof NullPointerException
        ? new NullPointerException(message)
        : new IllegalArgumentException(message, e);
  }

  /**
   * @return the set's names in the order they are taken
   */
  List<String> names() {
    return names;
  }

  @Override
  public String name() {
    return description;
  }

  /**
   * The set in one step on the server, where the backend can ({@link
   * dev.locksmith.spi.LockBackend#acquireAll}).
   *
   * @param owner the thread that asks, null for an asynchronous caller
   * @return the set's lease; empty if a name was busy (nothing held); null if the names are to be
   *     taken one by one
   */
  private Optional<Lease> atOnce(Thread owner) throws InterruptedException {
    if (core == null) {
      return null;
    }
    List<LeaseHandle> got = core.acquireAll(names, options, owner);
    if (got == null) {
      return null;
    }
    return got.isEmpty()
        ? Optional.empty()
        : Optional.of(new MultiLease(description, names, List.<Lease>copyOf(got)));
  }

  @Override
  public LockOptions options() {
    return options;
  }

  @Override
  public Lease acquire() throws InterruptedException {
    Optional<Lease> once = atOnce(Thread.currentThread());
    if (once != null && once.isPresent()) {
      return once.get();
    }
    List<Lease> held = new ArrayList<>(locks.size());
    try {
      for (DistributedLock lock : locks) {
        held.add(lock.acquire());
      }
      return new MultiLease(description, names, held);
    } catch (InterruptedException | RuntimeException | Error e) {
      releaseAll(held, e);
      throw e;
    }
  }

  @Override
  public Lease acquire(Duration timeout) throws InterruptedException {
    Optional<Lease> lease = tryAcquire(timeout);
    if (lease.isEmpty()) {
      throw new LockTimeoutException(description, timeout);
    }
    return lease.get();
  }

  @Override
  public Optional<Lease> tryAcquire() {
    try {
      Optional<Lease> once = atOnce(Thread.currentThread());
      if (once != null) {
        return once;
      }
    } catch (InterruptedException e) {
      // one attempt does not wait, so an interrupt is not ours to consume: keep the flag set
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
    List<Lease> held = new ArrayList<>(locks.size());
    try {
      for (DistributedLock lock : locks) {
        Optional<Lease> one = lock.tryAcquire();
        if (one.isEmpty()) {
          releaseAll(held, null);
          return Optional.empty();
        }
        held.add(one.get());
      }
      return Optional.of(new MultiLease(description, names, held));
    } catch (RuntimeException | Error e) {
      releaseAll(held, e);
      throw e;
    }
  }

  @Override
  public Optional<Lease> tryAcquire(Duration timeout) throws InterruptedException {
    long nanos = Names.timeoutNanos(timeout);
    long deadline = System.nanoTime() + nanos;
    Optional<Lease> once = atOnce(Thread.currentThread());
    if (once != null && (once.isPresent() || nanos == 0)) {
      return once;
    }
    List<Lease> held = new ArrayList<>(locks.size());
    try {
      for (DistributedLock lock : locks) {
        long left = Math.max(0, deadline - System.nanoTime());
        Optional<Lease> one = lock.tryAcquire(Duration.ofNanos(left));
        if (one.isEmpty()) {
          releaseAll(held, null);
          return Optional.empty();
        }
        held.add(one.get());
      }
      return Optional.of(new MultiLease(description, names, held));
    } catch (InterruptedException | RuntimeException | Error e) {
      releaseAll(held, e);
      throw e;
    }
  }

  @Override
  public CompletableFuture<Lease> acquireAsync(Duration timeout) {
    long nanos = Names.timeoutNanos(timeout);
    long deadline = System.nanoTime() + nanos;
    List<Lease> held = new ArrayList<>(locks.size());
    CompletableFuture<Lease> result = new CompletableFuture<>();
    Object[] current = new Object[1]; // the name's future now in flight, guarded by held
    // Completes once the one-step attempt (atOnce) is over, what it was granted handed out or given
    // back: a backend that takes a set in steps (a Redis Cluster, one hash slot after another)
    // holds its first names for a moment during it, even when the set turns out busy.
    CompletableFuture<Void> oneStepOver = new CompletableFuture<>();
    if (core == null) {
      oneStepOver.complete(null);
    }
    // Whoever completes the result (us, cancel, orTimeout): a set that is not handed out is given
    // back before that completion returns, and the name in flight is withdrawn.
    result.whenComplete(
        (lease, error) -> {
          if (error != null) {
            // a one-step attempt under way gives back what it holds before this returns (it
            // completes oneStepOver before it completes the result itself, so this never waits
            // on its own thread)
            oneStepOver.join();
            CompletableFuture<?> inFlight;
            List<Lease> back;
            synchronized (held) {
              inFlight = (CompletableFuture<?>) current[0];
              back = new ArrayList<>(held);
              held.clear();
            }
            if (inFlight != null && !inFlight.cancel(false)) {
              // the name in flight was granted just now and its callback has not kept it yet:
              // give it back here too, before this completion returns (the callback, finding the
              // set done, releases it as well; a release is idempotent)
              Lease granted = grantedOrNull(inFlight);
              if (granted != null) {
                back.add(granted);
              }
            }
            releaseAll(back, null);
          }
        });
    if (core == null) {
      next(0, deadline, timeout, held, current, result);
      return result;
    }
    core.runInBackground(
        () -> {
          Optional<Lease> once;
          try {
            once = result.isDone() ? null : atOnce(null);
          } catch (InterruptedException | RuntimeException | Error e) {
            oneStepOver.complete(null); // atOnce gave back what it held before it threw
            Throwable failure = e;
            if (e instanceof InterruptedException) {
              failure = new LockException("interrupted while acquiring " + description, e);
            }
            result.completeExceptionally(failure);
            return;
          }
          if (once != null && once.isPresent()) {
            boolean handedOut = result.complete(once.get());
            if (!handedOut) {
              once.get().release(); // cancelled while the set was granted
            }
            oneStepOver.complete(null);
            return;
          }
          oneStepOver.complete(null);
          if (once != null && nanos == 0) {
            result.completeExceptionally(new LockTimeoutException(description, timeout));
          } else if (!result.isDone()) {
            next(0, deadline, timeout, held, current, result);
          }
        });
    return result;
  }

  /**
   * @return the lease a completed future holds, or null if it failed or was cancelled
   */
  private static Lease grantedOrNull(CompletableFuture<?> done) {
    try {
      Object value = done.getNow(null);
      return value instanceof Lease lease ? lease : null;
    } catch (RuntimeException failedOrCancelled) {
      return null;
    }
  }

  /**
   * Takes the names from {@code start} on, one after the other; a name granted at once is handled
   * in this loop, not by a nested callback, so a large set does not grow the stack.
   */
  private void next(
      int start,
      long deadline,
      Duration timeout,
      List<Lease> held,
      Object[] current,
      CompletableFuture<Lease> result) {
    for (int i = start; ; i++) {
      if (i == locks.size()) {
        List<Lease> all;
        synchronized (held) {
          all = List.copyOf(held);
        }
        if (!result.complete(new MultiLease(description, names, all))) {
          releaseAll(all, null); // cancelled as the last name arrived
        }
        return;
      }
      long left = Math.max(0, deadline - System.nanoTime());
      CompletableFuture<Lease> one = locks.get(i).acquireAsync(Duration.ofNanos(left));
      synchronized (held) {
        current[0] = one;
      }
      if (!one.isDone()) {
        int following = i + 1;
        one.whenComplete(
            (lease, error) -> {
              if (kept(lease, error, timeout, held, current, result)) {
                next(following, deadline, timeout, held, current, result);
              }
            });
        return;
      }
      Lease lease = null;
      Throwable error = null;
      try {
        lease = one.join();
      } catch (RuntimeException e) {
        error = e;
      }
      if (!kept(lease, error, timeout, held, current, result)) {
        return;
      }
    }
  }

  /**
   * @return whether one name's outcome was a lease the set keeps (and the next name is due); a
   *     failure fails the set, and a lease that came after the set was cancelled is given back
   */
  private boolean kept(
      Lease lease,
      Throwable error,
      Duration timeout,
      List<Lease> held,
      Object[] current,
      CompletableFuture<Lease> result) {
    if (error != null) {
      Throwable cause =
          (error instanceof CompletionException && error.getCause() != null)
              ? error.getCause()
              : error;
      Throwable failure =
          cause instanceof LockTimeoutException
              ? new LockTimeoutException(description, timeout)
              : cause;
      // Give the names back before the failure is signalled: a caller woken by it (get(), join())
      // must find none of them held, and completing first would run this release concurrently
      // with that caller (dependents of a future are not run in the order they were added).
      List<Lease> back;
      synchronized (held) {
        back = new ArrayList<>(held);
        held.clear();
        current[0] = null;
      }
      releaseAll(back, failure);
      result.completeExceptionally(failure);
      return false;
    }
    boolean kept;
    synchronized (held) {
      kept = !result.isDone();
      if (kept) {
        held.add(lease);
        current[0] = null;
      }
    }
    if (!kept) {
      lease.release();
    }
    return kept;
  }

  /**
   * Releases what a call that did not get the whole set took, last name first, so nothing of it is
   * held when the call returns. A release that fails is added to {@code cause} (or thrown when
   * there is none, after the rest are released): its name expires with its lease.
   */
  private static void releaseAll(List<Lease> held, Throwable cause) {
    try {
      allLastFirst(held, Lease::release);
    } catch (RuntimeException e) {
      if (cause == null) {
        throw e;
      }
      cause.addSuppressed(e);
    } finally {
      held.clear();
    }
  }

  /**
   * Runs {@code action} on every item, last first, and on all of them even when one throws; then
   * throws the first exception, with the later ones suppressed in it.
   *
   * @return whether {@code action} answered true for every item
   */
  static <T> boolean allLastFirst(List<T> items, java.util.function.Predicate<T> action) {
    boolean all = true;
    RuntimeException first = null;
    for (int i = items.size() - 1; i >= 0; i--) {
      try {
        all &= action.test(items.get(i));
      } catch (RuntimeException e) {
        all = false;
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
    return all;
  }

  /**
   * @return {@link LockState#unknown()}: a set has no one state; read each name's with {@code
   *     client.lock(name).state()}
   */
  @Override
  public LockState state() {
    return LockState.unknown();
  }

  @Override
  public Lock asLock() {
    return view;
  }

  @Override
  public String toString() {
    return "DistributedLock{" + description + ", " + options + "}";
  }

  /** {@link Lock} semantics over each name's own view, taken in the set's order. */
  private final class View implements Lock {
    @Override
    public void lock() {
      for (DistributedLock lock : locks) {
        lock.asLock().lock();
      }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
      int taken = 0;
      try {
        for (DistributedLock lock : locks) {
          lock.asLock().lockInterruptibly();
          taken++;
        }
      } catch (InterruptedException | RuntimeException | Error e) {
        unlockFirst(taken);
        throw e;
      }
    }

    @Override
    public boolean tryLock() {
      int taken = 0;
      try {
        for (DistributedLock lock : locks) {
          if (!lock.asLock().tryLock()) {
            unlockFirst(taken);
            return false;
          }
          taken++;
        }
        return true;
      } catch (RuntimeException | Error e) {
        unlockFirst(taken);
        throw e;
      }
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
      if (unit == null) {
        throw new NullPointerException("`unit` was null but it must be a TimeUnit");
      }
      long deadline = System.nanoTime() + Math.max(0, unit.toNanos(time));
      int taken = 0;
      try {
        for (DistributedLock lock : locks) {
          long left = Math.max(0, deadline - System.nanoTime());
          if (!lock.asLock().tryLock(left, TimeUnit.NANOSECONDS)) {
            unlockFirst(taken);
            return false;
          }
          taken++;
        }
        return true;
      } catch (InterruptedException | RuntimeException | Error e) {
        unlockFirst(taken);
        throw e;
      }
    }

    /** Unlocks the first {@code taken} names, last first. */
    private void unlockFirst(int taken) {
      for (int i = taken - 1; i >= 0; i--) {
        locks.get(i).asLock().unlock();
      }
    }

    @Override
    public void unlock() {
      allLastFirst(
          locks,
          lock -> {
            lock.asLock().unlock();
            return true;
          });
    }

    @Override
    public Condition newCondition() {
      throw new UnsupportedOperationException("conditions are not supported by distributed locks");
    }

    @Override
    public String toString() {
      return "Lock view of " + MultiLock.this;
    }
  }
}
