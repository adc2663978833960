package dev.locksmith.tck;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Guarantees.Promise;
import dev.locksmith.LockState;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.text.Normalizer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An in-memory lock server and a backend for it, written against the public SPI only, as a third
 * party would write one. Without a defect it is a correct, leased, fenced, FIFO, notified backend,
 * with semaphores and read-write locks (writer preference), that must pass the whole kit ({@link
 * MemoryLockCompatibilityTest}); each {@link Defect} plants one bug of the kind real lock code has,
 * which {@link KitCatchesBrokenBackendsTest} requires the kit to catch by the rule meant for it.
 */
final class MemoryBackends {
  /** Runs the deletes that {@link Defect#RELEASE_LATE} queues. */
  private static final ScheduledExecutorService LATER =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "memory-backend-late-release");
            t.setDaemon(true);
            return t;
          });

  private MemoryBackends() {}

  /** One bug each; {@link #NONE} is the correct backend. */
  enum Defect {
    NONE,
    // ownership
    /** Release frees the lock whoever holds it. */
    NO_OWNER_CHECK,
    /** Release of a lock nobody holds any more answers true. */
    RELEASE_TRUE_WHEN_FREE,
    /**
     * Release answers true at once and frees the lock half a second later (a delete queued behind
     * other writes).
     */
    RELEASE_LATE,
    /** Release compares the owner's client, not the lease. */
    OWNER_PER_CLIENT,
    /** Release reads the owner, then deletes in a second round trip. */
    READ_THEN_DELETE,
    // mutual exclusion
    /** Every acquire is granted, held or not. */
    TWO_HOLDERS,
    /** Two holders at once, and every 40th poll fails: rule 1.1 must still report the overlap. */
    TWO_HOLDERS_FLAKY,
    /** Acquire checks that the lock is free, then takes it in a second round trip. */
    CHECK_THEN_SET,
    /**
     * The 300th release of a name that finds a waiter queued leaves the name held by no lease and
     * never expiring (a row written with no expiry): every later acquisition waits forever.
     */
    WEDGES_UNDER_CONTENTION,
    // fencing
    /** Every third grant gets token 1. */
    TOKENS_GO_BACK,
    // expiry
    /** The server never expires a lease. */
    NEVER_EXPIRES,
    /** The server keeps leases in whole seconds, rounded down. */
    TRUNCATES_LEASE,
    /** The server's clock keeps every lease 2 s too long. */
    EXPIRES_LATE,
    // renewal
    /** Renew extends the lock whoever holds it. */
    RENEW_NO_OWNER_CHECK,
    /** Renew extends by the lease in the wrong unit (a thousand times too long). */
    RENEW_UNITS,
    /** Renew of a lock another owner holds answers "retry" instead of "lost". */
    RENEW_RETRY_WHEN_TAKEN,
    /**
     * Renew of a lock nobody holds any more takes it again for the renewer (no existence check).
     */
    RENEW_REVIVES_FORGOTTEN,
    /** Renew answers a batch's outcomes shifted by one lease. */
    RENEW_BATCH_MISATTRIBUTED,
    // wake-up
    /** Releases never wake waiters, although NOTIFIED_WAKEUP is declared. */
    NEVER_WAKES,
    /** Waiters poll every 50 ms instead of being woken. */
    POLLS_50MS,
    /** Waiters poll every 20 ms instead of being woken. */
    POLLS_20MS,
    /** A waiter subscribes to releases only after it found the lock busy, a round trip later. */
    LOST_WAKEUP,
    // holder watches (rule 24.4)
    /** watchHolder returns a watch that is never called. */
    WATCH_NEVER_CALLED,
    /** watchHolder says it sees grants, but is called after releases only. */
    WATCH_MISSES_GRANTS,
    /** A closed watch is still called. */
    WATCH_CALLED_AFTER_CLOSE,
    // FIFO
    /** The queue orders tickets as strings: "10" before "9". */
    FIFO_STRING_ORDER,
    /** A waiter that polls again goes to the back of the queue. */
    REPOLL_LOSES_PLACE,
    /** A free lock goes to whoever asks first, ahead of queued waiters. */
    BARGING,
    /** A waiter that gives up stays in the queue. */
    GHOST_WAITER,
    // state reads
    /** State reads report the lock held after a release (a cached read). */
    STALE_STATE,
    /** State reads report the whole lease as remaining, never less. */
    REMAINING_FROZEN,
    /** State reads ignore expiry: a lease that ran out reads held. */
    EXPIRED_READS_HELD,
    /** State reads report the holder's client, not its owner id. */
    WRONG_HOLDER,
    /** A state read reports the token of the grant before the current one (a lagging replica). */
    STATE_TOKEN_LAGS,
    /**
     * A state read reports a lock free once its holder has not renewed it for half its lease (a
     * liveness check taken for the lease), while the server still holds it.
     */
    STATE_FREE_WHEN_UNRENEWED,
    /** State reads count the holder among the waiters. */
    WAITING_COUNTS_HOLDER,
    // break-glass
    /** Break-glass frees the lock and resets its fence counter, so tokens start again. */
    BREAK_RESETS_FENCE,
    /** Break-glass frees the lock without waking its waiters: they find it at their next poll. */
    BREAK_WAKES_NOBODY,
    // listing
    /** A listing's last page is never reached: a full page ends the listing. */
    LIST_STOPS_AT_FIRST_PAGE,
    /** A listing renews every lease it lists. */
    LIST_RENEWS,
    /** A listing of a semaphore or of readers shows its first holder only. */
    LIST_FIRST_HOLDER_ONLY,
    /** A listing shows the readers of a read-write lock as its writer. */
    LIST_READERS_AS_WRITER,
    // names
    /** Names compared case-insensitively (a case-insensitive collation). */
    NAME_CASE,
    /** Trailing spaces dropped (a PAD SPACE collation). */
    NAME_TRIM,
    /** Names normalised to NFC. */
    NAME_NFC,
    /** Characters beyond Latin-1 stored as '?' (a latin1 column). */
    NAME_LATIN1,
    /** Names cut to 191 characters (VARCHAR(191)). */
    NAME_191,
    /** Names cut to 200 characters. */
    NAME_200,
    // lease control
    /** Extend moves the expiry of whoever holds the lock. */
    EXTEND_NO_OWNER_CHECK,
    /** Extend only ever lengthens a lease: a shorter one keeps the old expiry. */
    EXTEND_ONLY_LONGER,
    /** Extend answers true without telling the server. */
    EXTEND_CLIENT_ONLY,
    /** A hold after release is a plain release. */
    HOLD_IS_RELEASE,
    /** The hold after release is kept by the client, and dropped when it closes or vanishes. */
    HOLD_IN_CLIENT,
    /** A hold after release is set whoever holds the lock. */
    HOLD_NO_OWNER_CHECK,
    /**
     * A session backend whose extend answers true but leaves the lock to the session: a vanished
     * holder keeps it.
     */
    SESSION_EXTEND_IGNORED,
    /**
     * Extend checks the owner but not the expiry: a lease that ran out, with nobody holding the
     * lock since, comes back to life.
     */
    EXTEND_REVIVES_EXPIRED,
    /**
     * Extend writes the lock's record anew (owner and expiry), dropping its fence counter: the next
     * holder's token starts again.
     */
    EXTEND_RESETS_FENCE,
    /** A hold after release counts keep from the grant, not from the call. */
    HOLD_COUNTS_FROM_GRANT,
    // sessions
    /**
     * Held by a session that never reports an unreachable server: a lease taken before a cut is
     * never lost.
     */
    SESSION_UNBOUNDED,
    /** Not a defect: held by a session whose grants carry a bound that each heartbeat moves. */
    SESSION_BOUNDED,
    // semaphores
    /** A semaphore grants one permit more than its count (an off-by-one: {@code <=}). */
    SEM_OVER_GRANT,
    /** Releasing a permit answers true but leaves it taken until its lease ends (a leak). */
    SEM_RELEASE_LEAKS,
    /** The server never expires a permit. */
    SEM_NEVER_EXPIRES,
    /** A grant asked with another count than the held one is accepted, with the asked count. */
    SEM_COUNT_MISMATCH_ACCEPTED,
    /** A permit's token is its slot among the holders (1..N), not a counter. */
    SEM_TOKENS_GO_BACK,
    /** A waiter's place in the semaphore's line stays when it gives up. */
    SEM_GHOST_WAITER,
    /** A permit's release wakes no waiter, although NOTIFIED_WAKEUP is declared. */
    SEM_NEVER_WAKES,
    /** A permit is granted by a count check, then taken in a second round trip. */
    SEM_CHECK_THEN_TAKE,
    /**
     * The count stays with the semaphore after its last permit is released: it can never change.
     */
    SEM_COUNT_STICKS,
    /**
     * A semaphore's fence counter goes with its last permit (released or expired): the next
     * permit's token starts again.
     */
    SEM_IDLE_RESETS_FENCE,
    /**
     * One expiry for the whole semaphore or read-write lock (a TTL on its key): any renewal keeps
     * every lease alive.
     */
    SHARED_ONE_TTL,
    /** Semaphores and read-write locks of one name share one key. */
    SHARED_ONE_KEY,
    // semaphores and read-write locks
    /**
     * A release whose lease is not among the holders frees another holder of the same kind (a
     * count, not an owner check).
     */
    SHARED_RELEASE_COUNTED,
    // read-write locks
    /** A reader is granted whatever writers hold (only writers check for readers). */
    RW_READ_DURING_WRITE,
    /** Readers ignore waiting writers (no writer preference). */
    RW_NO_WRITER_PREFERENCE,
    /** A waiting writer's mark stays until it is granted or withdraws: it never ends by itself. */
    RW_MARK_NEVER_EXPIRES,
    /** A writer's withdrawal ends its mark but wakes none of the readers it held back. */
    RW_WITHDRAW_NO_WAKE,
    /** A writer is granted whatever readers hold (only readers check for writers). */
    RW_WRITE_DURING_READ,
    /** Read and write leases take tokens from two counters. */
    RW_SEPARATE_COUNTERS,
    /**
     * A granted writer's mark stays until it expires: readers wait for it after the writer is gone.
     */
    RW_MARK_STAYS_AFTER_GRANT,
    /**
     * A release of either side of a read-write lock wakes no waiter, although NOTIFIED_WAKEUP is
     * declared.
     */
    RW_RELEASE_NO_WAKE,
    /**
     * A read lease's renewal answers "renewed" but moves nothing: a renewed reader's lease runs out
     * after one lease.
     */
    RW_RENEW_MOVES_NOTHING,
    /**
     * Not a defect: readers holding the lock together share one token (a read grant takes the
     * counter's value, a write grant bumps it).
     */
    RW_READERS_SHARE_TOKEN,
    // wake-up per primitive
    /**
     * Semaphore waiters poll every 20 ms instead of being woken (locks are woken), although
     * NOTIFIED_WAKEUP is declared.
     */
    SEM_POLLS_20MS,
    /**
     * Read-write waiters poll every 20 ms instead of being woken (locks are woken), although
     * NOTIFIED_WAKEUP is declared.
     */
    RW_POLLS_20MS,
    // state reads at the expiry boundary
    /**
     * The server counts a lease held until 30 ms past its expiry, but state reads report it held
     * with 0 ms left.
     */
    STATE_HIDES_MARGIN,
    /**
     * The server counts a lease held until 30 ms past its expiry, but state reads say free at the
     * expiry itself.
     */
    STATE_FREE_EARLY,
    // lock sets
    /**
     * A set is taken one name at a time, each name given back when a later one is busy, although
     * ATOMIC_LOCK_SETS is declared.
     */
    SETS_ONE_BY_ONE
  }

  static final Guarantees GUARANTEES =
      InMemoryGuarantees.of(
          "lease expiry",
          Promise.UNAVAILABLE,
          "a suspended server refuses every call",
          Feature.FENCING,
          Feature.FIFO_FAIRNESS,
          Feature.RENEWAL,
          Feature.LOSS_DETECTION,
          Feature.NOTIFIED_WAKEUP,
          Feature.REENTRANCY,
          Feature.STATE_READS,
          Feature.EXTEND,
          Feature.HOLD_AFTER_RELEASE,
          Feature.BREAK_GLASS,
          Feature.LISTING,
          Feature.SEMAPHORES,
          Feature.READ_WRITE_LOCKS,
          Feature.ATOMIC_LOCK_SETS);

  private static final Map<Defect, Server> SERVERS = new ConcurrentHashMap<>();

  /**
   * @return the one server every client of this defect shares, as clients of one server share its
   *     locks
   */
  static Server server(Defect defect) {
    return SERVERS.computeIfAbsent(defect, Server::new);
  }

  /** Sleeps about this long without reacting to interrupts: a simulated round trip. */
  private static void roundTrip(long micros) {
    LockSupport.parkNanos(micros * 1000);
  }

  /** A waiter's place in a lock's queue. */
  static final class Ticket {
    final long seq;
    final String ownerId;
    volatile Runnable wake;

    /** Set when a defect re-queued this waiter under a new ticket. */
    volatile Ticket replacedBy;

    /**
     * For a semaphore's line: when this place lapses unless its waiter polls again (a vanished
     * waiter's place ends).
     */
    volatile long until;

    Ticket(long seq, String ownerId) {
      this.seq = seq;
      this.ownerId = ownerId;
    }

    Ticket current() {
      Ticket t = this;
      while (t.replacedBy != null) {
        t = t.replacedBy;
      }
      return t;
    }

    void wake() {
      Runnable w = wake;
      if (w != null) {
        w.run();
      }
    }
  }

  /** One lock's record on the server. */
  private static final class Entry {
    String owner;
    long expiresAt;
    long leaseNanos;
    long grantedAt;
    long fence;
    long tickets;
    int contendedReleases;
    final List<Ticket> queue = new ArrayList<>();
  }

  /**
   * One semaphore or read-write lock on the server: its live leases (owner id to {write ? 1 : 0,
   * expiry}), the count its leases hold, its fence counter, its line of waiters (a semaphore grants
   * in order of arrival) and its waiting writers, each with the time its mark ends unless the
   * writer polls again.
   */
  private static final class Shared {
    int permits;
    long fence;
    long writeFence;
    long tickets;
    final Map<String, long[]> holders = new LinkedHashMap<>();
    final List<Ticket> line = new ArrayList<>();
    final Map<Ticket, Long> writers = new LinkedHashMap<>();
  }

  /** The lock table. */
  static final class Server {
    final Defect defect;
    private final ReentrantLock mutex = new ReentrantLock();
    private final Map<String, Entry> locks = new HashMap<>();
    private final Map<String, Shared> shared = new HashMap<>();
    private final Map<String, LockState> lastHeld = new ConcurrentHashMap<>();
    private final AtomicLong grants = new AtomicLong();
    private volatile boolean suspended;

    Server(Defect defect) {
      this.defect = defect;
    }

    /** Election observers' watches, by key: told by the clients' backends after each change. */
    private final Map<String, Set<Runnable>> watchers = new ConcurrentHashMap<>();

    Runnable watch(String key, Runnable changed) {
      watchers.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet()).add(changed);
      return () -> watchers.getOrDefault(key, Set.of()).remove(changed);
    }

    /** A grant ({@code grant}) or a release of the lock stored under {@code key}. */
    void changed(String key, boolean grant) {
      if (grant && defect == Defect.WATCH_MISSES_GRANTS) {
        return;
      }
      watchers.getOrDefault(key, Set.of()).forEach(Runnable::run);
    }

    void suspend() {
      suspended = true;
    }

    /** A heartbeat: answers only while the server is reachable. */
    void ping() {
      available();
    }

    void resume() {
      suspended = false;
    }

    private void available() {
      if (suspended) {
        throw new BackendUnavailableException("memory server for " + defect + " is suspended");
      }
    }

    /** The key a name is stored under: exactly the name, unless a names defect says otherwise. */
    String key(String name) {
      switch (defect) {
        case NAME_CASE:
          return name.toLowerCase(Locale.ROOT);
        case NAME_TRIM:
          return name.stripTrailing();
        case NAME_NFC:
          return Normalizer.normalize(name, Normalizer.Form.NFC);
        case NAME_LATIN1:
          {
            StringBuilder b = new StringBuilder();
            name.codePoints().forEach(c -> b.append(c > 0xFF ? '?' : (char) c));
            return b.toString();
          }
        case NAME_191:
          return name.length() > 191 ? name.substring(0, 191) : name;
        case NAME_200:
          return name.length() > 200 ? name.substring(0, 200) : name;
        default:
          return name;
      }
    }

    private long leaseOnServer(long leaseNanos) {
      switch (defect) {
        case NEVER_EXPIRES:
          return Duration.ofDays(7).toNanos();
        case TRUNCATES_LEASE:
          return Math.max(1, leaseNanos / 1_000_000_000L) * 1_000_000_000L;
        case EXPIRES_LATE:
          return leaseNanos + 2_000_000_000L;
        case SESSION_UNBOUNDED:
        case SESSION_BOUNDED:
        case SESSION_EXTEND_IGNORED:
          return Duration.ofDays(7)
              .toNanos(); // held while the session lives: freed by release or session end
        default:
          return leaseNanos;
      }
    }

    private Comparator<Ticket> order() {
      return defect == Defect.FIFO_STRING_ORDER
          ? Comparator.comparing(t -> Long.toString(t.seq))
          : Comparator.comparingLong(t -> t.seq);
    }

    private Entry entry(String key) {
      return locks.computeIfAbsent(key, k -> new Entry());
    }

    private boolean expired(Entry e, long now) {
      long margin =
          defect == Defect.STATE_HIDES_MARGIN || defect == Defect.STATE_FREE_EARLY
              ? 30_000_000L
              : 0;
      return e.owner != null && now - e.expiresAt >= margin;
    }

    private static Ticket head(Entry e) {
      return e.queue.isEmpty() ? null : e.queue.get(0);
    }

    Ticket enqueue(String key, String ownerId, Runnable wake) {
      mutex.lock();
      try {
        Entry e = entry(key);
        Ticket t = new Ticket(++e.tickets, ownerId);
        if (defect != Defect.LOST_WAKEUP
            && defect != Defect.NEVER_WAKES
            && defect != Defect.POLLS_20MS
            && defect != Defect.POLLS_50MS) {
          t.wake = wake;
        }
        e.queue.add(t);
        e.queue.sort(order());
        return t;
      } finally {
        mutex.unlock();
      }
    }

    /**
     * @return the fence granted, or minus the nanoseconds until a retry is worthwhile
     */
    long tryTake(String key, Ticket me, long leaseNanos) {
      available();
      if (defect == Defect.CHECK_THEN_SET) {
        return checkThenSet(key, me, leaseNanos);
      }
      mutex.lock();
      try {
        Entry e = entry(key);
        long now = System.nanoTime();
        if (expired(e, now)) {
          e.owner = null;
        }
        if (defect == Defect.TWO_HOLDERS || defect == Defect.TWO_HOLDERS_FLAKY) {
          e.queue.remove(me);
          return grant(e, me, now, leaseNanos);
        }
        boolean first = head(e) == me;
        if (e.owner == null && (first || defect == Defect.BARGING)) {
          e.queue.remove(me);
          return grant(e, me, now, leaseNanos);
        }
        if (defect == Defect.REPOLL_LOSES_PLACE) {
          e.queue.remove(me);
          Ticket again = new Ticket(++e.tickets, me.ownerId);
          again.wake = me.wake;
          e.queue.add(again);
          me.replacedBy = again;
        }
        if (e.owner == null) {
          Ticket h = head(e);
          if (h != null) {
            h.wake();
          }
          return -Duration.ofMillis(50).toNanos();
        }
        return -Math.max(1, e.expiresAt - now);
      } finally {
        mutex.unlock();
      }
    }

    private long grant(Entry e, Ticket me, long now, long leaseNanos) {
      e.owner = me.ownerId;
      e.leaseNanos = leaseNanos;
      e.expiresAt = now + leaseOnServer(leaseNanos);
      e.grantedAt = now;
      e.fence++;
      return e.fence;
    }

    private long checkThenSet(String key, Ticket me, long leaseNanos) {
      boolean free;
      mutex.lock();
      try {
        Entry e = entry(key);
        free = e.owner == null || expired(e, System.nanoTime());
      } finally {
        mutex.unlock();
      }
      if (!free) {
        return -Duration.ofMillis(20).toNanos();
      }
      roundTrip(500);
      mutex.lock();
      try {
        Entry e = entry(key);
        e.queue.remove(me);
        return grant(e, me, System.nanoTime(), leaseNanos);
      } finally {
        mutex.unlock();
      }
    }

    /**
     * Every lock of a set at once if each is free with nobody waiting for it, else none (with
     * {@link Defect#SETS_ONE_BY_ONE}: one after another, the taken ones given back when one is
     * busy).
     *
     * @return the fences granted, one per key in order, or null if one was busy
     */
    long[] takeAll(List<String> keys, List<String> ownerIds, long leaseNanos) {
      available();
      if (defect == Defect.SETS_ONE_BY_ONE) {
        return takeOneByOne(keys, ownerIds, leaseNanos);
      }
      mutex.lock();
      try {
        long now = System.nanoTime();
        boolean everyone = defect == Defect.TWO_HOLDERS || defect == Defect.TWO_HOLDERS_FLAKY;
        for (String key : keys) {
          Entry e = locks.get(key);
          if (!everyone
              && e != null
              && (!e.queue.isEmpty() || (e.owner != null && !expired(e, now)))) {
            return null;
          }
        }
        long[] fences = new long[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
          Entry e = entry(keys.get(i));
          fences[i] = grant(e, new Ticket(++e.tickets, ownerIds.get(i)), now, leaseNanos);
        }
        return fences;
      } finally {
        mutex.unlock();
      }
    }

    private long[] takeOneByOne(List<String> keys, List<String> ownerIds, long leaseNanos) {
      long[] fences = new long[keys.size()];
      for (int i = 0; i < keys.size(); i++) {
        if (i > 0) {
          roundTrip(500); // each name its own request
        }
        mutex.lock();
        try {
          Entry e = entry(keys.get(i));
          long now = System.nanoTime();
          if (expired(e, now)) {
            e.owner = null;
          }
          if (e.owner == null && e.queue.isEmpty()) {
            fences[i] = grant(e, new Ticket(++e.tickets, ownerIds.get(i)), now, leaseNanos);
            continue;
          }
        } finally {
          mutex.unlock();
        }
        for (int j = i - 1; j >= 0; j--) {
          release(keys.get(j), ownerIds.get(j));
        }
        return null;
      }
      return fences;
    }

    void withdraw(String key, Ticket me) {
      mutex.lock();
      try {
        Entry e = entry(key);
        Ticket t = me.current();
        boolean wasHead = head(e) == t;
        if (defect != Defect.GHOST_WAITER) {
          e.queue.remove(t);
        }
        if (t.ownerId.equals(e.owner)) {
          e.owner = null;
          wasHead = true;
        }
        if (wasHead && head(e) != null) {
          head(e).wake();
        }
      } finally {
        mutex.unlock();
      }
    }

    private boolean owns(Entry e, String ownerId) {
      if (e.owner == null) {
        return false;
      }
      if (defect == Defect.OWNER_PER_CLIENT) {
        return clientOf(e.owner).equals(clientOf(ownerId));
      }
      return e.owner.equals(ownerId);
    }

    /** The client's id within an owner id (application@host:thread:asked:client:lease). */
    private static String clientOf(String ownerId) {
      String[] parts = ownerId.split(":");
      return parts.length == 5 ? parts[3] : ownerId;
    }

    /**
     * @return null if renewed, else why not; "retry" asks for a retry
     */
    String renew(String key, String ownerId, long leaseNanos) {
      available();
      mutex.lock();
      try {
        Entry e = entry(key);
        long now = System.nanoTime();
        boolean mine = e.owner != null && e.owner.equals(ownerId);
        if (defect == Defect.RENEW_NO_OWNER_CHECK && e.owner != null) {
          mine = true;
        }
        if (defect == Defect.RENEW_REVIVES_FORGOTTEN && e.owner == null) {
          e.owner = ownerId;
          e.expiresAt = now + leaseOnServer(leaseNanos);
          return null;
        }
        if (!mine) {
          if (defect == Defect.RENEW_RETRY_WHEN_TAKEN && e.owner != null) {
            return "retry";
          }
          return e.owner == null ? "the lock is free" : "the lock is held by another owner";
        }
        if (expired(e, now)) {
          return "the lease had already expired";
        }
        e.expiresAt =
            now + (defect == Defect.RENEW_UNITS ? leaseNanos * 1000 : leaseOnServer(leaseNanos));
        return null;
      } finally {
        mutex.unlock();
      }
    }

    /** Moves a held lease's expiry to {@code leaseNanos} from now. */
    boolean extend(String key, String ownerId, long leaseNanos) {
      available();
      mutex.lock();
      try {
        Entry e = entry(key);
        long now = System.nanoTime();
        boolean mine =
            owns(e, ownerId) || (defect == Defect.EXTEND_NO_OWNER_CHECK && e.owner != null);
        if (!mine || (expired(e, now) && defect != Defect.EXTEND_REVIVES_EXPIRED)) {
          return false;
        }
        if (defect != Defect.SESSION_EXTEND_IGNORED) {
          long to = now + leaseNanos;
          e.expiresAt =
              defect == Defect.EXTEND_ONLY_LONGER && e.expiresAt - to > 0 ? e.expiresAt : to;
        }
        if (defect == Defect.EXTEND_RESETS_FENCE) {
          e.fence =
              0; // the record is written anew with owner and expiry; its counter is not carried
          // over
        }
        return true;
      } finally {
        mutex.unlock();
      }
    }

    /** Gives a lease up but keeps the lock taken, by no lease, for {@code keepNanos}. */
    boolean releaseAfter(String key, String ownerId, long keepNanos) {
      available();
      mutex.lock();
      try {
        Entry e = entry(key);
        long now = System.nanoTime();
        boolean mine = owns(e, ownerId) && !expired(e, now);
        if (defect == Defect.HOLD_NO_OWNER_CHECK && e.owner != null) {
          mine = true;
        }
        if (!mine) {
          return false;
        }
        e.owner = "hold of " + ownerId;
        e.expiresAt = (defect == Defect.HOLD_COUNTS_FROM_GRANT ? e.grantedAt : now) + keepNanos;
        return true;
      } finally {
        mutex.unlock();
      }
    }

    /** Ends a hold after release that is still in place (only for the HOLD_IN_CLIENT defect). */
    void dropHold(String key, String ownerId) {
      mutex.lock();
      try {
        Entry e = entry(key);
        if (("hold of " + ownerId).equals(e.owner)) {
          e.owner = null;
          if (head(e) != null) {
            head(e).wake();
          }
        }
      } finally {
        mutex.unlock();
      }
    }

    boolean release(String key, String ownerId) {
      available();
      if (defect == Defect.READ_THEN_DELETE) {
        boolean mine;
        mutex.lock();
        try {
          mine = owns(entry(key), ownerId) && !expired(entry(key), System.nanoTime());
        } finally {
          mutex.unlock();
        }
        if (!mine) {
          return false;
        }
        roundTrip(1000);
        mutex.lock();
        try {
          Entry e = entry(key);
          e.owner = null;
          if (head(e) != null) {
            head(e).wake();
          }
          return true;
        } finally {
          mutex.unlock();
        }
      }
      mutex.lock();
      try {
        Entry e = entry(key);
        if (defect == Defect.NO_OWNER_CHECK
            || (defect == Defect.RELEASE_TRUE_WHEN_FREE && e.owner == null)) {
          e.owner = null;
          if (head(e) != null) {
            head(e).wake();
          }
          return true;
        }
        if (!owns(e, ownerId)) {
          return false;
        }
        boolean inTime = !expired(e, System.nanoTime());
        if (defect == Defect.WEDGES_UNDER_CONTENTION
            && head(e) != null
            && ++e.contendedReleases == 300) {
          e.owner = "wedged";
          e.expiresAt = System.nanoTime() + (Long.MAX_VALUE >> 2);
          return inTime;
        }
        if (defect == Defect.RELEASE_LATE) {
          LATER.schedule(() -> releaseLater(e, ownerId), 500, TimeUnit.MILLISECONDS);
          return inTime;
        }
        e.owner = null;
        if (head(e) != null) {
          head(e).wake();
        }
        return inTime;
      } finally {
        mutex.unlock();
      }
    }

    /** The delete a {@link Defect#RELEASE_LATE} release queued. */
    private void releaseLater(Entry e, String ownerId) {
      mutex.lock();
      try {
        if (ownerId.equals(e.owner)) {
          e.owner = null;
          if (head(e) != null) {
            head(e).wake();
          }
        }
      } finally {
        mutex.unlock();
      }
    }

    /** Listing: held names in key order after the cursor, one more than asked if there are more. */
    List<String> heldNames(String prefix, String after, int limit) {
      available();
      mutex.lock();
      try {
        long now = System.nanoTime();
        java.util.TreeSet<String> names = new java.util.TreeSet<>();
        for (Map.Entry<String, Entry> x : locks.entrySet()) {
          Entry e = x.getValue();
          String name = x.getKey();
          if (e.owner != null
              && !expired(e, now)
              && name.startsWith(prefix)
              && (after == null || name.compareTo(after) > 0)) {
            if (defect == Defect.LIST_RENEWS) {
              e.expiresAt = now + e.leaseNanos;
            }
            keepFirst(names, name, limit);
          }
        }
        return new ArrayList<>(names);
      } finally {
        mutex.unlock();
      }
    }

    /** Listing of semaphores ("sem") or read-write locks ("rw"), as {@link #heldNames}. */
    List<String> heldSharedNames(String kind, String prefix, String after, int limit) {
      available();
      mutex.lock();
      try {
        long now = System.nanoTime();
        String start = kind + "\0";
        java.util.TreeSet<String> names = new java.util.TreeSet<>();
        for (Map.Entry<String, Shared> x : shared.entrySet()) {
          String name = x.getKey().startsWith(start) ? x.getKey().substring(start.length()) : null;
          if (name != null
              && x.getValue().holders.values().stream().anyMatch(h -> now - h[1] < 0)
              && name.startsWith(prefix)
              && (after == null || name.compareTo(after) > 0)) {
            keepFirst(names, name, limit);
          }
        }
        return new ArrayList<>(names);
      } finally {
        mutex.unlock();
      }
    }

    /** Adds a name to a listing's page, keeping the first {@code limit + 1} in order. */
    private static void keepFirst(java.util.TreeSet<String> names, String name, int limit) {
      names.add(name);
      if (names.size() > limit + 1) {
        names.pollLast();
      }
    }

    /** The live holders of a semaphore or read-write lock, or null if none. */
    dev.locksmith.HeldLock holders(String key, String name, boolean semaphore) {
      available();
      mutex.lock();
      try {
        Shared s = shared.get(key);
        long now = System.nanoTime();
        List<LockState> states = new ArrayList<>();
        boolean write = false;
        if (s != null) {
          for (Map.Entry<String, long[]> h : s.holders.entrySet()) {
            if (now - h.getValue()[1] < 0) {
              write |= h.getValue()[0] == 1;
              states.add(
                  LockState.held()
                      .withFencingToken(h.getValue()[2])
                      .withRemaining(Duration.ofNanos(h.getValue()[1] - now))
                      .withHolder(h.getKey()));
            }
          }
        }
        if (states.isEmpty()) {
          return null;
        }
        if (defect == Defect.LIST_FIRST_HOLDER_ONLY) {
          states = states.subList(0, 1);
        }
        dev.locksmith.HeldLock.Kind kind =
            semaphore
                ? dev.locksmith.HeldLock.Kind.SEMAPHORE
                : write || defect == Defect.LIST_READERS_AS_WRITER
                    ? dev.locksmith.HeldLock.Kind.WRITE
                    : dev.locksmith.HeldLock.Kind.READ;
        if (kind == dev.locksmith.HeldLock.Kind.WRITE) {
          states = states.subList(0, 1);
        }
        return dev.locksmith.HeldLock.of(name, kind, states);
      } finally {
        mutex.unlock();
      }
    }

    /** Break-glass: the server forgets the lock's holder, keeping its fence. */
    boolean breakLock(String name) {
      available();
      mutex.lock();
      try {
        Entry e = entry(key(name));
        if (e.owner == null || expired(e, System.nanoTime())) {
          return false;
        }
        e.owner = null;
        if (defect == Defect.BREAK_RESETS_FENCE) {
          e.fence = 0;
        }
        if (head(e) != null && defect != Defect.BREAK_WAKES_NOBODY) {
          head(e).wake();
        }
        return true;
      } finally {
        mutex.unlock();
      }
    }

    /** The kit's revoke hook: the server forgets the lock. */
    void revoke(String name) {
      mutex.lock();
      try {
        Entry e = entry(key(name));
        e.owner = null;
        if (head(e) != null) {
          head(e).wake();
        }
      } finally {
        mutex.unlock();
      }
    }

    /** Frees every lock of one session, as a server does when a session times out. */
    void endSession(String clientId) {
      mutex.lock();
      try {
        for (Entry e : locks.values()) {
          if (e.owner != null && clientOf(e.owner).equals(clientId)) {
            e.owner = null;
            if (head(e) != null) {
              head(e).wake();
            }
          }
        }
      } finally {
        mutex.unlock();
      }
    }

    // ------------------------------------------------------------ semaphores and read-write locks

    /**
     * @return the key a semaphore or read-write lock is kept under: apart from a lock of the same
     *     name
     */
    String sharedKey(String key, Claim claim) {
      if (defect == Defect.SHARED_ONE_KEY) {
        return "shared\0" + key;
      }
      return (claim.kind() == Claim.Kind.PERMIT ? "sem\0" : "rw\0") + key;
    }

    private Shared shared(String key) {
      return shared.computeIfAbsent(key, k -> new Shared());
    }

    private void purge(Shared s, long now) {
      s.holders.values().removeIf(h -> now - h[1] >= 0);
      if (defect != Defect.RW_MARK_NEVER_EXPIRES) {
        s.writers.values().removeIf(until -> now - until >= 0);
      }
      s.line.removeIf(t -> now - t.until >= 0);
      if (s.holders.isEmpty() && defect != Defect.SEM_COUNT_STICKS) {
        if (defect == Defect.SEM_IDLE_RESETS_FENCE && s.permits != 0) {
          s.fence = 0; // the semaphore's record, counter and all, goes with its last permit
        }
        s.permits = 0;
      }
    }

    private void wakeAll(Shared s) {
      s.line.forEach(Ticket::wake);
    }

    Ticket enqueueShared(String key, String ownerId, Runnable wake, long markNanos) {
      mutex.lock();
      try {
        Shared s = shared(key);
        Ticket t = new Ticket(++s.tickets, ownerId);
        boolean rw = key.startsWith("rw");
        if (!(rw ? defect == Defect.RW_POLLS_20MS : defect == Defect.SEM_POLLS_20MS)) {
          t.wake = wake;
        }
        t.until = System.nanoTime() + markNanos;
        s.line.add(t);
        return t;
      } finally {
        mutex.unlock();
      }
    }

    /**
     * @return the fence granted, or minus the nanoseconds until a retry is worthwhile
     * @throws IllegalStateException if a semaphore is asked for with another count than its live
     *     leases'
     */
    long tryTakeShared(
        String key, String name, Claim claim, Ticket me, long leaseNanos, long markNanos) {
      available();
      mutex.lock();
      try {
        Shared s = shared(key);
        long now = System.nanoTime();
        me.until = now + markNanos;
        purge(s, now);
        if (!s.line.contains(me) && claim.kind() == Claim.Kind.PERMIT) {
          s.line.add(
              me); // its place had lapsed (a poll later than its client's recheck interval): back
          // in line
        }
        boolean free;
        switch (claim.kind()) {
          case PERMIT:
            {
              if ((!s.holders.isEmpty() || defect == Defect.SEM_COUNT_STICKS)
                  && s.permits != 0
                  && s.permits != claim.permits()
                  && defect != Defect.SEM_COUNT_MISMATCH_ACCEPTED) {
                throw Claim.permitsInUse(name, claim.permits(), s.permits);
              }
              int ahead = 0;
              for (Ticket t : s.line) {
                if (t == me || defect == Defect.SEM_CHECK_THEN_TAKE) {
                  break; // that defect's semaphore is a bare count, with no line
                }
                ahead++;
              }
              int room = claim.permits() + (defect == Defect.SEM_OVER_GRANT ? 1 : 0);
              free =
                  s.holders.size() + ahead
                      < room; // in order of arrival: a newcomer never passes a waiter
              if (free && defect == Defect.SEM_CHECK_THEN_TAKE) {
                mutex.unlock();
                try {
                  roundTrip(500); // the take goes out only after the check came back
                } finally {
                  mutex.lock();
                }
              }
              break;
            }
          case WRITE:
            free =
                defect == Defect.RW_WRITE_DURING_READ
                    ? s.holders.values().stream().noneMatch(h -> h[0] == 1)
                    : s.holders.isEmpty();
            if (!free) {
              s.writers.put(me, now + markNanos);
            }
            break;
          default:
            {
              boolean writing =
                  defect != Defect.RW_READ_DURING_WRITE
                      && s.holders.values().stream().anyMatch(h -> h[0] == 1);
              boolean writerWaits =
                  defect != Defect.RW_NO_WRITER_PREFERENCE && !s.writers.isEmpty();
              free = !writing && !writerWaits;
            }
        }
        if (!free) {
          long next = Long.MAX_VALUE;
          for (long[] h : s.holders.values()) {
            next = Math.min(next, h[1] - now);
          }
          if (claim.kind() == Claim.Kind.READ) {
            for (long until : s.writers.values()) {
              next = Math.min(next, until - now);
            }
          }
          return next == Long.MAX_VALUE ? -Duration.ofMillis(50).toNanos() : -Math.max(1, next);
        }
        s.line.remove(me);
        if (defect != Defect.RW_MARK_STAYS_AFTER_GRANT) {
          s.writers.remove(me);
        }
        s.permits = claim.kind() == Claim.Kind.PERMIT ? claim.permits() : 0;
        long lease = defect == Defect.SEM_NEVER_EXPIRES ? Duration.ofDays(7).toNanos() : leaseNanos;
        // what is held, until when, and the token granted (for listings)
        long[] held = {claim.kind() == Claim.Kind.WRITE ? 1 : 0, now + lease, 0};
        s.holders.put(me.ownerId, held);
        if (defect == Defect.RW_SEPARATE_COUNTERS && claim.kind() == Claim.Kind.WRITE) {
          return held[2] = ++s.writeFence;
        }
        if (defect == Defect.RW_READERS_SHARE_TOKEN
            && claim.kind() == Claim.Kind.READ
            && s.fence > 0
            && s.holders.values().stream().filter(h -> h[0] == 0).count() > 1) {
          return held[2] = s.fence; // another reader holds the lock: this one shares its token
        }
        s.fence++;
        return held[2] =
            defect == Defect.SEM_TOKENS_GO_BACK && claim.kind() == Claim.Kind.PERMIT
                ? s.holders.size()
                : s.fence;
      } finally {
        mutex.unlock();
      }
    }

    /** Withdraws a waiter; gives back a grant the withdrawn attempt may hold; wakes the rest. */
    void withdrawShared(String key, Ticket me) {
      mutex.lock();
      try {
        Shared s = shared(key);
        boolean wasWriter = s.writers.remove(me) != null;
        boolean leftLine =
            defect != Defect.SEM_GHOST_WAITER && s.line.remove(me) && key.startsWith("sem\0");
        boolean held = s.holders.remove(me.ownerId) != null;
        if (held || (wasWriter && defect != Defect.RW_WITHDRAW_NO_WAKE) || leftLine) {
          wakeAll(s); // the readers that writer held back may go now; a semaphore's line moves up
        }
      } finally {
        mutex.unlock();
      }
    }

    /**
     * @return null if renewed, else why not
     */
    String renewShared(String key, String ownerId, long leaseNanos) {
      available();
      mutex.lock();
      try {
        Shared s = shared(key);
        long now = System.nanoTime();
        long[] h = s.holders.get(ownerId);
        if (h == null || now - h[1] >= 0) {
          return "the lease is no longer among the live leases";
        }
        if (defect == Defect.RW_RENEW_MOVES_NOTHING && key.startsWith("rw\0") && h[0] == 0) {
          return null; // "renewed", and nothing moved
        }
        h[1] =
            now + (defect == Defect.SEM_NEVER_EXPIRES ? Duration.ofDays(7).toNanos() : leaseNanos);
        if (defect == Defect.SHARED_ONE_TTL) {
          s.holders
              .values()
              .forEach(other -> other[1] = h[1]); // the key's TTL moves for every lease in it
        }
        return null;
      } finally {
        mutex.unlock();
      }
    }

    boolean releaseShared(String key, Claim claim, String ownerId) {
      available();
      mutex.lock();
      try {
        Shared s = shared(key);
        long now = System.nanoTime();
        purge(s, now);
        long[] h = s.holders.get(ownerId);
        if (h == null && defect == Defect.SHARED_RELEASE_COUNTED) {
          long kind = claim.kind() == Claim.Kind.WRITE ? 1 : 0;
          String other =
              s.holders.entrySet().stream()
                  .filter(e -> e.getValue()[0] == kind)
                  .map(Map.Entry::getKey)
                  .findFirst()
                  .orElse(null);
          if (other == null) {
            return false;
          }
          s.holders.remove(other);
          wakeAll(s);
          return true;
        }
        if (h == null) {
          return false;
        }
        if (defect != Defect.SEM_RELEASE_LEAKS) {
          s.holders.remove(ownerId);
        }
        boolean rw = claim.kind() != Claim.Kind.PERMIT;
        if (!(rw ? defect == Defect.RW_RELEASE_NO_WAKE : defect == Defect.SEM_NEVER_WAKES)) {
          wakeAll(s);
        }
        return true;
      } finally {
        mutex.unlock();
      }
    }

    LockState state(String key) {
      available();
      LockState now = read(key);
      if (defect == Defect.STALE_STATE) {
        LockState cached = lastHeld.get(key);
        if (now.isHeld()) {
          lastHeld.put(key, now);
        } else if (cached != null) {
          return cached;
        }
      }
      return now;
    }

    private LockState read(String key) {
      mutex.lock();
      try {
        Entry e = locks.get(key);
        long now = System.nanoTime();
        if (e == null
            || e.owner == null
            || (expired(e, now) && defect != Defect.EXPIRED_READS_HELD)
            || (defect == Defect.STATE_FREE_EARLY && now - e.expiresAt >= 0)
            || (defect == Defect.STATE_FREE_WHEN_UNRENEWED
                && now - (e.expiresAt - e.leaseNanos) > e.leaseNanos / 2)) {
          return LockState.free();
        }
        Duration left =
            defect == Defect.REMAINING_FROZEN
                ? Duration.ofNanos(e.leaseNanos)
                : Duration.ofNanos(Math.max(0, e.expiresAt - now));
        String holder = defect == Defect.WRONG_HOLDER ? clientOf(e.owner) : e.owner;
        return LockState.held()
            .withFencingToken(
                defect == Defect.STATE_TOKEN_LAGS ? Math.max(1, e.fence - 1) : e.fence)
            .withRemaining(left)
            .withHolder(holder)
            .withWaiting(e.queue.size() + (defect == Defect.WAITING_COUNTS_HOLDER ? 1 : 0));
      } finally {
        mutex.unlock();
      }
    }

    long nextGrantToken(long fence) {
      if (defect == Defect.TOKENS_GO_BACK && grants.incrementAndGet() % 3 == 0) {
        return 1;
      }
      return fence;
    }
  }

  /** The provider for the scheme {@code memory}. */
  static final class Provider implements LockProvider {
    private final Defect defect;

    Provider(Defect defect) {
      this.defect = defect;
    }

    @Override
    public Set<String> schemes() {
      return Set.of("memory");
    }

    @Override
    public Set<String> optionNames() {
      return Set.of();
    }

    @Override
    public LockBackend open(BackendConfig config, BackendContext context) {
      config.check();
      return new Backend(server(defect), context);
    }
  }

  private static final class Backend implements LockBackend {
    private final Server server;
    private static final long SESSION_TIMEOUT = Duration.ofSeconds(1).toNanos();
    private final BackendContext context;
    private final AtomicLong polls = new AtomicLong();
    private final Set<String> sessionHeld = ConcurrentHashMap.newKeySet();
    private final Map<String, String> clientHolds = new ConcurrentHashMap<>();
    private volatile long confirmedAt = System.nanoTime();
    private final Thread heartbeat;

    Backend(Server server, BackendContext context) {
      this.server = server;
      this.context = context;
      if (server.defect == Defect.SESSION_BOUNDED) {
        heartbeat = new Thread(this::heartbeats, "memory-heartbeat");
        heartbeat.setDaemon(true);
        heartbeat.start();
      } else {
        heartbeat = null;
      }
    }

    private boolean session() {
      return server.defect == Defect.SESSION_UNBOUNDED
          || server.defect == Defect.SESSION_BOUNDED
          || server.defect == Defect.SESSION_EXTEND_IGNORED;
    }

    /** Each answered heartbeat moves the bound of every lease of the session. */
    private void heartbeats() {
      while (!Thread.currentThread().isInterrupted()) {
        try {
          server.ping();
          confirmedAt = System.nanoTime();
          sessionHeld.forEach(
              owner -> context.leaseValidUntil(owner, confirmedAt + SESSION_TIMEOUT));
        } catch (RuntimeException e) {
          // unanswered: the bounds run out by themselves
        }
        LockSupport.parkNanos(SESSION_TIMEOUT / 5);
      }
    }

    @Override
    public Guarantees guarantees() {
      return GUARANTEES;
    }

    @Override
    public boolean renewsBySession() {
      return session();
    }

    @Override
    public LockAttempt attempt(
        String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
      if (claim.isExclusive()) {
        return attempt(name, ownerId, lease, wake);
      }
      String key = server.sharedKey(server.key(name), claim);
      long markNanos = context.recheck().toNanos() * 3;
      Ticket me = server.enqueueShared(key, ownerId, wake, markNanos);
      long leaseNanos = lease.toNanos();
      return new LockAttempt() {
        @Override
        public Poll poll() {
          long r = server.tryTakeShared(key, name, claim, me, leaseNanos, markNanos);
          boolean polls =
              claim.kind() == Claim.Kind.PERMIT
                  ? server.defect == Defect.SEM_POLLS_20MS
                  : server.defect == Defect.RW_POLLS_20MS;
          return r > 0
              ? Poll.granted(r, null)
              : Poll.busy(polls ? Duration.ofMillis(20) : Duration.ofNanos(-r));
        }

        @Override
        public void abandon() {
          server.withdrawShared(key, me);
        }
      };
    }

    /** A grant's poll, from the fence the server granted. */
    private Poll granted(long fence, String ownerId) {
      long token = server.nextGrantToken(fence);
      if (server.defect == Defect.SESSION_BOUNDED) {
        sessionHeld.add(ownerId);
        return Poll.grantedForSession(token, confirmedAt + SESSION_TIMEOUT, null);
      }
      return session() ? Poll.grantedForSession(token, null) : Poll.granted(token, null);
    }

    @Override
    public List<Poll> acquireAll(List<String> names, List<String> ownerIds, Duration lease) {
      List<String> keys = new ArrayList<>(names.size());
      for (String name : names) {
        String key = server.key(name);
        if (keys.contains(key)) {
          return null; // two names stored as one key (a names defect): one by one
        }
        keys.add(key);
      }
      long[] fences = server.takeAll(keys, ownerIds, lease.toNanos());
      if (fences == null) {
        return List.of();
      }
      List<Poll> grants = new ArrayList<>(fences.length);
      for (int i = 0; i < fences.length; i++) {
        grants.add(granted(fences[i], ownerIds.get(i)));
        server.changed(keys.get(i), true);
      }
      return grants;
    }

    @Override
    public LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake) {
      String key = server.key(name);
      Ticket me = server.enqueue(key, ownerId, wake);
      long leaseNanos = lease.toNanos();
      return new LockAttempt() {
        @Override
        public Poll poll() {
          if (server.defect == Defect.TWO_HOLDERS_FLAKY && polls.incrementAndGet() % 40 == 0) {
            throw new BackendUnavailableException(
                "memory server for " + server.defect + " dropped a request");
          }
          long r = server.tryTake(key, me.current(), leaseNanos);
          if (r > 0) {
            server.changed(key, true);
            return granted(r, ownerId);
          }
          if (server.defect == Defect.LOST_WAKEUP && me.current().wake == null) {
            roundTrip(1000); // the subscription goes out only after the busy reply came back
            me.current().wake = wake;
          }
          if (server.defect == Defect.POLLS_50MS) {
            return Poll.busy(Duration.ofMillis(50));
          }
          if (server.defect == Defect.POLLS_20MS) {
            return Poll.busy(Duration.ofMillis(20));
          }
          return Poll.busy(Duration.ofNanos(-r));
        }

        @Override
        public void abandon() {
          server.withdraw(key, me);
          server.changed(key, false);
        }
      };
    }

    @Override
    public List<Renewal> renew(List<BackendLease> leases) {
      List<Renewal> out = new ArrayList<>(leases.size());
      for (BackendLease lease : leases) {
        try {
          String why =
              lease.claim().isExclusive()
                  ? server.renew(server.key(lease.name()), lease.ownerId(), lease.lease().toNanos())
                  : server.renewShared(
                      server.sharedKey(server.key(lease.name()), lease.claim()),
                      lease.ownerId(),
                      lease.lease().toNanos());
          out.add(
              why == null
                  ? Renewal.renewed()
                  : why.equals("retry")
                      ? Renewal.failed(new BackendUnavailableException("busy, retry"))
                      : Renewal.lost(why));
        } catch (RuntimeException e) {
          out.add(Renewal.failed(e));
        }
      }
      if (server.defect == Defect.RENEW_BATCH_MISATTRIBUTED && out.size() > 1) {
        Collections.rotate(out, 1);
      }
      return out;
    }

    @Override
    public boolean extend(BackendLease lease, Duration newLease) {
      if (!lease.claim().isExclusive()) {
        return server.renewShared(
                server.sharedKey(server.key(lease.name()), lease.claim()),
                lease.ownerId(),
                newLease.toNanos())
            == null;
      }
      if (server.defect == Defect.EXTEND_CLIENT_ONLY) {
        return true;
      }
      return server.extend(server.key(lease.name()), lease.ownerId(), newLease.toNanos());
    }

    @Override
    public boolean releaseAfter(BackendLease lease, Duration keep) {
      if (!lease.claim().isExclusive()) {
        throw new UnsupportedOperationException("a hold after release is for exclusive locks only");
      }
      sessionHeld.remove(lease.ownerId());
      String key = server.key(lease.name());
      if (server.defect == Defect.HOLD_IS_RELEASE) {
        return server.release(key, lease.ownerId());
      }
      boolean ours = server.releaseAfter(key, lease.ownerId(), keep.toNanos());
      if (ours && server.defect == Defect.HOLD_IN_CLIENT) {
        clientHolds.put(key, lease.ownerId());
      }
      return ours;
    }

    @Override
    public boolean release(BackendLease lease) {
      sessionHeld.remove(lease.ownerId());
      if (!lease.claim().isExclusive()) {
        return server.releaseShared(
            server.sharedKey(server.key(lease.name()), lease.claim()),
            lease.claim(),
            lease.ownerId());
      }
      boolean released = server.release(server.key(lease.name()), lease.ownerId());
      server.changed(server.key(lease.name()), false);
      return released;
    }

    @Override
    public LockState inspect(String name) {
      return server.state(server.key(name));
    }

    @Override
    public boolean breakLock(String name) {
      boolean broken = server.breakLock(name);
      server.changed(server.key(name), false);
      return broken;
    }

    /**
     * Told by every client's backend after its grants and releases (a lease that runs out is not
     * told); the watch defects break it.
     */
    @Override
    public dev.locksmith.spi.HolderWatch watchHolder(String name, Runnable changed) {
      Runnable stop =
          server.defect == Defect.WATCH_NEVER_CALLED
              ? () -> {}
              : server.watch(server.key(name), changed);
      if (server.defect != Defect.WATCH_NEVER_CALLED) {
        changed.run();
      }
      return dev.locksmith.spi.HolderWatch.of(
          server.defect != Defect.WATCH_NEVER_CALLED,
          server.defect == Defect.WATCH_CALLED_AFTER_CLOSE ? () -> {} : stop);
    }

    @Override
    public dev.locksmith.spi.NamePage listNames(String prefix, String cursor, int limit) {
      List<String> names = server.heldNames(prefix, cursor, limit);
      if (names.size() <= limit) {
        return dev.locksmith.spi.NamePage.of(names, null);
      }
      List<String> page = names.subList(0, limit);
      return dev.locksmith.spi.NamePage.of(
          page, server.defect == Defect.LIST_STOPS_AT_FIRST_PAGE ? null : page.get(limit - 1));
    }

    @Override
    public dev.locksmith.spi.NamePage listNames(
        String prefix, String cursor, int limit, Guarantees.Primitive primitive) {
      if (primitive == Guarantees.Primitive.LOCK) {
        return listNames(prefix, cursor, limit);
      }
      List<String> names =
          server.heldSharedNames(
              primitive == Guarantees.Primitive.SEMAPHORE ? "sem" : "rw", prefix, cursor, limit);
      if (names.size() <= limit) {
        return dev.locksmith.spi.NamePage.of(names, null);
      }
      List<String> page = names.subList(0, limit);
      return dev.locksmith.spi.NamePage.of(page, page.get(limit - 1));
    }

    @Override
    public dev.locksmith.HeldLock inspectHolders(String name, Guarantees.Primitive primitive) {
      boolean semaphore = primitive == Guarantees.Primitive.SEMAPHORE;
      return server.holders(
          server.sharedKey(server.key(name), semaphore ? Claim.permit(1) : Claim.read()),
          name,
          semaphore);
    }

    @Override
    public void abandon() {
      close();
      if (session()) {
        // the server ends the session after its timeout (1 s here, the kit's expiry slack)
        // SESSION_EXTEND_IGNORED has a 10 s session, as ZooKeeper's default: rule 17.9 must not
        // wait for it
        long sessionMicros =
            server.defect == Defect.SESSION_EXTEND_IGNORED ? 10_000_000 : 1_000_000;
        Thread t =
            new Thread(
                () -> {
                  roundTrip(sessionMicros);
                  server.endSession(context.clientId());
                });
        t.setDaemon(true);
        t.start();
      }
    }

    @Override
    public void close() {
      clientHolds.forEach(
          server::dropHold); // the HOLD_IN_CLIENT defect: the hold lived in this client
      clientHolds.clear();
      if (heartbeat != null) {
        heartbeat.interrupt(); // the server outlives its clients; the session ends with them
      }
    }
  }
}
