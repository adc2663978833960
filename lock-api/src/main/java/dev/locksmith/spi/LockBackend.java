package dev.locksmith.spi;

import dev.locksmith.Guarantees;
import dev.locksmith.LockState;
import java.time.Duration;
import java.util.List;

/**
 * The wire protocol of one backend, and nothing else: the core around it owns deadlines,
 * interrupts, cancellation, reentrancy, renewal scheduling, name checks, loss dispatch and events.
 * Methods are called from many threads at once. Every call that goes to a server must be bounded by
 * a timeout of the backend's own.
 *
 * <p><b>Two kinds of grant.</b> A <em>leased</em> grant ({@link Poll#granted}) is kept by the
 * server for the lease asked for; the core calls {@link #renew} while the user's options say
 * auto-renew, and counts the lease as lost when it ends unrenewed. A <em>session</em> grant ({@link
 * Poll#grantedForSession}, only when {@link #renewsBySession()} is true) is kept by the server
 * while the backend's session lives (a ZooKeeper session, an etcd lease, a database connection);
 * the core never calls {@link #renew}, and the backend reports loss through {@link BackendContext}.
 * The backend is not told whether auto-renew is on: with it off, the core ends a session grant
 * itself when the lease runs out (reason {@code EXPIRED}) and then calls {@link #release} in the
 * background, since the server would otherwise hold the lock until the session ends.
 *
 * <p><b>When {@link #release} is called.</b> Once per lease, when its holder releases it or closes
 * the client, and only while the core still counts the lease as held. It is not called for a lease
 * already known lost (a renewal answered {@link Renewal#lost}, the backend reported it through
 * {@link BackendContext#leaseLost} or {@link BackendContext#allLeasesLost}, or a leased grant's
 * validity passed: its server has let it go), except for a session grant whose validity ran out in
 * the client, which is released as said above. A release must still be owner-checked on the server,
 * in one atomic step: a release can race an expiry and a takeover (kit rules 2.1, 2.5–2.8).
 *
 * <p><b>Owners.</b> {@code ownerId} identifies one lease: two leases of one client have different
 * owner ids. {@link BackendContext#clientId()} is not an owner id. An owner id is under 200
 * characters, all ASCII letters, digits and {@code . _ - @ :}; it names who asked ({@link
 * dev.locksmith.Holder}), so a backend that stores it as given and returns it from {@link #inspect}
 * through {@link LockState#withHolder} shows people who holds a lock. Never shorten or re-case it:
 * it is compared whole.
 */
public interface LockBackend extends AutoCloseable {

  /**
   * @return what this backend promises
   */
  Guarantees guarantees();

  /**
   * Starts one acquisition. The core calls {@link LockAttempt#poll()} until it is granted, the
   * deadline passes or the waiter withdraws, then {@link LockAttempt#abandon()} unless granted.
   *
   * @param name the lock's name, already checked
   * @param ownerId unique for this lease among all clients (two leases of one client differ); store
   *     it as the owner, and compare it, not the client, on renew and release
   * @param lease how long the server should keep the lock without renewal
   * @param wake call it (from any thread, any number of times) when a poll is worth repeating: the
   *     lock was released or the predecessor went away. A backend that declares {@link
   *     dev.locksmith.Guarantees.Feature#NOTIFIED_WAKEUP} must be ready to call it before a poll
   *     that answers busy returns (subscribe first, or read again once subscribed: a release
   *     between the busy read and the subscription must not be lost), and a poll that finds the
   *     lock free but another waiter first in line must wake that waiter
   * @return the attempt
   */
  LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake);

  /**
   * Starts one acquisition of a semaphore permit or a side of a read-write lock (or, for {@link
   * Claim#exclusive()}, of a lock, which the default passes to {@link #attempt(String, String,
   * Duration, Runnable)}). The core calls it only for a claim whose feature the backend declares
   * ({@link dev.locksmith.Guarantees.Feature#SEMAPHORES}, {@link
   * dev.locksmith.Guarantees.Feature#READ_WRITE_LOCKS}); {@link Claim} says what the server must
   * keep true. The lease comes back to {@link #renew}, {@link #release}, {@link #extend} and {@link
   * #releaseAfter} with its claim in {@link BackendLease#claim()}: a backend that declares either
   * feature must handle every method for those leases too (extend and releaseAfter may throw {@link
   * UnsupportedOperationException} for them; the core then says so to the user). {@link #inspect}
   * is for exclusive locks only.
   *
   * @param name the resource's name, already checked
   * @param claim what to take
   * @param ownerId as for locks
   * @param lease as for locks
   * @param wake as for locks: also after a release of a permit or side of the same resource
   * @return the attempt
   */
  default LockAttempt attempt(
      String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
    if (claim.isExclusive()) {
      return attempt(name, ownerId, lease, wake);
    }
    throw new UnsupportedOperationException(this + " has no " + Claim.noun(claim.kind()) + "s");
  }

  /**
   * Tries several exclusive locks in one step on the server, all or none, for {@link
   * dev.locksmith.LockClient#locks(java.util.Collection)}: either every name is granted, or none is
   * taken and nothing is left behind (no queue entry, no subscription). A name that is held, or
   * that a waiter is first in line for, makes the whole set busy, as {@link
   * LockAttempt#pollWithoutWaiting()} would for that name alone. Each grant is what a poll of that
   * name would have answered: its own token from the name's fence, its own owner id, the same
   * lease; each comes back to {@link #renew}, {@link #release} and the rest as a lease of its own.
   *
   * <p>The core calls it first for every set (of one name too), and takes the names one by one when
   * it answers null. A backend that answers a grant or busy for every set declares {@link
   * dev.locksmith.Guarantees.Feature#ATOMIC_LOCK_SETS}, which allows null only for a set of more
   * than 64 names (a server that caps one request: ZooKeeper, etcd); one that can do it only for
   * some sets answers null for the others and does not declare it. A backend that does not declare
   * it may also take a set in a few steps (a Redis Cluster: one per hash slot), provided that a
   * busy answer comes only after every name it took is given back. If the call fails after the
   * request may have reached the server, the backend gives back whatever it may have granted under
   * these owner ids before it throws.
   *
   * @param names the names, already checked, distinct, in the set's order
   * @param ownerIds one owner id per name, as for {@link #attempt(String, String, Duration,
   *     Runnable)}
   * @param lease as for a single lock
   * @return one granted {@link Poll} per name in the same order; an empty list if a name was busy
   *     (nothing taken); null if this backend does not take this set in one step (the default)
   * @throws InterruptedException if interrupted while talking to the server (nothing held)
   * @throws dev.locksmith.BackendUnavailableException if the server cannot be reached (nothing
   *     held)
   */
  default List<Poll> acquireAll(List<String> names, List<String> ownerIds, Duration lease)
      throws InterruptedException {
    return null;
  }

  /**
   * @return true if held locks stay held by a session the backend keeps alive itself (ZooKeeper
   *     session, etcd lease); the core then never calls {@link #renew(List)} and relies on {@link
   *     BackendContext} for loss
   */
  default boolean renewsBySession() {
    return false;
  }

  /**
   * Renews leases, in as few round trips as the protocol allows: the core hands over every lease
   * due at about the same time.
   *
   * @param leases the leases to renew, each for {@link BackendLease#lease()}
   * @return one outcome per lease, in the same order; {@link Renewal#lost} (never {@link
   *     Renewal#failed}) when the server has another owner or none: a retry cannot help
   */
  List<Renewal> renew(List<BackendLease> leases);

  /**
   * Releases a lease, only if it is still ours (owner-checked): never someone else's lock.
   *
   * @param lease the lease
   * @return whether it was still ours
   * @throws dev.locksmith.BackendUnavailableException if the server cannot be reached
   */
  boolean release(BackendLease lease);

  /**
   * Releases several leases, each only if it is still ours, in as few round trips as the protocol
   * allows: the core hands over the names of a lock set ({@link
   * dev.locksmith.LockClient#locks(java.util.Collection)}) released together. Each lease is
   * released as {@link #release} would, under the same conditions.
   *
   * @param leases the leases
   * @return whether each was still ours, in the same order
   * @throws dev.locksmith.BackendUnavailableException if the server cannot be reached; the default
   *     releases every other lease first and throws the first failure
   */
  default List<Boolean> releaseAll(List<BackendLease> leases) {
    List<Boolean> ours = new java.util.ArrayList<>(leases.size());
    RuntimeException first = null;
    for (BackendLease lease : leases) {
      try {
        ours.add(release(lease));
      } catch (RuntimeException e) {
        ours.add(false);
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
    return ours;
  }

  /**
   * Moves a held lease's expiry on the server to {@code lease} from now, longer or shorter, in one
   * owner-checked step. Backends that implement it declare {@link
   * dev.locksmith.Guarantees.Feature#EXTEND}. The core calls it only for a lease held without
   * auto-renew that it still counts as valid. For a session grant ({@link Poll#grantedForSession})
   * the core also calls it right after the grant, with the lease asked for, so that the server, not
   * only this client, ends the lock at its expiry; from then on the lock must be freed at the
   * expiry even if this client vanishes, and waiters must find it free then.
   *
   * @param lease the lease, as handed back by the core
   * @param newLease the new lease, counted from now
   * @return true if moved; false if the lease is not ours any more (nothing changed)
   * @throws dev.locksmith.BackendUnavailableException if the server cannot be reached
   */
  default boolean extend(BackendLease lease, Duration newLease) {
    throw new UnsupportedOperationException(this + " does not implement extend");
  }

  /**
   * Gives a lease up but keeps the lock held on the server for {@code keep} from now,
   * owner-checked, in one step. Backends that implement it declare {@link
   * dev.locksmith.Guarantees.Feature#HOLD_AFTER_RELEASE}. The hold must survive {@link #close()},
   * {@link #abandon()} and the death of the process, and the lock must be free at its end without
   * any further call: a waiter polling then gets it. The core calls it instead of {@link #release},
   * under the same conditions.
   *
   * @param lease the lease, as handed back by the core
   * @param keep how long the server keeps the lock, above zero
   * @return whether it was still ours
   * @throws dev.locksmith.BackendUnavailableException if the server cannot be reached
   */
  default boolean releaseAfter(BackendLease lease, Duration keep) {
    throw new UnsupportedOperationException(this + " does not implement releaseAfter");
  }

  /**
   * Reads a lock's state without taking it or writing anything. Backends that implement it declare
   * {@link dev.locksmith.Guarantees.Feature#STATE_READS}, and the kit then checks it.
   *
   * @param name the lock's name, already checked
   * @return the state; the default is {@link LockState#unknown()}
   * @throws dev.locksmith.BackendUnavailableException if the server cannot be reached
   */
  default LockState inspect(String name) {
    return LockState.unknown();
  }

  /**
   * Watches who holds the exclusive lock {@code name}, for election observers: from when this
   * returns until the watch is closed, {@code changed} is called (from any thread, any number of
   * times, without blocking) after every release of the lock by any client, and, where {@link
   * HolderWatch#seesGrants()} says so, after every other change of holder. It is also called once
   * the watch is in place on the server and after a reconnect, when a change may have been missed.
   * A backend that cannot watch returns null (the default): observers then read the lock's state
   * every {@link dev.locksmith.Election#OBSERVE_EVERY}. Only backends that declare {@link
   * dev.locksmith.Guarantees.Feature#STATE_READS} are asked. Kit rule 24.4 checks a watch returned.
   *
   * @param name the lock's name, already checked
   * @param changed what to call when the holder may have changed: it only makes the observer read
   *     the state again, so a call too many costs one read
   * @return the watch, or null if this backend does not watch
   * @throws dev.locksmith.BackendUnavailableException if the server cannot be reached
   */
  default HolderWatch watchHolder(String name, Runnable changed) {
    return null;
  }

  /**
   * Break-glass ({@link dev.locksmith.Guarantees.Feature#BREAK_GLASS}): frees the exclusive lock
   * whoever holds it, in one step on the server. The holder's lease is gone (its renewal and its
   * release answer that it no longer holds the lock), waiters are woken as by a release, and the
   * fence counter is kept, so the next grant's token is higher than the broken lease's. A lock held
   * after release ({@link #releaseAfter}) is freed too.
   *
   * @param name the lock's name, already checked
   * @return true if this call freed a holder, false if the lock was free (or its holder let go
   *     first)
   */
  default boolean breakLock(String name) {
    throw new UnsupportedOperationException(this + " does not implement breakLock");
  }

  /**
   * Listing ({@link dev.locksmith.Guarantees.Feature#LISTING}): one page of the names of exclusive
   * locks that may be held and begin with {@code prefix}, at a bounded cost (a range or scan of
   * about {@code limit} entries, never the whole keyspace per page). Every lock held from the first
   * page to the last must be on some page; names listed twice, and names of locks free by then, are
   * dropped by the core, which reads each name's state. Nothing is taken or renewed.
   *
   * @param prefix the names' beginning; empty for every lock
   * @param cursor null for the first page, else a {@link NamePage#next()} this backend returned
   * @param limit about how many names a page holds, 1 to 1,000
   * @return the page
   */
  default NamePage listNames(String prefix, String cursor, int limit) {
    throw new UnsupportedOperationException(this + " does not implement listNames");
  }

  /**
   * Listing of one primitive, where {@link dev.locksmith.Guarantees.Feature#LISTING} is declared
   * for it: as {@link #listNames(String, String, int)}, the names of the semaphores or read-write
   * locks that may be held. The core reads each name's holders with {@link #inspectHolders}.
   *
   * @param prefix the names' beginning; empty for every name
   * @param cursor null for the first page, else a {@link NamePage#next()} this method returned for
   *     the same primitive
   * @param limit about how many names a page holds, 1 to 1,000
   * @param primitive the primitive listed
   * @return the page; the default lists locks with {@link #listNames(String, String, int)} and
   *     throws {@link UnsupportedOperationException} for the others
   */
  default NamePage listNames(
      String prefix, String cursor, int limit, dev.locksmith.Guarantees.Primitive primitive) {
    if (primitive == dev.locksmith.Guarantees.Primitive.LOCK) {
      return listNames(prefix, cursor, limit);
    }
    throw new UnsupportedOperationException(this + " does not list " + primitive);
  }

  /**
   * Reads who holds a semaphore or a read-write lock, without taking or renewing anything, for
   * {@link #listNames(String, String, int, dev.locksmith.Guarantees.Primitive)}.
   *
   * @param name the name, already checked
   * @param primitive {@code SEMAPHORE} or {@code READ_WRITE_LOCK}
   * @return the holders ({@link dev.locksmith.HeldLock#of}: kind {@code SEMAPHORE}, {@code READ} or
   *     {@code WRITE}, one state per holding, each with the holder's token, remaining lease and
   *     owner id where the backend reads them), or null if nothing is held
   * @throws dev.locksmith.BackendUnavailableException if the server cannot be reached
   */
  default dev.locksmith.HeldLock inspectHolders(
      String name, dev.locksmith.Guarantees.Primitive primitive) {
    throw new UnsupportedOperationException(this + " does not implement inspectHolders");
  }

  /**
   * Drops connections without releasing anything, as a crash would. Used by fault tests through
   * {@link Abandonable}. The default closes.
   */
  default void abandon() {
    close();
  }

  /** Closes connections and threads; the core has released held leases first. */
  @Override
  void close();
}
