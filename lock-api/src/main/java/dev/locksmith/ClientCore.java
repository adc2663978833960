package dev.locksmith;

import dev.locksmith.spi.Abandonable;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything that is the same for every backend: waiting with deadlines, interrupts and
 * cancellation; reentrancy; one renewal scheduler for all leases of the client, which hands the
 * backend every lease due at about the same time in one call; expiry and loss detection; event
 * dispatch on one thread of its own.
 */
final class ClientCore implements LockClient, BackendContext, Abandonable {
  private static final Logger LOG = LoggerFactory.getLogger(ClientCore.class);
  private static final AtomicInteger CLIENTS = new AtomicInteger();

  private final LockConfig config;
  private final String clientId;
  private final long recheckNanos;
  private final LockEvents events;

  /**
   * False for {@link LockEvents#NONE}: then no event is handed to the event thread (two thread
   * wake-ups per acquire and release).
   */
  private final boolean listening;

  private LockBackend backend;
  private Guarantees guarantees;

  private final AtomicLong leaseSeq = new AtomicLong();

  /**
   * Moves on every {@link #allLeasesLost}: a session grant polled before it must not outlive it.
   */
  private final AtomicLong sessionEpoch = new AtomicLong();

  private final Map<String, HeldLease> held = new ConcurrentHashMap<>();
  private final Map<ThreadKey, HeldLease> byThread = new ConcurrentHashMap<>();
  private final Map<String, Set<Waiter>> waiting = new ConcurrentHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  private final ScheduledExecutorService scheduler;
  private final ExecutorService dispatcher;
  private final ExecutorService background;
  private final ReentrantLock tickLock = new ReentrantLock();
  private ScheduledFuture<?> nextTick;
  private long nextTickAt = Long.MAX_VALUE;

  private static final class ThreadKey {
    final String name;
    final Thread thread;

    ThreadKey(String name, Thread thread) {
      this.name = name;
      this.thread = thread;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof ThreadKey
          && ((ThreadKey) o).name.equals(name)
          && ((ThreadKey) o).thread == thread;
    }

    @Override
    public int hashCode() {
      return name.hashCode() * 31 + System.identityHashCode(thread);
    }
  }

  ClientCore(LockConfig config) {
    this.config = config;
    this.clientId =
        ProcessHandle.current().pid()
            + "-"
            + Long.toHexString(Double.doubleToLongBits(Math.random()) ^ System.nanoTime())
            + "-"
            + CLIENTS.incrementAndGet();
    this.recheckNanos = config.recheck().toNanos();
    this.events = config.events();
    this.listening = events != LockEvents.NONE;
    String tag = config.uri().scheme() + "-" + CLIENTS.get();
    this.scheduler = Executors.newSingleThreadScheduledExecutor(daemon("locksmith-renewer-" + tag));
    this.dispatcher = Executors.newSingleThreadExecutor(daemon("locksmith-events-" + tag));
    this.background = Executors.newCachedThreadPool(daemon("locksmith-waiter-" + tag));
  }

  void start(LockBackend backend) {
    this.backend = backend;
    this.guarantees = Objects.requireNonNull(backend.guarantees(), "backend guarantees");
  }

  private static ThreadFactory daemon(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  // ---------------------------------------------------------------- LockClient

  @Override
  public DistributedLock lock(String name) {
    return lock(name, config.defaults());
  }

  @Override
  public DistributedLock lock(String name, LockOptions options) {
    Names.check(name);
    Objects.requireNonNull(
        options, "`options` was null but it must be LockOptions, such as LockOptions.defaults()");
    ensureOpen();
    return new LockHandle(this, name, Claim.exclusive(), options);
  }

  @Override
  public DistributedLock semaphore(String name, int permits) {
    return semaphore(name, permits, config.defaults().toBuilder().reentrant(false).build());
  }

  @Override
  public DistributedLock semaphore(String name, int permits, LockOptions options) {
    Names.check(name);
    Claim claim = Claim.permit(permits);
    Objects.requireNonNull(
        options, "`options` was null but it must be LockOptions, such as LockOptions.defaults()");
    ensureOpen();
    requireFeature(Guarantees.Feature.SEMAPHORES, "semaphore");
    return new LockHandle(this, name, claim, options);
  }

  @Override
  public DistributedReadWriteLock readWriteLock(String name) {
    return readWriteLock(name, config.defaults());
  }

  @Override
  public DistributedReadWriteLock readWriteLock(String name, LockOptions options) {
    Names.check(name);
    Objects.requireNonNull(
        options, "`options` was null but it must be LockOptions, such as LockOptions.defaults()");
    ensureOpen();
    requireFeature(Guarantees.Feature.READ_WRITE_LOCKS, "readWriteLock");
    DistributedLock read = new LockHandle(this, name, Claim.read(), options);
    DistributedLock write = new LockHandle(this, name, Claim.write(), options);
    return new DistributedReadWriteLock() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public DistributedLock readLock() {
        return read;
      }

      @Override
      public DistributedLock writeLock() {
        return write;
      }

      @Override
      public String toString() {
        return "DistributedReadWriteLock{'" + name + "', " + options + "}";
      }
    };
  }

  @Override
  public Guarantees guarantees() {
    return guarantees;
  }

  @Override
  public LockConfig config() {
    return config;
  }

  @Override
  public String clientId() {
    return clientId;
  }

  @Override
  public Duration recheck() {
    return config.recheck();
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new IllegalStateException("lock client for " + config.uri() + " is closed");
    }
  }

  // ---------------------------------------------------------------- acquiring

  /**
   * The one acquire loop every backend shares.
   *
   * @return the lease, or null when the deadline passed
   * @throws CancellationException if {@code waiter} was cancelled
   */
  LockState inspect(String name) {
    ensureOpen();
    LockState state = backend.inspect(name);
    if (state == null) {
      throw new IllegalStateException(
          "the backend for " + config.uri() + " returned no state for lock '" + name + "'");
    }
    return state;
  }

  LeaseHandle acquire(
      String name, Claim claim, LockOptions options, long timeoutNanos, Waiter waiter, Thread owner)
      throws InterruptedException {
    ensureOpen();
    String what = HeldLease.describe(name, claim);
    if (Thread.interrupted()) {
      throw new InterruptedException("interrupted before acquiring " + what);
    }
    long start = System.nanoTime();
    boolean permit = claim.kind() == Claim.Kind.PERMIT;
    HeldLease mine =
        owner == null ? null : byThread.get(new ThreadKey(HeldLease.threadKey(name, claim), owner));
    if (mine != null && options.reentrant() && mine.enterAgain()) {
      return new LeaseHandle(this, mine);
    }
    if (mine != null && !options.reentrant() && !permit && mine.isValid()) {
      if (timeoutNanos == 0) {
        emit(() -> events.gaveUp(name, Duration.ZERO, LockEvents.GiveUpReason.TIMEOUT));
        return null; // one attempt finds the lock taken, as for any holder
      }
      // waiting for our own release would never end (or only at the deadline): say so at once
      throw new IllegalStateException(
          what
              + " is already held by the calling thread ("
              + owner.getName()
              + ") through this client, and reentrancy is off (LockOptions.reentrant(false)): "
              + "waiting would never end; release that lease first, or turn reentrancy on");
    }
    if (owner != null && (claim.kind() == Claim.Kind.READ || claim.kind() == Claim.Kind.WRITE)) {
      Claim other = claim.kind() == Claim.Kind.READ ? Claim.write() : Claim.read();
      HeldLease otherSide = byThread.get(new ThreadKey(HeldLease.threadKey(name, other), owner));
      if (otherSide != null && otherSide.isValid()) {
        if (timeoutNanos == 0) {
          emit(() -> events.gaveUp(name, Duration.ZERO, LockEvents.GiveUpReason.TIMEOUT));
          return null; // one attempt finds the other side held, as for any holder
        }
        throw new IllegalStateException(
            "the calling thread ("
                + owner.getName()
                + ") holds the "
                + other
                + " lock of read-write lock '"
                + name
                + "' through this client and asked for the "
                + claim
                + " lock: "
                + (claim.kind() == Claim.Kind.WRITE ? "upgrading" : "downgrading")
                + " is not supported, as the wait "
                + "would never end; release the "
                + other
                + " lock first");
      }
    }
    String key = HeldLease.resourceKey(name, claim);
    boolean bounded = timeoutNanos != Long.MAX_VALUE;
    long deadline = start + timeoutNanos;
    String ownerId = clientId + ":" + leaseSeq.incrementAndGet();
    long leaseNanos = options.lease().toNanos();
    // compute() keeps adding and removing atomic per name, so no waiter lands in a set that was
    // just dropped
    waiting.compute(
        key,
        (k, set) -> {
          Set<Waiter> peers = set == null ? ConcurrentHashMap.newKeySet() : set;
          peers.add(waiter);
          return peers;
        });
    LockAttempt attempt = null;
    boolean granted = false;
    LockEvents.GiveUpReason reason = LockEvents.GiveUpReason.TIMEOUT;
    try {
      attempt = backend.attempt(name, claim, ownerId, options.lease(), waiter::wake);
      while (true) {
        if (waiter.isCancelled()) {
          throw new CancellationException("acquiring " + what + " was cancelled");
        }
        if (closed.get()) {
          throw new LockException(
              "lock client for " + config.uri() + " was closed while waiting for " + what);
        }
        waiter.clear();
        long pollStart = System.nanoTime();
        long epoch = sessionEpoch.get();
        // no wait time: the only poll, and the backend may leave its wait queue alone
        Poll poll = timeoutNanos == 0 ? attempt.pollWithoutWaiting() : attempt.poll();
        if (poll.isGranted()) {
          HeldLease lease =
              register(name, claim, ownerId, options, poll, pollStart, leaseNanos, owner);
          granted = true;
          if (poll.isSessionGrant() && sessionEpoch.get() != epoch) {
            // The session ended while this grant was on its way: it is registered now, so either
            // allLeasesLost saw it or this catches it. Never hand out a lease that is void from the
            // start: give it back and ask again, on the backend's next session, as a new lease.
            releaseQuietly(lease);
            granted = false;
            ownerId = clientId + ":" + leaseSeq.incrementAndGet();
            attempt = backend.attempt(name, claim, ownerId, options.lease(), waiter::wake);
            continue;
          }
          if (poll.isSessionGrant()
              && !options.autoRenew()
              && guarantees.has(Guarantees.Feature.EXTEND)) {
            serverExpiry(lease);
          }
          long waited = System.nanoTime() - start;
          emit(() -> events.acquired(name, lease.token, Duration.ofNanos(waited)));
          return new LeaseHandle(this, lease);
        }
        long now = System.nanoTime();
        long left = bounded ? deadline - now : Long.MAX_VALUE;
        if (left <= 0) {
          return null;
        }
        long sleep =
            Math.min(left, Math.min(recheckNanos, Durations.toNanosSaturated(poll.retryAfter())));
        if (sleep > 0) {
          waiter.await(sleep);
        }
      }
    } catch (InterruptedException e) {
      reason = LockEvents.GiveUpReason.INTERRUPTED;
      throw e;
    } catch (CancellationException e) {
      reason = LockEvents.GiveUpReason.CANCELLED;
      throw e;
    } catch (RuntimeException | Error e) {
      reason = LockEvents.GiveUpReason.ERROR;
      throw e;
    } finally {
      waiting.computeIfPresent(
          key,
          (k, peers) -> {
            peers.remove(waiter);
            return peers.isEmpty() ? null : peers;
          });
      if (!granted) {
        if (attempt != null) {
          try {
            attempt.abandon();
          } catch (RuntimeException e) {
            LOG.warn("withdrawing from {} failed: {}", what, e.toString());
          }
        }
        long waited = System.nanoTime() - start;
        LockEvents.GiveUpReason why = reason;
        emit(() -> events.gaveUp(name, Duration.ofNanos(waited), why));
      }
    }
  }

  private HeldLease register(
      String name,
      Claim claim,
      String ownerId,
      LockOptions options,
      Poll poll,
      long pollStart,
      long leaseNanos,
      Thread owner) {
    boolean session = poll.isSessionGrant();
    boolean sessionHeld = session && options.autoRenew();
    boolean scheduled = !session && options.autoRenew();
    long bound = poll.validUntilNanos(pollStart, leaseNanos);
    // a session grant held without renewal ends with its lease, or sooner if the session's bound
    // comes first
    long leaseEnd = pollStart + leaseNanos;
    long validUntil =
        session && !sessionHeld && (bound == Long.MAX_VALUE || bound - leaseEnd > 0)
            ? leaseEnd
            : bound;
    BackendLease bl =
        new BackendLease(name, claim, ownerId, poll.fencingToken(), options.lease(), poll.state());
    HeldLease lease =
        new HeldLease(
            bl, scheduled, session, sessionHeld, owner, pollStart, validUntil, leaseNanos);
    held.put(ownerId, lease);
    if (owner != null && (claim.kind() != Claim.Kind.PERMIT || options.reentrant())) {
      // reentrant or not: a nested acquire must find it (a semaphore without reentrancy takes a new
      // permit instead)
      byThread.put(new ThreadKey(lease.threadKey, owner), lease);
    }
    if (closed.get()) {
      // close() ran while we polled: it may have missed this lease, so give it back now
      releaseQuietly(lease);
      throw new LockException(
          "lock client for "
              + config.uri()
              + " was closed while acquiring "
              + HeldLease.describe(name, claim));
    }
    scheduleBy(lease.nextDue());
    return lease;
  }

  CompletableFuture<Lease> acquireAsync(
      String name, Claim claim, LockOptions options, long timeoutNanos, Duration timeout) {
    ensureOpen();
    Waiter waiter = new Waiter();
    CompletableFuture<Lease> future = new CompletableFuture<>();
    // Completed by anyone but us (cancel, orTimeout): withdraw the waiter.
    future.whenComplete((lease, error) -> waiter.cancel());
    try {
      background.execute(
          () -> {
            try {
              LeaseHandle lease = acquire(name, claim, options, timeoutNanos, waiter, null);
              if (lease == null) {
                future.completeExceptionally(new LockTimeoutException(name, timeout));
              } else if (!future.complete(lease)) {
                lease.close();
              }
            } catch (CancellationException e) {
              future.cancel(false);
            } catch (InterruptedException e) {
              future.completeExceptionally(
                  new LockException(
                      "acquiring " + HeldLease.describe(name, claim) + " was interrupted", e));
              Thread.currentThread().interrupt();
            } catch (Throwable e) {
              future.completeExceptionally(e);
            }
          });
    } catch (RejectedExecutionException e) {
      future.completeExceptionally(
          new IllegalStateException("lock client for " + config.uri() + " is closed"));
    }
    return future;
  }

  /**
   * Finds the lease a thread holds reentrantly, for the {@link java.util.concurrent.locks.Lock}
   * view.
   */
  HeldLease heldBy(String name, Claim claim, Thread thread) {
    return byThread.get(new ThreadKey(HeldLease.threadKey(name, claim), thread));
  }

  /**
   * A session grant held without auto-renew would stay held by the server until the session ends;
   * have the server end it with its lease instead, so a holder that vanishes frees it on time.
   */
  private void serverExpiry(HeldLease lease) {
    long left = lease.validUntil - System.nanoTime();
    if (left <= 0) {
      return; // the scheduler ends it now
    }
    try {
      if (!backend.extend(lease.backendLease, ceilMillis(left))) {
        markLost(
            lease,
            LeaseLostException.Reason.TAKEN,
            "the server no longer had it as ours when its expiry was set");
      }
    } catch (UnsupportedOperationException e) {
      LOG.debug(
          "{} (token {}): the backend cannot have the server end it with its lease; this client"
              + " ends it on time, and the server when the session ends: {}",
          HeldLease.describe(lease.name, lease.claim),
          lease.token,
          e.toString());
    } catch (RuntimeException e) {
      LOG.warn(
          "lock '{}' (token {}): could not have the server end it with its lease, so a crash of"
              + " this process leaves it held until the session ends; this client still ends it on"
              + " time: {}",
          lease.name,
          lease.token,
          e.toString());
    }
  }

  private static Duration ceilMillis(long nanos) {
    return Duration.ofMillis(Math.max(1, (nanos + 999_999) / 1_000_000));
  }

  // ---------------------------------------------------------------- lease control

  private void requireFeature(Guarantees.Feature feature, String method) {
    if (!guarantees.has(feature)) {
      throw new UnsupportedOperationException(
          method
              + "() needs feature "
              + feature
              + ", which the backend for "
              + config.uri()
              + " does not declare (it declares "
              + guarantees.features()
              + ")");
    }
  }

  private static void requireExclusive(HeldLease lease, String method) {
    if (!lease.claim.isExclusive()) {
      throw new UnsupportedOperationException(
          method
              + "() is for leases of exclusive locks; this lease is on "
              + HeldLease.describe(lease.name, lease.claim));
    }
  }

  /** Moves the server's expiry of a lease held without auto-renew. */
  boolean extend(HeldLease lease, Duration newLease) {
    if (newLease == null) {
      throw new NullPointerException(
          "`lease` was null but it must be a duration from "
              + Durations.format(LockOptions.MIN_LEASE)
              + " to 7d");
    }
    LockOptions.checkLease(newLease);
    if (lease.scheduledRenewal || lease.sessionHeld) {
      throw new IllegalStateException(
          "lease on lock '"
              + lease.name
              + "' (token "
              + lease.token
              + ") is renewed automatically, so extend() is not for it: take the lock with"
              + " LockOptions.autoRenew(false) to set its expiry yourself");
    }
    requireFeature(Guarantees.Feature.EXTEND, "extend");
    requireExclusive(lease, "extend");
    if (!lease.isValid()) {
      return false;
    }
    long start = System.nanoTime();
    boolean ours = backend.extend(lease.backendLease, newLease);
    if (!ours) {
      markLost(
          lease,
          LeaseLostException.Reason.TAKEN,
          "extend found the server no longer had it as ours");
      return false;
    }
    if (lease.state.get() != HeldLease.State.HELD) {
      // released or ended by the scheduler while the server moved the expiry: give it back
      try {
        backend.release(lease.backendLease);
      } catch (RuntimeException e) {
        LOG.warn(
            "lock '{}' (token {}) ended while being extended, and giving it back failed; it expires"
                + " at the new expiry: {}",
            lease.name,
            lease.token,
            e.toString());
      }
      return false;
    }
    lease.validUntil = start + newLease.toNanos();
    scheduleBy(lease.nextDue());
    return true;
  }

  /**
   * Gives a lease up and has the server keep the lock for {@code keepNanos}. The caller checked the
   * arguments.
   */
  boolean releaseHoldingAfter(HeldLease lease, Duration keep) {
    int left = lease.exitOnce();
    if (left != 0) {
      return left > 0 && lease.isValid();
    }
    if (!lease.state.compareAndSet(HeldLease.State.HELD, HeldLease.State.RELEASED)) {
      return false;
    }
    forget(lease);
    boolean inTime = System.nanoTime() - lease.validUntil < 0;
    boolean ours = false;
    try {
      // past its lease, the server has let it go: a hold now could only be on a lock that is not
      // ours
      ours =
          inTime
              ? backend.releaseAfter(lease.backendLease, keep)
              : backend.release(lease.backendLease);
      return ours && inTime;
    } finally {
      wakeWaiters(lease.resourceKey);
      boolean stillHeld = ours && inTime;
      long heldFor = System.nanoTime() - lease.grantedAt;
      emit(() -> events.released(lease.name, lease.token, Duration.ofNanos(heldFor), stillHeld));
    }
  }

  void checkHoldAfterRelease(HeldLease lease) {
    requireFeature(Guarantees.Feature.HOLD_AFTER_RELEASE, "releaseAfter");
    requireExclusive(lease, "releaseAfter");
    if (lease.holds.get() > 1) {
      throw new IllegalStateException(
          "lock '"
              + lease.name
              + "' is held "
              + lease.holds.get()
              + " times by "
              + (lease.owner == null ? "this lease" : "thread " + lease.owner.getName())
              + " (reentrantly): releaseAfter() must end the last holding, so release the others"
              + " first");
    }
  }

  // ---------------------------------------------------------------- releasing

  /** Drops one holding; the last one releases the lock. */
  boolean releaseHolding(HeldLease lease) {
    int left = lease.exitOnce();
    if (left != 0) {
      return left > 0 && lease.isValid();
    }
    if (!lease.state.compareAndSet(HeldLease.State.HELD, HeldLease.State.RELEASED)) {
      return false;
    }
    forget(lease);
    boolean inTime = System.nanoTime() - lease.validUntil < 0;
    boolean ours = false;
    try {
      ours = backend.release(lease.backendLease);
      return ours && inTime;
    } finally {
      wakeWaiters(lease.resourceKey);
      boolean stillHeld = ours && inTime;
      long heldFor = System.nanoTime() - lease.grantedAt;
      emit(() -> events.released(lease.name, lease.token, Duration.ofNanos(heldFor), stillHeld));
    }
  }

  private void releaseQuietly(HeldLease lease) {
    if (lease.state.compareAndSet(HeldLease.State.HELD, HeldLease.State.RELEASED)) {
      forget(lease);
      try {
        backend.release(lease.backendLease);
      } catch (RuntimeException e) {
        LOG.warn(
            "releasing lock '{}' (token {}) failed; it expires with its lease: {}",
            lease.name,
            lease.token,
            e.toString());
      } finally {
        wakeWaiters(lease.resourceKey);
      }
    }
  }

  private void forget(HeldLease lease) {
    held.remove(lease.ownerId, lease);
    if (lease.owner != null) {
      byThread.remove(new ThreadKey(lease.threadKey, lease.owner), lease);
    }
  }

  /**
   * Waiters of this client for the same resource need no server round trip to learn of a release.
   */
  private void wakeWaiters(String resourceKey) {
    Set<Waiter> peers = waiting.get(resourceKey);
    if (peers != null) {
      peers.forEach(Waiter::wake);
    }
  }

  // ---------------------------------------------------------------- loss

  private void markLost(HeldLease lease, LeaseLostException.Reason reason, String detail) {
    if (!lease.state.compareAndSet(HeldLease.State.HELD, HeldLease.State.LOST)) {
      return;
    }
    forget(lease);
    LeaseLostException loss = new LeaseLostException(lease.name, lease.token, reason, detail);
    if (reason == LeaseLostException.Reason.EXPIRED) {
      LOG.debug(
          loss.getMessage()); // held without renewal, as asked: running out is the plan, not a
      // fault
    } else {
      LOG.warn(loss.getMessage());
    }
    dispatch(
        () -> {
          lease.lost.complete(loss);
          events.lost(lease.name, lease.token, loss);
        });
    wakeWaiters(lease.resourceKey);
  }

  @Override
  public void leaseLost(String ownerId, LeaseLostException.Reason reason, String detail) {
    HeldLease lease = held.get(ownerId);
    if (lease != null) {
      markLost(lease, reason, detail);
    }
  }

  @Override
  public void allLeasesLost(String detail) {
    sessionEpoch
        .incrementAndGet(); // first, so a grant registered after the loop is caught by its epoch
    // check
    for (HeldLease lease : held.values()) {
      markLost(lease, LeaseLostException.Reason.SESSION_LOST, detail);
    }
  }

  @Override
  public void leaseValidUntil(String ownerId, long validUntilNanos) {
    HeldLease lease = held.get(ownerId);
    if (lease != null && lease.sessionHeld) {
      lease.validUntil = validUntilNanos;
      scheduleBy(lease.nextDue());
    }
  }

  // ---------------------------------------------------------------- the scheduler

  /**
   * Makes sure a tick runs no later than {@code due}. O(1): the tick itself finds the next due
   * time.
   */
  private void scheduleBy(long due) {
    if (due == Long.MAX_VALUE || closed.get()) {
      return;
    }
    tickLock.lock();
    try {
      if (nextTick != null && nextTickAt - due <= 0) {
        return;
      }
      if (nextTick != null) {
        nextTick.cancel(false);
      }
      nextTickAt = due;
      long delay = Math.max(0, due - System.nanoTime());
      try {
        nextTick = scheduler.schedule(this::tick, delay, TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        nextTick = null; // closing
      }
    } finally {
      tickLock.unlock();
    }
  }

  private void tick() {
    tickLock.lock();
    try {
      nextTick = null;
      nextTickAt = Long.MAX_VALUE;
    } finally {
      tickLock.unlock();
    }
    try {
      long now = System.nanoTime();
      List<HeldLease> due = new ArrayList<>();
      for (HeldLease lease : held.values()) {
        if (lease.state.get() != HeldLease.State.HELD) {
          continue;
        }
        if (now - lease.validUntil >= 0) {
          expire(lease);
        } else if (lease.scheduledRenewal && lease.nextRenewAt - now <= lease.renewInterval() / 2) {
          // due now, or due soon enough to share this round trip with the others
          due.add(lease);
        }
      }
      if (!due.isEmpty()) {
        renew(due);
      }
    } catch (RuntimeException e) {
      LOG.error("lease scheduler failed; retrying", e);
    } finally {
      long next = Long.MAX_VALUE;
      for (HeldLease lease : held.values()) {
        if (lease.state.get() == HeldLease.State.HELD) {
          long d = lease.nextDue();
          if (d - next < 0 || next == Long.MAX_VALUE) {
            next = d;
          }
        }
      }
      scheduleBy(next);
    }
  }

  private void expire(HeldLease lease) {
    if (lease.scheduledRenewal) {
      markLost(
          lease,
          LeaseLostException.Reason.RENEWAL_FAILED,
          "not renewed within its lease of "
              + Durations.format(Duration.ofNanos(lease.leaseNanos)));
    } else if (lease.sessionHeld) {
      markLost(
          lease,
          LeaseLostException.Reason.SESSION_LOST,
          "connection in doubt past the session timeout");
    } else {
      markLost(
          lease,
          LeaseLostException.Reason.EXPIRED,
          "auto-renew is off and the lease of "
              + Durations.format(Duration.ofNanos(lease.leaseNanos))
              + " ran out");
    }
    if (!lease.sessionGrant) {
      return; // the server's own lease has run out too
    }
    // A lock granted for a session (ZooKeeper, etcd) is freed only by a release.
    runInBackground(
        () -> {
          try {
            backend.release(lease.backendLease);
          } catch (RuntimeException e) {
            LOG.debug("cleaning up expired lease on '{}' failed: {}", lease.name, e.toString());
          }
        });
  }

  private void renew(List<HeldLease> due) {
    List<BackendLease> batch = new ArrayList<>(due.size());
    for (HeldLease lease : due) {
      batch.add(lease.backendLease);
    }
    long start = System.nanoTime();
    List<Renewal> outcomes;
    try {
      outcomes = backend.renew(batch);
      if (outcomes.size() != batch.size()) {
        throw new IllegalStateException(
            "backend answered " + outcomes.size() + " renewals for " + batch.size() + " leases");
      }
    } catch (RuntimeException e) {
      List<Renewal> failed = new ArrayList<>(batch.size());
      for (int i = 0; i < batch.size(); i++) {
        failed.add(Renewal.failed(e));
      }
      outcomes = failed;
    }
    long end = System.nanoTime();
    for (int i = 0; i < due.size(); i++) {
      HeldLease lease = due.get(i);
      Renewal outcome = outcomes.get(i);
      if (lease.state.get() != HeldLease.State.HELD) {
        continue;
      }
      switch (outcome.kind()) {
        case RENEWED:
          lease.validUntil = start + lease.leaseNanos;
          lease.nextRenewAt = start + lease.renewInterval();
          emit(() -> events.renewed(lease.name, lease.token, Duration.ofNanos(end - start)));
          break;
        case LOST:
          markLost(lease, LeaseLostException.Reason.TAKEN, outcome.detail());
          break;
        default:
          Throwable cause = outcome.cause();
          emit(() -> events.renewalFailed(lease.name, lease.token, cause));
          if (end - lease.validUntil >= 0) {
            markLost(
                lease,
                LeaseLostException.Reason.RENEWAL_FAILED,
                "could not reach the server: " + outcome.detail());
          } else {
            long retry =
                Math.max(
                    TimeUnit.MILLISECONDS.toNanos(5),
                    Math.min(lease.leaseNanos / 10, TimeUnit.SECONDS.toNanos(1)));
            lease.nextRenewAt = Math.min(end + retry, lease.validUntil);
          }
      }
    }
  }

  // ---------------------------------------------------------------- threads

  /** For tests: whether a waiter of this client waits for {@code name} now. */
  boolean isWaitingFor(String name) {
    return waiting.containsKey(name);
  }

  /**
   * Hands a listener event to the event thread, unless nobody listens. Loss signals always go
   * through {@link #dispatch}.
   */
  private void emit(Runnable event) {
    if (listening) {
      dispatch(event);
    }
  }

  private void dispatch(Runnable event) {
    Runnable guarded =
        () -> {
          try {
            event.run();
          } catch (RuntimeException e) {
            LOG.warn("lock event listener failed", e);
          }
        };
    try {
      dispatcher.execute(guarded);
    } catch (RejectedExecutionException e) {
      guarded.run(); // closed: deliver on this thread rather than drop a loss signal
    }
  }

  private void runInBackground(Runnable task) {
    try {
      background.execute(task);
    } catch (RejectedExecutionException e) {
      task.run();
    }
  }

  // ---------------------------------------------------------------- closing

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    stopWaitersAndScheduler();
    for (HeldLease lease : new ArrayList<>(held.values())) {
      if (lease.state.compareAndSet(HeldLease.State.HELD, HeldLease.State.LOST)) {
        forget(lease);
        try {
          backend.release(lease.backendLease);
        } catch (RuntimeException e) {
          LOG.warn(
              "releasing lock '{}' (token {}) on close failed; it expires with its lease: {}",
              lease.name,
              lease.token,
              e.toString());
        }
        signalClosed(lease, "the client was closed and released it");
      }
    }
    finish(false);
  }

  @Override
  public void abandon() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    stopWaitersAndScheduler();
    for (HeldLease lease : new ArrayList<>(held.values())) {
      if (lease.state.compareAndSet(HeldLease.State.HELD, HeldLease.State.LOST)) {
        forget(lease);
        signalClosed(lease, "the client was abandoned without releasing it");
      }
    }
    finish(true);
  }

  private void stopWaitersAndScheduler() {
    waiting.values().forEach(set -> set.forEach(Waiter::wake));
    scheduler.shutdownNow();
  }

  private void signalClosed(HeldLease lease, String detail) {
    LeaseLostException loss =
        new LeaseLostException(
            lease.name, lease.token, LeaseLostException.Reason.CLIENT_CLOSED, detail);
    dispatch(
        () -> {
          lease.lost.complete(loss);
          events.lost(lease.name, lease.token, loss);
        });
  }

  private void finish(boolean abandon) {
    background.shutdown();
    try {
      if (!background.awaitTermination(5, TimeUnit.SECONDS)) {
        LOG.warn("lock client for {}: waiters still running 5s after close", config.uri());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try {
      if (backend == null) {
        // opening failed: the provider closed what it had opened
      } else if (abandon) {
        backend.abandon();
      } else {
        backend.close();
      }
    } catch (RuntimeException e) {
      LOG.warn("closing the backend for {} failed: {}", config.uri(), e.toString());
    }
    dispatcher.shutdown();
  }

  @Override
  public String toString() {
    return "LockClient{"
        + config.uri()
        + ", id "
        + clientId
        + ", "
        + held.size()
        + " held"
        + (closed.get() ? ", closed" : "")
        + "}";
  }
}
