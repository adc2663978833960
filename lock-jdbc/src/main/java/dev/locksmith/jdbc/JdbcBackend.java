package dev.locksmith.jdbc;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Guarantees.Promise;
import dev.locksmith.HeldLock;
import dev.locksmith.LockState;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.NamePage;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The JDBC backend: a lease table, one row per lock name. Acquire, release and renewal are each one
 * short transaction on a pooled connection; between them nothing is held open.
 */
final class JdbcBackend implements LockBackend {
  private static final Logger LOG = LoggerFactory.getLogger(JdbcBackend.class);
  private static final AtomicInteger THREADS = new AtomicInteger();

  private final LeaseTable table;

  /** Semaphores and read-write locks, in their own tables beside the lease table. */
  private final SharedTable shared;

  private final String endpoint;
  private final Secrets secrets;
  private final Guarantees guarantees;
  private final Duration ioTimeout;
  private final long backoffMinNanos;
  private final long backoffMaxNanos;
  private final String holderPrefix;
  private final AutoCloseable pool;
  private final Runnable onClose;

  /**
   * PostgreSQL: the client's one LISTEN connection that wakes its waiters; null where waiters poll.
   */
  private final ReleaseListener listener;

  /** MySQL/MariaDB: named-lock bells that wake waiters of other clients; null elsewhere. */
  private final NamedLockBells bells;

  /** Runs renewals so that a hung database cannot hold the core's scheduler past a lease. */
  private final ExecutorService renewer =
      Executors.newCachedThreadPool(
          r -> {
            Thread t = new Thread(r, "locksmith-jdbc-renew-" + THREADS.incrementAndGet());
            t.setDaemon(true);
            return t;
          });

  /**
   * Shortest life of a waiter's ticket in the wait queue, whatever the lease: a queued waiter polls
   * (and so refreshes its ticket) at least three times per ticket life, and a waiter woken by
   * notification should sleep longer than a few hundred milliseconds between them.
   */
  static final long MIN_TICKET_MILLIS = 2_000;

  /**
   * Longest sleep of a waiter that a release wakes (PostgreSQL, MySQL/MariaDB) without a wake-up:
   * what a lost notification, or a release nobody announced, costs at most.
   */
  static final long FALLBACK_POLL_MILLIS = 1_000;

  /** Deletes rows of lock names unused for {@code purge-after}; null when it is off. */
  private final ScheduledExecutorService purger;

  JdbcBackend(
      LeaseTable table,
      SharedTable shared,
      String endpoint,
      Secrets secrets,
      Guarantees guarantees,
      Duration ioTimeout,
      Duration backoffMin,
      Duration backoffMax,
      Duration purgeAfter,
      AutoCloseable pool,
      ReleaseListener listener,
      NamedLockBells bells,
      Runnable onClose) {
    this.table = table;
    this.shared = shared;
    this.endpoint = endpoint;
    this.secrets = secrets;
    this.guarantees = guarantees;
    this.ioTimeout = ioTimeout;
    this.backoffMinNanos = backoffMin.toNanos();
    this.backoffMaxNanos = Math.max(backoffMin.toNanos(), backoffMax.toNanos());
    this.pool = pool;
    this.listener = listener;
    this.bells = bells;
    this.onClose = onClose;
    String host = System.getenv("HOSTNAME");
    this.holderPrefix =
        "pid "
            + ProcessHandle.current().pid()
            + (host == null || host.isBlank() ? "" : " on " + host);
    this.purger = purgeAfter == null ? null : startPurges(purgeAfter);
  }

  /**
   * Purges every quarter of {@code purge-after} (1 s to 1 h), starting at a random point of the
   * first turn so that clients started together do not all read the table at once; a purge that
   * finds another client's less than a turn old does nothing (see {@link LeaseTable#purge}).
   */
  private ScheduledExecutorService startPurges(Duration purgeAfter) {
    long age = purgeAfter.toMillis();
    long every = Math.max(1_000, Math.min(TimeUnit.HOURS.toMillis(1), age / 4));
    ScheduledExecutorService s =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "locksmith-jdbc-purge-" + THREADS.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    long first = every / 2 + ThreadLocalRandom.current().nextLong(every / 2);
    s.scheduleWithFixedDelay(() -> purgeOnce(age, every), first, every, TimeUnit.MILLISECONDS);
    return s;
  }

  private volatile boolean purgeFailing;

  private void purgeOnce(long ageMillis, long everyMillis) {
    try {
      int n = table.purge(ageMillis, everyMillis, shared);
      if (n > 0) {
        LOG.debug("deleted {} rows of lock names unused for {} ms from {}", n, ageMillis, table);
      }
      purgeFailing = false;
    } catch (SQLException | RuntimeException e) {
      String why =
          e instanceof SQLException ? secrets.scrub(String.valueOf(e.getMessage())) : e.toString();
      if (!purgeFailing) {
        LOG.warn(
            "deleting unused rows of lock table {} on {} failed, trying again in a while: {}",
            table.table(),
            endpoint,
            why);
      } else {
        LOG.debug("deleting unused rows of {} failed again: {}", table.table(), why);
      }
      purgeFailing = true;
    }
  }

  /**
   * @param durable whether the database keeps committed rows across a restart (false for H2 in
   *     memory)
   * @param shared whether other processes can reach the database (false for H2 in memory)
   * @param notified whether releases of locks wake waiters in other clients (PostgreSQL's
   *     LISTEN/NOTIFY, MySQL's and MariaDB's named-lock bells)
   * @param notifiedClaims whether releases of permits and read-write sides do too (PostgreSQL only)
   * @param breakGlass whether a break wakes the waiters as a release does: not on MySQL/MariaDB,
   *     whose waiters wait on the holding client's own bell, which only that client rings
   */
  static Guarantees guarantees(
      boolean durable,
      boolean shared,
      boolean notified,
      boolean notifiedClaims,
      boolean breakGlass) {
    Guarantees.Builder b =
        Guarantees.builder()
            .features(
                Feature.FENCING,
                Feature.FIFO_FAIRNESS,
                Feature.RENEWAL,
                Feature.LOSS_DETECTION,
                Feature.REENTRANCY,
                Feature.STATE_READS,
                Feature.EXTEND,
                Feature.HOLD_AFTER_RELEASE,
                Feature.LISTING,
                Feature.SEMAPHORES,
                Feature.READ_WRITE_LOCKS,
                Feature.ATOMIC_LOCK_SETS)
            .promise(
                Fault.HOLDER_PAUSE,
                Promise.SAFE_WITH_FENCING,
                "the row expires by the database clock while the holder is paused; the next"
                    + " holder's fence is higher")
            .promise(
                Fault.HOLDER_CRASH,
                Promise.SAFE,
                "a crashed holder stops renewing and its row expires with its lease")
            .promise(
                Fault.PAUSE_DURING_ACQUIRE,
                Promise.SAFE_WITH_FENCING,
                "as for a paused holder: the grant expires, fences order the holders")
            .promise(
                Fault.SERVER_RESTART,
                durable ? Promise.SAFE : Promise.UNSAFE,
                durable
                    ? "owner, expiry and fence are committed rows of the database and survive its"
                        + " restart"
                    : "an in-memory H2 database loses every row, fence counters included, when it"
                        + " closes")
            .promise(
                Fault.SERVER_PAUSE,
                Promise.UNAVAILABLE,
                "acquires fail after the connect timeout; renewals fail and holders are told their"
                    + " lease is lost by its end")
            .promise(
                Fault.PARTITION,
                Promise.SAFE_WITH_FENCING,
                "a cut-off holder cannot renew and is told by the end of its lease; the row then"
                    + " expires and fences order old and new holder")
            .promise(
                Fault.LEADER_FAILOVER,
                Promise.NOT_APPLICABLE,
                "one database; with a replicated one, safety is that of its failover (an"
                    + " asynchronous replica can lose committed grants)")
            .promise(
                Fault.CLOCK_JUMP,
                Promise.SAFE_WITH_FENCING,
                "expiry is judged by the database clock only, so a client clock jump changes"
                    + " nothing; a jump of the database's own clock can end leases early, and"
                    + " fences still order holders")
            .promise(
                Fault.RELEASE_AFTER_EXPIRY,
                Promise.SAFE,
                "release is UPDATE ... WHERE name = ? AND owner = ?: it never frees another"
                    + " holder's row")
            .promise(
                Fault.AMBIGUOUS_ACQUIRE,
                Promise.SAFE,
                "an attempt whose commit outcome is unknown is undone by an owner-checked release;"
                    + " failing that, the row expires with its lease")
            .promise(
                Fault.TOKEN_MONOTONICITY,
                durable ? Promise.SAFE : Promise.UNSAFE,
                durable
                    ? "one fence counter per row, incremented in the transaction that grants the"
                        + " lock and kept after release (rows are never deleted)"
                    : "the counters of an in-memory H2 database start again when it is recreated");
    if (shared) {
      b.features(Feature.SHARED_ACROSS_PROCESSES);
    }
    if (notified) {
      b.features(Feature.NOTIFIED_WAKEUP);
    }
    if (breakGlass) {
      b.features(Feature.BREAK_GLASS);
    }
    // any waiter may take a freed permit or side: FIFO is for locks only
    b.except(Guarantees.Primitive.SEMAPHORE, Feature.FIFO_FAIRNESS)
        .except(Guarantees.Primitive.READ_WRITE_LOCK, Feature.FIFO_FAIRNESS);
    if (!notifiedClaims) {
      // MySQL/MariaDB: the named-lock bells that wake lock waiters have one holder per bell;
      // semaphore and read-write
      // waiters poll with the backoff
      b.except(Guarantees.Primitive.SEMAPHORE, Feature.NOTIFIED_WAKEUP)
          .except(Guarantees.Primitive.READ_WRITE_LOCK, Feature.NOTIFIED_WAKEUP);
    }
    return b.build();
  }

  @Override
  public Guarantees guarantees() {
    return guarantees;
  }

  /**
   * A lock set in one transaction ({@link LeaseTable#tryTakeAll}): every row free with nobody
   * queued, taken in the set's order, or none.
   */
  @Override
  public List<Poll> acquireAll(List<String> names, List<String> ownerIds, Duration lease)
      throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException("interrupted before acquiring locks " + names);
    }
    long leaseMillis = Math.max(1, lease.toMillis());
    String holder = truncate(holderPrefix + ", thread " + Thread.currentThread().getName(), 255);
    boolean[] maybeHeld = new boolean[1];
    long[] fences;
    try {
      fences = table.tryTakeAll(names, ownerIds, leaseMillis, holder, () -> maybeHeld[0] = true);
    } catch (SQLException e) {
      BackendUnavailableException failure = unavailable("acquiring locks " + names, e);
      if (maybeHeld[0]) {
        // the commit may have gone through although its answer was lost: give every name back,
        // in one transaction; if that fails too, the names expire with their lease
        try {
          table.releaseAll(names, ownerIds);
        } catch (SQLException again) {
          failure.addSuppressed(again);
        }
      }
      throw failure;
    }
    if (fences == null) {
      return List.of();
    }
    List<Poll> grants = new java.util.ArrayList<>(fences.length);
    for (int i = 0; i < fences.length; i++) {
      if (bells != null) {
        bells.granted(names.get(i), ownerIds.get(i), leaseMillis);
      }
      grants.add(Poll.granted(fences[i], null));
    }
    return grants;
  }

  @Override
  public LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake) {
    long leaseMillis = Math.max(1, lease.toMillis());
    String holder = truncate(holderPrefix + ", thread " + Thread.currentThread().getName(), 255);
    long ticketMillis = Math.max(MIN_TICKET_MILLIS, leaseMillis);
    // A queued waiter polls at least three times per ticket life, so that its ticket lives on.
    long refreshNanos = TimeUnit.MILLISECONDS.toNanos(ticketMillis / 3);
    long fallbackNanos =
        TimeUnit.MILLISECONDS.toNanos(Math.min(ticketMillis / 3, FALLBACK_POLL_MILLIS));
    return new LockAttempt() {
      private long backoff = backoffMinNanos;

      /**
       * The holder's fence at our last busy poll: a new one means the lock changed hands meanwhile.
       */
      private long holderFence = -1;

      private volatile boolean maybeHeld;

      /** Our place in the wait queue, 0 before the first busy poll. */
      private volatile long ticket;

      private boolean listening;

      /** MySQL/MariaDB: whether a watcher on the lock's bell wakes us (false: we poll). */
      private boolean rung;

      private boolean nudged;

      @Override
      public Poll pollWithoutWaiting() throws InterruptedException {
        if (Thread.interrupted()) {
          throw new InterruptedException("interrupted before polling lock '" + name + "'");
        }
        // Nobody waits: no listener, no bell watcher, no ticket; just the take transaction.
        LeaseTable.Take t;
        try {
          t = table.tryTake(name, ownerId, leaseMillis, holder, 0, 0, () -> maybeHeld = true);
        } catch (SQLException e) {
          throw unavailable("acquiring lock '" + name + "'", e);
        }
        if (t.granted) {
          maybeHeld = false;
          if (bells != null) {
            bells.granted(name, ownerId, leaseMillis);
          }
          return Poll.granted(t.fence, null);
        }
        if (t.queuedBehind && listener != null) {
          nudge(); // free, but an earlier waiter is first in line: it may not have been told
        }
        return Poll.busy(Duration.ofMillis(t.remainingMillis));
      }

      private void nudge() {
        nudged = true;
        try {
          table.announce(name);
        } catch (SQLException e) {
          LOG.debug("announcing lock '{}' on {} failed: {}", name, endpoint, e.toString());
        }
      }

      @Override
      public Poll poll() throws InterruptedException {
        if (Thread.interrupted()) {
          throw new InterruptedException("interrupted before polling lock '" + name + "'");
        }
        if (listener != null && !listening) {
          listener.register(name, wake); // before the read: a release committed after it wakes us
          listening = true;
        }
        LeaseTable.Take t;
        try {
          t =
              table.tryTake(
                  name, ownerId, leaseMillis, holder, ticket, ticketMillis, () -> maybeHeld = true);
        } catch (SQLException e) {
          throw unavailable("acquiring lock '" + name + "'", e);
        }
        if (t.granted) {
          maybeHeld = false;
          ticket = 0;
          stopListening();
          if (bells != null) {
            bells.granted(name, ownerId, leaseMillis);
          }
          return Poll.granted(t.fence, null);
        }
        ticket = t.ticket;
        long untilExpiry = TimeUnit.MILLISECONDS.toNanos(t.remainingMillis);
        if (bells != null && !listening) {
          // Only now that we wait: a bell is level-triggered (a release before the watcher's
          // GET_LOCK lets it straight through), so an uncontended acquire costs no watcher.
          rung = bells.register(name, wake);
          listening = true;
        }
        if (rung) {
          // The holder's client rings its bell when it releases while we are queued. Free with
          // an earlier waiter first in line, there is no holder's bell to watch until that
          // waiter takes it, which it is about to: then we poll with the backoff below.
          bells.arm(name, t.holder, t.fence != holderFence);
          if (t.holder != null) {
            holderFence = t.fence;
            return Poll.busy(Duration.ofNanos(Math.max(0, Math.min(untilExpiry, fallbackNanos))));
          }
        }
        if (listener != null) {
          if (t.queuedBehind && !nudged) {
            // Free, but an earlier waiter is first in line: make sure it was told (once per
            // attempt; a vanished one is passed over when its ticket expires).
            nudge();
          }
          // Woken by the release; until then poll only when a wake-up cannot come (the holder's
          // lease or the first waiter's ticket runs out) or by the fallback interval.
          return Poll.busy(Duration.ofNanos(Math.max(0, Math.min(untilExpiry, fallbackNanos))));
        }
        // A lock that changes hands between our polls is freed again and again, and only a
        // waiter that looks often enough sees it free: poll at the shortest backoff again. One
        // holder keeping it (same fence, renewals do not move it) doubles the backoff, which
        // keeps an idle wait cheap. Jittered, never sleeping past the holder's expiry by the
        // database clock.
        if (t.fence != holderFence) {
          holderFence = t.fence;
          backoff = backoffMinNanos;
        }
        long jittered = backoff / 2 + ThreadLocalRandom.current().nextLong(backoff / 2 + 1);
        backoff = Math.min(backoffMaxNanos, backoff * 2);
        return Poll.busy(
            Duration.ofNanos(Math.max(0, Math.min(Math.min(jittered, untilExpiry), refreshNanos))));
      }

      private void stopListening() {
        if (listening) {
          if (listener != null) {
            listener.unregister(name, wake);
          } else if (bells != null) {
            bells.unregister(name, wake);
          }
          listening = false;
          rung = false;
        }
      }

      @Override
      public void abandon() {
        stopListening();
        if (ticket > 0) {
          // Leave the queue at once, so the waiter behind us is not kept waiting for our ticket to
          // expire.
          try {
            table.withdraw(name, ownerId);
          } catch (SQLException | RuntimeException e) {
            LOG.warn(
                "leaving the wait queue of lock '{}' on {} failed; the ticket expires within {} ms:"
                    + " {}",
                name,
                endpoint,
                ticketMillis,
                e.toString());
          }
          ticket = 0;
        }
        if (!maybeHeld) {
          return;
        }
        // The commit of a grant failed in flight: the database may have granted it. Undo it,
        // owner-checked, so it is never someone else's row we free.
        try {
          boolean freed = table.release(name, ownerId);
          if (bells != null) {
            bells.undone(name, ownerId, freed); // a waiter may have read us as the holder
          }
        } catch (SQLException | RuntimeException e) {
          LOG.warn(
              "undoing an ambiguous acquire of lock '{}' on {} failed; the row expires with its"
                  + " lease: {}",
              name,
              endpoint,
              e.toString());
        }
      }
    };
  }

  /** Semaphore permits and read-write sides: {@link SharedAttempt} on {@link SharedTable}. */
  @Override
  public LockAttempt attempt(
      String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
    if (claim.isExclusive()) {
      return attempt(name, ownerId, lease, wake);
    }
    String holder = truncate(holderPrefix + ", thread " + Thread.currentThread().getName(), 255);
    return new SharedAttempt(
        shared,
        name,
        claim,
        ownerId,
        Math.max(1, lease.toMillis()),
        holder,
        wake,
        listener,
        endpoint,
        this::unavailable,
        backoffMinNanos,
        backoffMaxNanos);
  }

  /**
   * Locks' leases go to the lease table, the others to {@link SharedTable}; outcomes come back in
   * order.
   */
  @Override
  public List<Renewal> renew(List<BackendLease> leases) {
    List<BackendLease> locks = new ArrayList<>(leases.size());
    List<BackendLease> others = new ArrayList<>();
    for (BackendLease l : leases) {
      (l.claim().isExclusive() ? locks : others).add(l);
    }
    if (others.isEmpty()) {
      return renewLocks(leases);
    }
    java.util.Iterator<Renewal> ofLocks =
        (locks.isEmpty() ? List.<Renewal>of() : renewLocks(locks)).iterator();
    java.util.Iterator<Renewal> ofOthers = renewShared(others).iterator();
    List<Renewal> out = new ArrayList<>(leases.size());
    for (BackendLease l : leases) {
      out.add(l.claim().isExclusive() ? ofLocks.next() : ofOthers.next());
    }
    return out;
  }

  private List<Renewal> renewShared(List<BackendLease> leases) {
    List<LeaseTable.Due> due = new ArrayList<>(leases.size());
    long shortest = Long.MAX_VALUE;
    for (BackendLease l : leases) {
      long ms = Math.max(1, l.lease().toMillis());
      due.add(new LeaseTable.Due(l.name(), l.ownerId(), ms));
      shortest = Math.min(shortest, ms);
    }
    // As for locks: back in time for the core to report a lease lost by its end.
    long limit = Math.max(20, Math.min(ioTimeout.toMillis(), shortest / 2));
    Future<Set<String>> f = null;
    try {
      f = renewer.submit(() -> shared.renew(due));
      Set<String> ours = f.get(limit, TimeUnit.MILLISECONDS);
      List<Renewal> out = new ArrayList<>(leases.size());
      for (BackendLease l : leases) {
        out.add(
            ours.contains(l.ownerId())
                ? Renewal.renewed()
                : Renewal.lost(
                    "the "
                        + Claim.noun(l.claim().kind())
                        + " '"
                        + l.name()
                        + "' in "
                        + shared.leases
                        + " no longer has a live "
                        + l.claim()
                        + " lease of ours"));
      }
      return out;
    } catch (TimeoutException e) {
      f.cancel(true);
      return failAll(
          leases,
          new BackendUnavailableException(
              "renewing "
                  + leases.size()
                  + " lease(s) on "
                  + endpoint
                  + " took longer than "
                  + limit
                  + " ms"));
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      return failAll(
          leases,
          cause instanceof SQLException
              ? unavailable("renewing " + leases.size() + " lease(s)", (SQLException) cause)
              : cause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // the core is closing its scheduler
      return failAll(leases, e);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      return failAll(
          leases, new BackendUnavailableException("the backend for " + endpoint + " is closed"));
    }
  }

  private List<Renewal> renewLocks(List<BackendLease> leases) {
    List<LeaseTable.Due> due = new ArrayList<>(leases.size());
    long shortest = Long.MAX_VALUE;
    for (BackendLease l : leases) {
      long ms = Math.max(1, l.lease().toMillis());
      due.add(new LeaseTable.Due(l.name(), l.ownerId(), ms));
      shortest = Math.min(shortest, ms);
    }
    // Half the shortest lease at most: a renewal that hangs on a frozen database must come back
    // in time for the core to report the lease lost by its end.
    long limit = Math.max(20, Math.min(ioTimeout.toMillis(), shortest / 2));
    List<Renewal> out = new ArrayList<>(leases.size());
    Future<Set<String>> f = null;
    try {
      f = renewer.submit(() -> table.renew(due));
      Set<String> ours = f.get(limit, TimeUnit.MILLISECONDS);
      for (BackendLease l : leases) {
        if (bells != null) {
          if (ours.contains(l.ownerId())) {
            bells.renewed(l.ownerId(), Math.max(1, l.lease().toMillis()));
          } else {
            bells.released(l.ownerId(), false);
          }
        }
        out.add(
            ours.contains(l.ownerId())
                ? Renewal.renewed()
                : Renewal.lost(
                    "the row of lock '"
                        + l.name()
                        + "' in "
                        + table.table()
                        + " no longer has us as its owner"));
      }
      return out;
    } catch (TimeoutException e) {
      f.cancel(true);
      return failAll(
          leases,
          new BackendUnavailableException(
              "renewing "
                  + leases.size()
                  + " lease(s) on "
                  + endpoint
                  + " took longer than "
                  + limit
                  + " ms"));
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      return failAll(
          leases,
          cause instanceof SQLException
              ? unavailable("renewing " + leases.size() + " lease(s)", (SQLException) cause)
              : cause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // the core is closing its scheduler
      return failAll(leases, e);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      return failAll(
          leases, new BackendUnavailableException("the backend for " + endpoint + " is closed"));
    }
  }

  private static List<Renewal> failAll(List<BackendLease> leases, Throwable cause) {
    List<Renewal> out = new ArrayList<>(leases.size());
    for (int i = 0; i < leases.size(); i++) {
      out.add(Renewal.failed(cause));
    }
    return out;
  }

  @Override
  public boolean release(BackendLease lease) {
    if (!lease.claim().isExclusive()) {
      try {
        return shared.release(lease.name(), lease.claim(), lease.ownerId());
      } catch (SQLException e) {
        throw unavailable(
            "releasing the "
                + lease.claim()
                + " lease of "
                + Claim.noun(lease.claim().kind())
                + " '"
                + lease.name()
                + "'",
            e);
      }
    }
    try {
      boolean ours = table.release(lease.name(), lease.ownerId());
      if (bells != null) {
        bells.released(
            lease.ownerId(), ours); // after the commit: a woken waiter finds the row free
      }
      return ours;
    } catch (SQLException e) {
      throw unavailable("releasing lock '" + lease.name() + "'", e);
    }
  }

  /**
   * A set's locks released in one transaction ({@link LeaseTable#releaseAll}): one owner-checked
   * UPDATE per name and one commit, where releasing one by one commits each. Semaphore and
   * read-write leases among them are released one by one.
   */
  @Override
  public List<Boolean> releaseAll(List<BackendLease> leases) {
    boolean oneTransaction = leases.size() > 1;
    for (BackendLease lease : leases) {
      oneTransaction &= lease.claim().isExclusive();
    }
    if (!oneTransaction) {
      return LockBackend.super.releaseAll(leases);
    }
    List<String> names = new java.util.ArrayList<>(leases.size());
    List<String> owners = new java.util.ArrayList<>(leases.size());
    for (BackendLease lease : leases) {
      names.add(lease.name());
      owners.add(lease.ownerId());
    }
    boolean[] ours;
    try {
      ours = table.releaseAll(names, owners);
    } catch (SQLException e) {
      throw unavailable("releasing locks " + names, e);
    }
    List<Boolean> out = new java.util.ArrayList<>(ours.length);
    for (int i = 0; i < ours.length; i++) {
      if (bells != null) {
        bells.released(owners.get(i), ours[i]); // after the commit: a woken waiter finds it free
      }
      out.add(ours[i]);
    }
    return out;
  }

  /**
   * One UPDATE, owner-checked and only while the row has not expired; the new expiry is the
   * database clock + {@code newLease}.
   */
  @Override
  public boolean extend(BackendLease lease, Duration newLease) {
    if (!lease.claim().isExclusive()) {
      try {
        return shared.extend(lease.name(), lease.claim(), lease.ownerId(), ceilMillis(newLease));
      } catch (SQLException e) {
        throw unavailable(
            "extending the "
                + lease.claim()
                + " lease of "
                + Claim.noun(lease.claim().kind())
                + " '"
                + lease.name()
                + "'",
            e);
      }
    }
    try {
      long ms = ceilMillis(newLease);
      boolean moved = table.extend(lease.name(), lease.ownerId(), ms);
      if (bells != null && moved) {
        bells.renewed(lease.ownerId(), ms);
      }
      return moved;
    } catch (SQLException e) {
      throw unavailable("extending the lease on lock '" + lease.name() + "'", e);
    }
  }

  /**
   * One UPDATE, owner-checked: the row gets an owner no lease has and an expiry of the database
   * clock + {@code keep}, so it stays held through our close or crash and frees itself then.
   */
  @Override
  public boolean releaseAfter(BackendLease lease, Duration keep) {
    if (!lease.claim().isExclusive()) {
      throw new UnsupportedOperationException(
          this
              + " holds only exclusive locks after release, not a "
              + Claim.noun(lease.claim().kind())
              + "'s "
              + lease.claim()
              + " lease");
    }
    try {
      long ms = ceilMillis(keep);
      boolean ours = table.releaseAfter(lease.name(), lease.ownerId(), ms);
      if (bells != null) {
        if (ours) {
          bells.renewed(
              lease.ownerId(), ms); // its bell stays held through the hold; waiters poll at its end
        } else {
          bells.released(lease.ownerId(), false);
        }
      }
      return ours;
    } catch (SQLException e) {
      throw unavailable(
          "releasing lock '" + lease.name() + "' with a hold of " + Durations.format(keep), e);
    }
  }

  /**
   * Whole milliseconds, the table's unit, rounded up so the server never ends a lease or a hold
   * early.
   */
  private static long ceilMillis(Duration d) {
    long nanos = Math.max(0, d.toNanos());
    return Math.max(1, (nanos + 999_999) / 1_000_000);
  }

  /**
   * One range of the table's primary key: names with an owner under the prefix, after the cursor
   * (the page's last name), in the column's order. Rows of expired leases are read too; the core
   * drops them when it reads their state.
   */
  @Override
  public NamePage listNames(String prefix, String cursor, int limit) {
    try {
      List<String> names = table.heldNames(prefix, cursor == null ? "" : cursor, limit);
      if (names.size() <= limit) {
        return NamePage.of(names, null);
      }
      List<String> page = names.subList(0, limit);
      return NamePage.of(page, page.get(limit - 1));
    } catch (SQLException e) {
      throw unavailable("listing locks under '" + prefix + "'", e);
    }
  }

  /**
   * Semaphores and read-write locks: one range of the leases table's primary key ({@link
   * SharedTable#liveNames}), {@code limit + 1} rows of live leases under the prefix, after the
   * cursor (the page's last name), in name order. A name with several leases has several rows, so a
   * page may hold fewer names than rows; the next page starts after its last name, which is listed
   * whatever leases of it the page did not read. Nothing is taken or renewed.
   */
  @Override
  public NamePage listNames(
      String prefix, String cursor, int limit, Guarantees.Primitive primitive) {
    if (primitive == Guarantees.Primitive.LOCK) {
      return listNames(prefix, cursor, limit);
    }
    String kind = sharedKind(primitive);
    List<String> rows;
    try {
      rows = shared.liveNames(kind, prefix, cursor == null ? "" : cursor, limit);
    } catch (SQLException e) {
      throw unavailable(
          "listing " + Claim.noun(claimKind(primitive)) + "s under '" + prefix + "'", e);
    }
    // distinct names, in the rows' order (repeats of a name come one after the other)
    List<String> names = new ArrayList<>();
    for (String n : rows) {
      if (names.isEmpty() || !names.get(names.size() - 1).equals(n)) {
        names.add(n);
      }
    }
    List<String> page = names.size() > limit ? names.subList(0, limit) : names;
    String next = rows.size() > limit && !page.isEmpty() ? page.get(page.size() - 1) : null;
    List<String> listed = new ArrayList<>(page.size());
    for (String n : page) {
      if (!n.equals(LeaseStatements.FLOOR_NAME)) { // the reserved row is no one's name
        listed.add(n);
      }
    }
    return NamePage.of(listed, next);
  }

  /**
   * The live leases of a semaphore or read-write lock, read (not locked, nothing written) from the
   * leases table by the database clock: a semaphore's holdings, a read-write lock's readers or its
   * writer. Writers' marks and expired leases are not holders.
   */
  @Override
  public HeldLock inspectHolders(String name, Guarantees.Primitive primitive) {
    String kind = sharedKind(primitive);
    if (name.equals(LeaseStatements.FLOOR_NAME)) {
      return null;
    }
    List<SharedTable.Holding> live;
    try {
      live = shared.holders(kind, name);
    } catch (SQLException e) {
      throw unavailable(
          "reading the holders of " + Claim.noun(claimKind(primitive)) + " '" + name + "'", e);
    }
    if (live.isEmpty()) {
      return null;
    }
    HeldLock.Kind heldKind = HeldLock.Kind.SEMAPHORE;
    List<SharedTable.Holding> holders = live;
    if (primitive == Guarantees.Primitive.READ_WRITE_LOCK) {
      SharedTable.Holding writer = null;
      for (SharedTable.Holding h : live) {
        if (h.side.equals("W") && (writer == null || h.fence > writer.fence)) {
          writer = h; // one at most: a write lease is granted only while no lease lives
        }
      }
      heldKind = writer == null ? HeldLock.Kind.READ : HeldLock.Kind.WRITE;
      holders = writer == null ? live : List.of(writer);
    }
    List<LockState> states = new ArrayList<>(holders.size());
    for (SharedTable.Holding h : holders) {
      states.add(
          LockState.held()
              .withFencingToken(h.fence)
              .withRemaining(Duration.ofMillis(h.remainingMillis))
              .withHolder(h.owner));
    }
    return HeldLock.of(name, heldKind, states);
  }

  private static String sharedKind(Guarantees.Primitive primitive) {
    switch (primitive) {
      case SEMAPHORE:
        return SharedTable.SEMAPHORE;
      case READ_WRITE_LOCK:
        return SharedTable.READ_WRITE;
      default:
        throw new IllegalArgumentException(
            "`primitive` was "
                + primitive
                + " but only semaphores and read-write locks are shared");
    }
  }

  private static Claim.Kind claimKind(Guarantees.Primitive primitive) {
    return primitive == Guarantees.Primitive.SEMAPHORE ? Claim.Kind.PERMIT : Claim.Kind.READ;
  }

  @Override
  public boolean breakLock(String name) {
    try {
      return table.breakLock(name);
    } catch (SQLException e) {
      throw unavailable("breaking lock '" + name + "'", e);
    }
  }

  /**
   * PostgreSQL: the client's listening connection, on which a release is announced while a waiter
   * is queued (when the next leader follows at once). Elsewhere none: a release there rings only
   * the waiters' own bells.
   */
  @Override
  public dev.locksmith.spi.HolderWatch watchHolder(String name, Runnable changed) {
    if (listener == null) {
      return null;
    }
    Runnable wake = changed::run; // one object of our own, to leave with
    listener.register(name, wake);
    // in place: the client's connection listens on the table's channel already (or, connecting,
    // wakes every registered waiter once it does)
    wake.run();
    return dev.locksmith.spi.HolderWatch.of(false, () -> listener.unregister(name, wake));
  }

  @Override
  public LockState inspect(String name) {
    try {
      return table.state(name);
    } catch (SQLException e) {
      throw unavailable("reading the state of lock '" + name + "'", e);
    }
  }

  private BackendUnavailableException unavailable(String what, SQLException e) {
    return new BackendUnavailableException(
        what
            + " on "
            + endpoint
            + " failed: "
            + JdbcLockProvider.describe(e, secrets)
            + " (SQL state "
            + e.getSQLState()
            + ", timeout "
            + Durations.format(ioTimeout)
            + ")",
        secrets.scrubbed(e));
  }

  private static String truncate(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max);
  }

  @Override
  public void abandon() {
    close(); // dropping the pool's connections releases nothing: the rows stay until they expire
  }

  @Override
  public void close() {
    renewer.shutdownNow();
    if (purger != null) {
      purger.shutdownNow();
    }
    if (listener != null) {
      listener.close();
    }
    if (bells != null) {
      bells.close();
    }
    try {
      if (pool != null) {
        pool.close();
      }
    } catch (Exception e) {
      LOG.warn("closing the connection pool for {} failed: {}", endpoint, e.toString());
    } finally {
      onClose.run();
    }
  }

  @Override
  public String toString() {
    return "jdbc lease table " + table.table() + " on " + endpoint;
  }
}
