package dev.locksmith.local;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockState;
import dev.locksmith.spi.Claim;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The lock table of one {@code local:} space, shared by every client of the JVM that names it. Time
 * is {@link System#nanoTime()}: no wall clock, so no clock jump can free a lock early. The wall
 * clock only seeds each lock's fence counter ({@link #fenceBase()}).
 */
final class LocalSpace {
  private static final Map<String, LocalSpace> SPACES = new ConcurrentHashMap<>();

  final String name;
  private final ReentrantLock mutex = new ReentrantLock();
  private final Map<String, Entry> locks = new HashMap<>();

  /** Semaphores and read-write locks, by {@link #sharedKey}: apart from locks of the same name. */
  private final Map<String, Shared> shared = new HashMap<>();

  /** Election observers' watches, by lock ({@link #watch}). */
  private final Map<String, Set<Runnable>> watchers = new ConcurrentHashMap<>();

  private volatile boolean suspended;

  /**
   * The highest fence counter of every entry removed so far (under the mutex): an entry is removed
   * once nothing of it is left but its counter (free, nobody waiting), so that a JVM locking one
   * name per order keeps no memory per name, and a new entry starts above this, so that a name's
   * tokens never go back whatever the wall clock says.
   */
  private long removedFence;

  /**
   * Where a lock's fence counter starts: the wall clock in microseconds when the lock is first used
   * in this JVM. A space lives only as long as its JVM, so this is what keeps the tokens of an
   * application restarted on {@code local:} above those of its previous run, which a resource
   * fenced by them may have stored (unless that run granted one lock more than once per
   * microsecond, or the clock was set back). Microseconds keep tokens below 2^53, exact as a
   * JavaScript number, for centuries.
   */
  static long fenceBase() {
    return Math.multiplyExact(System.currentTimeMillis(), 1000L);
  }

  /**
   * One lock: its holder, its fence counter (kept after release), and its FIFO queue of waiters.
   */
  private static final class Entry {
    String owner;
    long expiresAt;
    long fence;
    final ArrayDeque<Queued> queue = new ArrayDeque<>();

    Entry(long fence) {
      this.fence = fence;
    }
  }

  /**
   * One semaphore or read-write lock: its live leases, the count the semaphore's leases were taken
   * with, its fence counter (kept after release), every waiter (woken on each release), and the
   * writers waiting, each with the time its mark ends unless the writer polls again (no new reader
   * while there is a live mark: writer preference; a writer that vanishes without withdrawing holds
   * readers back only until its mark ends).
   */
  private static final class Shared {
    int permits;
    long fence;
    final Map<String, Holding> holders = new LinkedHashMap<>();
    final Set<Queued> waiters = new LinkedHashSet<>();
    final Map<Queued, Long> writersWaiting = new LinkedHashMap<>();

    Shared(long fence) {
      this.fence = fence;
    }
  }

  private static final class Holding {
    final boolean write;
    final long fence;
    long expiresAt;

    Holding(boolean write, long fence, long expiresAt) {
      this.write = write;
      this.fence = fence;
      this.expiresAt = expiresAt;
    }
  }

  static final class Queued {
    final String ownerId;
    final Runnable wake;

    Queued(String ownerId, Runnable wake) {
      this.ownerId = ownerId;
      this.wake = wake;
    }
  }

  private LocalSpace(String name) {
    this.name = name;
  }

  static LocalSpace named(String name) {
    return SPACES.computeIfAbsent(name, LocalSpace::new);
  }

  void suspend() {
    suspended = true;
  }

  void resume() {
    suspended = false;
  }

  private void checkAvailable() {
    if (suspended) {
      throw new BackendUnavailableException(
          "local:"
              + name
              + " is suspended (a simulated outage); resume it with LocalLockProvider.resume");
    }
  }

  private Entry entry(String lock) {
    return locks.computeIfAbsent(lock, k -> new Entry(firstFence()));
  }

  /** Where a new entry's counter starts: the wall clock, or above every removed entry's. */
  private long firstFence() {
    return Math.max(fenceBase(), removedFence);
  }

  /**
   * Calls {@code changed} after every change of the lock's holder from now until the returned
   * action runs (under the space's mutex: it must not block).
   */
  Runnable watch(String lock, Runnable changed) {
    watchers.computeIfAbsent(lock, k -> ConcurrentHashMap.newKeySet()).add(changed);
    return () ->
        watchers.computeIfPresent(
            lock,
            (k, set) -> {
              set.remove(changed);
              return set.isEmpty() ? null : set;
            });
  }

  private void changed(String lock) {
    Set<Runnable> w = watchers.get(lock);
    if (w != null) {
      w.forEach(Runnable::run);
    }
  }

  /**
   * Removes a lock's entry once nothing is left of it but its counter; called after every change
   * that frees the lock, so it also tells the lock's watchers.
   */
  private void trim(String lock, Entry e) {
    changed(lock);
    if (e.owner == null && e.queue.isEmpty() && locks.remove(lock, e)) {
      removedFence = Math.max(removedFence, e.fence);
    }
  }

  /**
   * Removes a semaphore's or read-write lock's entry once nothing is left of it but its counter.
   */
  private void trimShared(String key, Shared s) {
    if (s.holders.isEmpty()
        && s.waiters.isEmpty()
        && s.writersWaiting.isEmpty()
        && shared.remove(key, s)) {
      removedFence = Math.max(removedFence, s.fence);
    }
  }

  /** Entries kept, locks and shared: for tests. */
  int entries() {
    mutex.lock();
    try {
      return locks.size() + shared.size();
    } finally {
      mutex.unlock();
    }
  }

  /** The floor of new entries' counters: for tests. */
  long removedFence() {
    mutex.lock();
    try {
      return removedFence;
    } finally {
      mutex.unlock();
    }
  }

  private static boolean expired(Entry e, long now) {
    return e.owner != null && now - e.expiresAt >= 0;
  }

  void enqueue(String lock, Queued q) {
    mutex.lock();
    try {
      entry(lock).queue.addLast(q);
    } finally {
      mutex.unlock();
    }
  }

  /**
   * @return the fence granted, or the negative of the nanoseconds until the holder's lease ends (-1
   *     if the lock is free but an earlier waiter is first in line)
   */
  long tryTake(String lock, Queued me, long leaseNanos) {
    checkAvailable();
    mutex.lock();
    try {
      Entry e = entry(lock);
      long now = System.nanoTime();
      if (expired(e, now)) {
        e.owner = null;
      }
      if (e.owner == null) {
        if (e.queue.peekFirst() == me) {
          e.queue.pollFirst();
          e.owner = me.ownerId;
          e.expiresAt = now + leaseNanos;
          e.fence++;
          changed(lock);
          return e.fence;
        }
        Queued head = e.queue.peekFirst();
        if (head != null) {
          head.wake.run();
        }
        return -1;
      }
      return -Math.max(1, e.expiresAt - now);
    } finally {
      mutex.unlock();
    }
  }

  /**
   * Takes every lock at once if each is free with nobody waiting for it, else none.
   *
   * @return the fences granted, one per name in order, or null if a lock was held or waited for
   */
  long[] takeAll(java.util.List<String> names, java.util.List<String> ownerIds, long leaseNanos) {
    checkAvailable();
    mutex.lock();
    try {
      long now = System.nanoTime();
      for (String lock : names) {
        Entry e = locks.get(lock);
        if (e != null && (!e.queue.isEmpty() || (e.owner != null && !expired(e, now)))) {
          return null;
        }
      }
      long[] fences = new long[names.size()];
      for (int i = 0; i < names.size(); i++) {
        Entry e = entry(names.get(i));
        e.owner = ownerIds.get(i);
        e.expiresAt = now + leaseNanos;
        e.fence++;
        fences[i] = e.fence;
        changed(names.get(i));
      }
      return fences;
    } finally {
      mutex.unlock();
    }
  }

  /** Withdraws a waiter; frees the lock too if the withdrawn attempt holds it. */
  void withdraw(String lock, Queued me) {
    mutex.lock();
    try {
      Entry e = entry(lock);
      boolean wasHead = e.queue.peekFirst() == me;
      for (Iterator<Queued> it = e.queue.iterator(); it.hasNext(); ) {
        if (it.next() == me) {
          it.remove();
        }
      }
      if (me.ownerId.equals(e.owner)) {
        e.owner = null;
        wasHead = true;
      }
      if (wasHead) {
        wakeHead(e);
      }
      trim(lock, e);
    } finally {
      mutex.unlock();
    }
  }

  /**
   * @return null if renewed, else why not
   */
  String renew(String lock, String ownerId, long leaseNanos) {
    checkAvailable();
    mutex.lock();
    try {
      Entry e = locks.get(lock);
      long now = System.nanoTime();
      if (e == null || !ownerId.equals(e.owner)) {
        return e == null || e.owner == null
            ? "the lock is free"
            : "the lock is held by another owner";
      }
      if (expired(e, now)) {
        return "the lease had already expired";
      }
      e.expiresAt = now + leaseNanos;
      return null;
    } finally {
      mutex.unlock();
    }
  }

  boolean release(String lock, String ownerId) {
    checkAvailable();
    mutex.lock();
    try {
      Entry e = locks.get(lock);
      if (e == null || !ownerId.equals(e.owner)) {
        return false;
      }
      boolean inTime = !expired(e, System.nanoTime());
      e.owner = null;
      wakeHead(e);
      trim(lock, e);
      return inTime;
    } finally {
      mutex.unlock();
    }
  }

  /** Gives the lock up but keeps it taken, by nobody's lease, until {@code keepNanos} from now. */
  boolean releaseAfter(String lock, String ownerId, long keepNanos) {
    checkAvailable();
    mutex.lock();
    try {
      Entry e = entry(lock);
      long now = System.nanoTime();
      if (!ownerId.equals(e.owner) || expired(e, now)) {
        return false;
      }
      e.owner =
          "held after release by " + ownerId; // no lease has this owner id: only time frees it
      e.expiresAt = now + keepNanos;
      changed(lock);
      return true;
    } finally {
      mutex.unlock();
    }
  }

  /**
   * @return whether the lock was held (by a lease, or after release); it is free now, its fence
   *     kept
   */
  boolean breakLock(String lock) {
    checkAvailable();
    mutex.lock();
    try {
      Entry e = locks.get(lock);
      if (e == null || e.owner == null || expired(e, System.nanoTime())) {
        return false;
      }
      e.owner = null;
      wakeHead(e);
      trim(lock, e);
      return true;
    } finally {
      mutex.unlock();
    }
  }

  /**
   * @return up to {@code limit} names of held locks beginning with {@code prefix}, in order, after
   *     {@code after} (null: from the first); one more name than asked for tells there are more
   */
  java.util.List<String> heldNames(String prefix, String after, int limit) {
    checkAvailable();
    mutex.lock();
    try {
      long now = System.nanoTime();
      java.util.TreeSet<String> names = new java.util.TreeSet<>();
      for (Map.Entry<String, Entry> e : locks.entrySet()) {
        Entry x = e.getValue();
        if (x.owner != null && !expired(x, now)) {
          gather(names, e.getKey(), prefix, after, limit);
        }
      }
      return new java.util.ArrayList<>(names);
    } finally {
      mutex.unlock();
    }
  }

  /**
   * @param kind "sem" or "rw"
   * @return the names of the semaphores or read-write locks held under {@code prefix} after {@code
   *     after}, in order, {@code limit + 1} at most (one more tells there is a next page)
   */
  java.util.List<String> heldSharedNames(String kind, String prefix, String after, int limit) {
    checkAvailable();
    mutex.lock();
    try {
      long now = System.nanoTime();
      String start = kind + "\0";
      java.util.TreeSet<String> names = new java.util.TreeSet<>();
      for (Map.Entry<String, Shared> e : shared.entrySet()) {
        if (!e.getKey().startsWith(start)) {
          continue;
        }
        if (e.getValue().holders.values().stream().anyMatch(h -> now - h.expiresAt < 0)) {
          gather(names, e.getKey().substring(start.length()), prefix, after, limit);
        }
      }
      return new java.util.ArrayList<>(names);
    } finally {
      mutex.unlock();
    }
  }

  /**
   * Adds a held resource's name to a listing's page being gathered, if it is under {@code prefix}
   * and after {@code after}, keeping the first {@code limit + 1} names in order.
   */
  private static void gather(
      java.util.TreeSet<String> names, String name, String prefix, String after, int limit) {
    if (name.startsWith(prefix) && (after == null || name.compareTo(after) > 0)) {
      names.add(name);
      if (names.size() > limit + 1) {
        names.pollLast();
      }
    }
  }

  /**
   * @return the live holders of a semaphore or read-write lock, or null if none
   */
  dev.locksmith.HeldLock holders(String key, String name, boolean semaphore) {
    checkAvailable();
    mutex.lock();
    try {
      Shared s = shared.get(key);
      if (s == null) {
        return null;
      }
      long now = System.nanoTime();
      java.util.List<LockState> states = new java.util.ArrayList<>();
      boolean write = false;
      for (Map.Entry<String, Holding> h : s.holders.entrySet()) {
        if (now - h.getValue().expiresAt < 0) {
          write |= h.getValue().write;
          states.add(
              LockState.held()
                  .withFencingToken(h.getValue().fence)
                  .withRemaining(java.time.Duration.ofNanos(h.getValue().expiresAt - now))
                  .withHolder(h.getKey())
                  .withWaiting(s.waiters.size()));
        }
      }
      if (states.isEmpty()) {
        return null;
      }
      dev.locksmith.HeldLock.Kind kind =
          semaphore
              ? dev.locksmith.HeldLock.Kind.SEMAPHORE
              : write ? dev.locksmith.HeldLock.Kind.WRITE : dev.locksmith.HeldLock.Kind.READ;
      return dev.locksmith.HeldLock.of(name, kind, states);
    } finally {
      mutex.unlock();
    }
  }

  void revoke(String lock) {
    mutex.lock();
    try {
      Entry e = entry(lock);
      e.owner = null;
      wakeHead(e);
      trim(lock, e);
    } finally {
      mutex.unlock();
    }
  }

  /**
   * @return the lock's state as a server would report it
   */
  LockState state(String lock) {
    checkAvailable();
    mutex.lock();
    try {
      Entry e = locks.get(lock);
      long now = System.nanoTime();
      if (e == null || e.owner == null || expired(e, now)) {
        return LockState.free();
      }
      return LockState.held()
          .withFencingToken(e.fence)
          .withRemaining(java.time.Duration.ofNanos(e.expiresAt - now))
          .withHolder(e.owner)
          .withWaiting(e.queue.size());
    } finally {
      mutex.unlock();
    }
  }

  /**
   * @return the holder's owner id, or null if the lock is free
   */
  String holder(String lock) {
    mutex.lock();
    try {
      Entry e = locks.get(lock);
      return e == null || e.owner == null || expired(e, System.nanoTime()) ? null : e.owner;
    } finally {
      mutex.unlock();
    }
  }

  private static void wakeHead(Entry e) {
    Queued head = e.queue.peekFirst();
    if (head != null) {
      head.wake.run();
    }
  }

  // ---------------------------------------------------------------- semaphores and read-write
  // locks

  static String sharedKey(String name, Claim claim) {
    return (claim.kind() == Claim.Kind.PERMIT ? "sem\0" : "rw\0") + name;
  }

  private Shared shared(String key) {
    return shared.computeIfAbsent(key, k -> new Shared(firstFence()));
  }

  /** Drops leases whose time is up; a semaphore with none left forgets its count. */
  private static void purge(Shared s, long now) {
    s.holders.values().removeIf(h -> now - h.expiresAt >= 0);
    s.writersWaiting.values().removeIf(until -> now - until >= 0);
    if (s.holders.isEmpty()) {
      s.permits = 0;
    }
  }

  void enqueueShared(String key, Queued q) {
    mutex.lock();
    try {
      shared(key).waiters.add(q);
    } finally {
      mutex.unlock();
    }
  }

  /**
   * @param markNanos how long a waiting writer's mark holds readers back after this poll
   * @return the fence granted, or the negative of the nanoseconds until a lease in the way ends
   * @throws IllegalStateException if a semaphore is asked for with another count than its live
   *     leases'
   */
  long tryTakeShared(
      String key, String name, Claim claim, Queued me, long leaseNanos, long markNanos) {
    checkAvailable();
    mutex.lock();
    try {
      Shared s = shared(key);
      long now = System.nanoTime();
      purge(s, now);
      boolean free;
      switch (claim.kind()) {
        case PERMIT:
          if (!s.holders.isEmpty() && s.permits != claim.permits()) {
            throw Claim.permitsInUse(name, claim.permits(), s.permits);
          }
          free = s.holders.size() < claim.permits();
          break;
        case WRITE:
          free = s.holders.isEmpty();
          if (!free) {
            s.writersWaiting.put(me, now + markNanos);
          }
          break;
        default:
          free = s.writersWaiting.isEmpty() && s.holders.values().stream().noneMatch(h -> h.write);
      }
      if (!free) {
        long next = Long.MAX_VALUE;
        for (Holding h : s.holders.values()) {
          next = Math.min(next, h.expiresAt - now);
        }
        if (claim.kind() == Claim.Kind.READ) {
          for (long until : s.writersWaiting.values()) {
            next =
                Math.min(
                    next, until - now); // a vanished writer's mark ends by itself: look again then
          }
        }
        return next == Long.MAX_VALUE
            ? -50_000_000L
            : -Math.max(1, next); // readers held back by a writer: recheck
      }
      s.waiters.remove(me);
      s.writersWaiting.remove(me);
      s.permits = claim.kind() == Claim.Kind.PERMIT ? claim.permits() : 0;
      long fence = ++s.fence;
      s.holders.put(
          me.ownerId, new Holding(claim.kind() == Claim.Kind.WRITE, fence, now + leaseNanos));
      return fence;
    } finally {
      mutex.unlock();
    }
  }

  /** Withdraws a waiter; gives back a grant the withdrawn attempt may hold; wakes the rest. */
  void withdrawShared(String key, Queued me) {
    mutex.lock();
    try {
      Shared s = shared(key);
      boolean wasWriter = s.writersWaiting.remove(me) != null;
      s.waiters.remove(me);
      boolean held = s.holders.remove(me.ownerId) != null;
      if (wasWriter || held) {
        s.waiters.forEach(q -> q.wake.run()); // readers held back by that writer may go now
      }
      purge(s, System.nanoTime());
      trimShared(key, s);
    } finally {
      mutex.unlock();
    }
  }

  /**
   * @return null if renewed, else why not
   */
  String renewShared(String key, String ownerId, long leaseNanos) {
    checkAvailable();
    mutex.lock();
    try {
      Shared s = this.shared.get(key);
      long now = System.nanoTime();
      Holding h = s == null ? null : s.holders.get(ownerId);
      if (h == null || now - h.expiresAt >= 0) {
        return "the lease is no longer among the live leases";
      }
      h.expiresAt = now + leaseNanos;
      return null;
    } finally {
      mutex.unlock();
    }
  }

  boolean releaseShared(String key, String ownerId) {
    checkAvailable();
    mutex.lock();
    try {
      Shared s = this.shared.get(key);
      Holding h = s == null ? null : s.holders.remove(ownerId);
      if (h == null) {
        return false;
      }
      s.waiters.forEach(q -> q.wake.run());
      long now = System.nanoTime();
      purge(s, now);
      trimShared(key, s);
      return now - h.expiresAt < 0;
    } finally {
      mutex.unlock();
    }
  }

  /** Forgets every lease of a semaphore or read-write lock, as a server that lost them would. */
  void revokeShared(String key) {
    mutex.lock();
    try {
      Shared s = shared(key);
      s.holders.clear();
      s.permits = 0;
      s.waiters.forEach(q -> q.wake.run());
      trimShared(key, s);
    } finally {
      mutex.unlock();
    }
  }
}
