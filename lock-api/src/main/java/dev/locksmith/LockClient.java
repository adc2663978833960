package dev.locksmith;

import java.util.Collection;

/**
 * A connection to one lock backend, made by {@link Locks#connect(String)}. Thread-safe; share one
 * per application and backend. The semaphore and read-write lock methods have defaults that throw
 * {@link UnsupportedOperationException}, so that a test double written against an earlier version
 * still compiles; every client {@link Locks} makes implements them. Closing it releases every lease
 * it holds and stops its background threads.
 *
 * <pre>{@code
 * try (LockClient client = Locks.connect("redis://localhost:6379")) {
 *   try (Lease lease = client.lock("orders:42").acquire(Duration.ofSeconds(10))) {
 *     ...
 *   }
 * }
 * }</pre>
 */
public interface LockClient extends AutoCloseable {

  /**
   * @param name the lock's name: 1 to 255 characters, no control characters; any other Unicode is
   *     allowed and stored as is
   * @return the lock, held with the client's default options
   * @throws NullPointerException if {@code name} is null
   * @throws IllegalArgumentException if {@code name} is empty, too long or has control characters
   * @throws IllegalStateException if the client is closed
   */
  DistributedLock lock(String name);

  /**
   * @param name the lock's name, as for {@link #lock(String)}
   * @param options how this lock is held
   * @return the lock
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code name} is not valid
   * @throws IllegalStateException if the client is closed
   */
  DistributedLock lock(String name, LockOptions options);

  /** The most distinct names one {@link #locks(Collection)} set may hold. */
  int MAX_NAMES_PER_SET = 10_000;

  /**
   * Several locks taken all or none: the returned lock's lease holds every name, and a call that
   * does not get them all (busy, timeout, interrupt, cancel, error) has released every name it took
   * before it returns. The names are taken in one global order (their natural {@link String}
   * order), so sets that share names, taken by any clients in any order, and single locks of those
   * names never wait for each other in a cycle. Each name is the same lock as {@link #lock(String)}
   * of it: a set excludes every single holder of its names and the other way round.
   *
   * <p>The lease gives each name's token ({@link Lease#fencingToken(String)}); its {@link
   * Lease#fencingToken()} is the first name's in that order. Losing any name is losing the lease:
   * {@link Lease#lost()} completes with that name's loss. {@link Lease#release()} releases every
   * name. {@link DistributedLock#state()} is {@link LockState#unknown()}: read each name's state on
   * its own lock. The core first asks the backend for the whole set in one step: where the backend
   * declares {@link Guarantees.Feature#ATOMIC_LOCK_SETS}, a set of free names is granted in one
   * round trip and a set that finds a name busy takes none of them. Otherwise, and while a busy set
   * waits, it takes the names one after another, each with what is left of the wait.
   *
   * @param names 1 to {@link #MAX_NAMES_PER_SET} lock names, each as for {@link #lock(String)}; a
   *     name given twice is one name
   * @return the set, held with the client's default options
   * @throws NullPointerException if {@code names} or one of its names is null
   * @throws IllegalArgumentException if {@code names} is empty, has more distinct names than the
   *     limit, or has a name that is not valid
   * @throws IllegalStateException if the client is closed
   */
  default DistributedLock locks(Collection<String> names) {
    return MultiLock.of(this, names, null);
  }

  /**
   * @param names as for {@link #locks(Collection)}
   * @param options how every name is held
   * @return the set
   * @throws NullPointerException if an argument or one of the names is null
   * @throws IllegalArgumentException if {@code names} is not valid, as for {@link
   *     #locks(Collection)}
   * @throws IllegalStateException if the client is closed
   */
  default DistributedLock locks(Collection<String> names, LockOptions options) {
    if (options == null) {
      throw new NullPointerException(
          "`options` was null but it must be LockOptions, such as LockOptions.defaults()");
    }
    return MultiLock.of(this, names, options);
  }

  /**
   * A counting semaphore: at most {@code permits} leases at once across every client, each lease
   * one permit, leased, renewed, owner-checked and fenced like a lock's (tokens strictly increase
   * across the semaphore's grants). A holder that dies frees its permit within its lease plus the
   * backend's slack. Every acquire takes a permit of its own (the client's default options with
   * reentrancy off, as {@link java.util.concurrent.Semaphore}); pass options with reentrancy on to
   * have the holding thread get its own permit back, counted.
   *
   * <p>Every client must give the same count: an acquire that gives another count while permits are
   * held fails with {@link IllegalStateException} naming both counts. The count can change once no
   * permit is held. {@link DistributedLock#state()} is {@link LockState#unknown()}; {@link
   * Lease#extend} and {@link Lease#releaseAfter} are for exclusive locks only.
   *
   * @param name the semaphore's name, as for {@link #lock(String)}; a semaphore is a resource of
   *     its own, apart from a lock or read-write lock of the same name
   * @param permits how many leases may be held at once, 1 to 10,000
   * @return the semaphore, as a {@link DistributedLock} whose every lease is one permit
   * @throws NullPointerException if {@code name} is null
   * @throws IllegalArgumentException if {@code name} is not valid or {@code permits} is out of
   *     range
   * @throws UnsupportedOperationException if the backend does not declare {@link
   *     Guarantees.Feature#SEMAPHORES}
   * @throws IllegalStateException if the client is closed
   */
  default DistributedLock semaphore(String name, int permits) {
    throw new UnsupportedOperationException(this + " has no semaphores");
  }

  /**
   * @param name as for {@link #semaphore(String, int)}
   * @param permits as for {@link #semaphore(String, int)}
   * @param options how its permits are held; {@link LockOptions#reentrant()} says whether the
   *     holding thread gets its own permit back
   * @return the semaphore
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code name} or {@code permits} is not valid
   * @throws UnsupportedOperationException if the backend does not declare {@link
   *     Guarantees.Feature#SEMAPHORES}
   * @throws IllegalStateException if the client is closed
   */
  default DistributedLock semaphore(String name, int permits, LockOptions options) {
    throw new UnsupportedOperationException(this + " has no semaphores");
  }

  /**
   * A read-write lock: many readers or one writer; see {@link DistributedReadWriteLock} for what it
   * guarantees. Both sides are held with the client's default options.
   *
   * @param name the read-write lock's name, as for {@link #lock(String)}; a resource of its own
   * @return the read-write lock
   * @throws NullPointerException if {@code name} is null
   * @throws IllegalArgumentException if {@code name} is not valid
   * @throws UnsupportedOperationException if the backend does not declare {@link
   *     Guarantees.Feature#READ_WRITE_LOCKS}
   * @throws IllegalStateException if the client is closed
   */
  default DistributedReadWriteLock readWriteLock(String name) {
    throw new UnsupportedOperationException(this + " has no read-write locks");
  }

  /**
   * @param name as for {@link #readWriteLock(String)}
   * @param options how both sides are held
   * @return the read-write lock
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code name} is not valid
   * @throws UnsupportedOperationException if the backend does not declare {@link
   *     Guarantees.Feature#READ_WRITE_LOCKS}
   * @throws IllegalStateException if the client is closed
   */
  default DistributedReadWriteLock readWriteLock(String name, LockOptions options) {
    throw new UnsupportedOperationException(this + " has no read-write locks");
  }

  /**
   * A leader latch: leader election over this client's exclusive lock {@code name}, for a service
   * that just wants to be told when it leads ({@link LeaderLatch#onElected}) and when it stops
   * ({@link LeaderLatch#onRevoked}). Nothing happens until {@link LeaderLatch#start()}.
   *
   * @param name the election's name: the name of the lock its leader holds
   * @return a new latch, not started
   * @throws IllegalArgumentException if {@code name} is not a valid lock name
   * @throws NullPointerException if {@code name} is null
   */
  default LeaderLatch leaderLatch(String name) {
    return new LeaderLatch(this, name);
  }

  /**
   * An election over this client's exclusive lock {@code name}: {@linkplain Election#campaign
   * campaign} under an identity, read {@linkplain Election#leader() who leads}, {@linkplain
   * Election#observe watch} the leader change.
   *
   * @param name the election's name: the name of the lock its leader holds
   * @return the election; nothing is written until a campaign
   * @throws IllegalArgumentException if {@code name} is not a valid lock name
   * @throws NullPointerException if {@code name} is null
   */
  default Election election(String name) {
    return new Election(this, name, config().defaults());
  }

  /**
   * An election as {@link #election(String)} gives, whose leader holds its lock with {@code
   * options}: their lease (how soon a leader that died is replaced) and the rest, except that
   * leadership is never reentrant and is always renewed while it lasts.
   *
   * @param name the election's name: the name of the lock its leader holds
   * @param options the leader's lock options, such as {@code
   *     LockOptions.builder().lease(Duration.ofSeconds(10)).build()}
   * @return the election; nothing is written until a campaign
   * @throws IllegalArgumentException if {@code name} is not a valid lock name
   * @throws NullPointerException if an argument is null
   */
  default Election election(String name, LockOptions options) {
    return new Election(this, name, options);
  }

  /**
   * Break-glass: frees the exclusive lock {@code name} whoever holds it, for an operator facing a
   * lock held by a process that will never let it go. Unlike a forced unlock that just deletes the
   * lock, it is safe for the data the lock guards: the holder's next renewal fails and its {@link
   * Lease#lost()} completes, and the next holder's fencing token is higher than the broken
   * holder's, so a fence refuses the old holder's late writes. The reason and the holder (where the
   * backend reads it) are logged at WARN. Needs {@link Guarantees.Feature#BREAK_GLASS}.
   *
   * <p>Only for exclusive locks ({@link #lock}); a lease of this client on the lock is lost like
   * any other holder's.
   *
   * @param name the lock's name
   * @param reason why, for the log: 1 to 500 characters, not blank
   * @return true if this call freed a holder, false if nobody held the lock (or its holder let go
   *     of it first)
   * @throws UnsupportedOperationException if the backend does not declare BREAK_GLASS
   * @throws IllegalArgumentException if {@code name} is not a valid lock name or {@code reason} is
   *     blank or too long
   * @throws NullPointerException if either is null
   * @throws BackendUnavailableException if the server cannot be reached
   */
  default boolean breakLock(String name, String reason) {
    throw new UnsupportedOperationException(
        "breakLock() is not implemented by " + getClass().getName());
  }

  /**
   * Lists what is held under a name prefix, one page at a time: the exclusive locks, each with its
   * state (holder, token and remaining lease where the backend reads them), then the semaphores and
   * the read-write locks, each with every holder's state ({@link HeldLock#kind()} tells which), for
   * the primitives the backend declares {@link Guarantees.Feature#LISTING} for. Each page costs a
   * bounded number of round trips. Everything held from the first page to the last is listed; what
   * is taken or released meanwhile may or may not be. Listing takes and renews nothing.
   *
   * <pre>{@code
   * String cursor = null;
   * do {
   *   LockPage page = client.list("orders/", cursor, 100);
   *   page.locks().forEach(l -> System.out.println(l.name() + " " + l.state()));
   *   cursor = page.next().orElse(null);
   * } while (cursor != null);
   * }</pre>
   *
   * @param prefix the names' beginning (empty for every lock), at most 255 characters without
   *     control characters
   * @param cursor null for the first page, else the {@link LockPage#next()} of the page before
   * @param limit how many names the backend reads for a page, 1 to 1,000; a page holds at most that
   *     many entries, and may hold fewer (even none before the last page)
   * @return the page
   * @throws UnsupportedOperationException if the backend does not declare LISTING
   * @throws IllegalArgumentException if {@code prefix}, {@code cursor} or {@code limit} is invalid
   * @throws NullPointerException if {@code prefix} is null
   * @throws BackendUnavailableException if the server cannot be reached
   */
  default LockPage list(String prefix, String cursor, int limit) {
    throw new UnsupportedOperationException("list() is not implemented by " + getClass().getName());
  }

  /**
   * @return what the backend promises, as data
   */
  Guarantees guarantees();

  /**
   * @return the configuration the client was made from (its URI redacted in {@code toString()})
   */
  LockConfig config();

  /**
   * Releases every lease this client holds, withdraws its waiters (they fail with {@link
   * LockException}), and closes the connection. Idempotent.
   */
  @Override
  void close();
}
