package dev.locksmith;

import dev.locksmith.spi.Abandonable;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.Poll;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
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
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Everything that is the same for every backend: waiting with deadlines, interrupts and
 * cancellation; reentrancy; one renewal scheduler for all leases of the client, which hands the
 * backend every lease due at about the same time in one call; expiry and loss detection; event
 * dispatch on one thread of its own. The scheduler is {@link LeaseScheduler}; extend and hold after
 * release are {@link LeaseControl}.
 */
final class ClientCore implements LockClient, BackendContext, Abandonable {
  private static final Logger LOG = LoggerFactory.getLogger(ClientCore.class);
  private static final AtomicInteger CLIENTS = new AtomicInteger();

  final LockConfig config;
  private final String clientId;
  private final long recheckNanos;
  final LockEvents events;

  /**
   * False for {@link LockEvents#NONE}: then no event is handed to the event thread (two thread
   * wake-ups per acquire and release).
   */
  private final boolean listening;

  LockBackend backend;
  Guarantees guarantees;

  private final AtomicLong leaseSeq = new AtomicLong();

  /**
   * Moves on every {@link #allLeasesLost}: a session grant polled before it must not outlive it.
   */
  private final AtomicLong sessionEpoch = new AtomicLong();

  final Map<String, HeldLease> held = new ConcurrentHashMap<>();
  private final Map<ThreadKey, HeldLease> byThread = new ConcurrentHashMap<>();
  private final Map<String, Set<Waiter>> waiting = new ConcurrentHashMap<>();
  final AtomicBoolean closed = new AtomicBoolean();

  /** The renewal and expiry scheduler of every lease of this client. */
  final LeaseScheduler scheduler;

  final LeaseControl leaseControl = new LeaseControl(this);
  private final ExecutorService dispatcher;
  private final ExecutorService background;

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
    this.scheduler =
        new LeaseScheduler(
            this,
            Executors.newSingleThreadScheduledExecutor(daemon("locksmith-renewer-" + tag)),
            Executors.newSingleThreadExecutor(daemon("locksmith-renewal-" + tag)));
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

  /**
   * @return the owner id of a new lease, asked for by the calling thread now: unique among all
   *     clients, and naming this client's application, host, process and the thread ({@link
   *     Holder})
   */
  /**
   * Who asks, where it is not the calling thread: an {@link Election} campaign sets its identity
   * here around its acquire, which runs on the calling thread; an asynchronous acquire sets the
   * asker it captured on its client thread.
   */
  static final ThreadLocal<String> ASKER = new ThreadLocal<>();

  private String nextOwnerId() {
    String asker = ASKER.get();
    return Holder.ownerId(
        config.application(),
        asker != null ? asker : Thread.currentThread().getName(),
        System.currentTimeMillis(),
        clientId,
        leaseSeq.incrementAndGet());
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

  /**
   * @throws UnsupportedOperationException naming {@code method} if the backend does not declare
   *     {@code feature}
   */
  void requireFeature(Guarantees.Feature feature, String method) {
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

  // ---------------------------------------------------------------- acquiring

  /**
   * The one acquire loop every backend shares.
   *
   * @return the lease, or null when the deadline passed
   * @throws CancellationException if {@code waiter} was cancelled
   */
  @Override
  public boolean breakLock(String name, String reason) {
    Names.check(name);
    Objects.requireNonNull(
        reason, "`reason` was null but it must say why the lock is broken, for the log");
    if (reason.isBlank() || reason.length() > MAX_REASON) {
      throw new IllegalArgumentException(
          "`reason` was '"
              + (reason.length() > 80 ? reason.substring(0, 80) + "…" : reason)
              + "' ("
              + reason.length()
              + " characters) but it must be 1 to "
              + MAX_REASON
              + " characters, not blank, saying why the lock is broken");
    }
    ensureOpen();
    requireFeature(Guarantees.Feature.BREAK_GLASS, "breakLock");
    LockState before =
        guarantees.has(Guarantees.Feature.STATE_READS) ? inspect(name) : LockState.unknown();
    boolean broken = backend.breakLock(name);
    if (broken) {
      LOG.warn(
          "lock '{}' was broken (break-glass) by {} on {}: {}; its holder was {}",
          name,
          config.application(),
          Holder.HOST,
          reason,
          before.isHeld()
              ? before.holderIdentity().map(Object::toString).orElse(before.toString())
              : "not read");
    } else {
      LOG.info("break-glass on lock '{}' found it free: {}", name, reason);
    }
    return broken;
  }

  @Override
  public LockPage list(String prefix, String cursor, int limit) {
    Objects.requireNonNull(
        prefix, "`prefix` was null but it must be the names' beginning, or '' for every lock");
    if (!prefix.isEmpty()) {
      try {
        Names.check(prefix);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(e.getMessage().replace("`name`", "`prefix`"), e);
      }
    }
    if (cursor != null && (cursor.isEmpty() || cursor.length() > MAX_CURSOR)) {
      throw new IllegalArgumentException(
          "`cursor` was '"
              + (cursor.length() > 40 ? cursor.substring(0, 40) + "…" : cursor)
              + "' but it must be null for the first page, or the next() of the page before");
    }
    if (limit < 1 || limit > MAX_PAGE) {
      throw new IllegalArgumentException(
          "`limit` was " + limit + " but it must be from 1 to " + MAX_PAGE);
    }
    ensureOpen();
    requireFeature(Guarantees.Feature.LISTING, "list");
    // the primitives listed, one after the other; a cursor is the primitive's letter, a colon and
    // the backend's cursor for it (empty: its first page)
    List<Guarantees.Primitive> listed = new ArrayList<>();
    for (Guarantees.Primitive p : Guarantees.Primitive.values()) {
      if (guarantees.has(Guarantees.Feature.LISTING, p)) {
        listed.add(p);
      }
    }
    int phase = 0;
    String backendCursor = null;
    if (cursor != null) {
      int colon = cursor.indexOf(':');
      phase = colon == 1 ? listed.indexOf(PHASES.get(cursor.charAt(0))) : -1;
      if (phase < 0) {
        throw new IllegalArgumentException(
            "`cursor` was '"
                + (cursor.length() > 40 ? cursor.substring(0, 40) + "…" : cursor)
                + "' but it must be null for the first page, or the next() of the page before");
      }
      backendCursor = cursor.length() == 2 ? null : cursor.substring(2);
    }
    // a phase that ends with room left on the page goes on with the next primitive's first names:
    // at most one backend page per primitive, so a page still costs a bounded number of reads
    List<HeldLock> locks = new ArrayList<>();
    String next = null;
    while (true) {
      Guarantees.Primitive primitive = listed.get(phase);
      dev.locksmith.spi.NamePage names =
          backend.listNames(prefix, backendCursor, limit - locks.size(), primitive);
      Set<String> seen = new HashSet<>();
      for (String name : names.names()) {
        if (name == null || !name.startsWith(prefix) || !seen.add(name)) {
          continue; // the backend's page may repeat a name, or reach past the prefix
        }
        if (primitive == Guarantees.Primitive.LOCK) {
          LockState state = inspect(name);
          if (state.isHeld()) {
            locks.add(new HeldLock(name, state));
          }
        } else {
          HeldLock held = inspectHolders(name, primitive);
          if (held != null) {
            locks.add(held);
          }
        }
      }
      if (names.next() != null) {
        next = letter(primitive) + ":" + names.next();
        break;
      }
      if (++phase == listed.size()) {
        break;
      }
      if (locks.size() >= limit) {
        next = letter(listed.get(phase)) + ":";
        break;
      }
      backendCursor = null;
    }
    return new LockPage(locks, next);
  }

  /** The primitives a listing's cursor names, by their letter. */
  private static final Map<Character, Guarantees.Primitive> PHASES =
      Map.of(
          'L', Guarantees.Primitive.LOCK,
          'S', Guarantees.Primitive.SEMAPHORE,
          'R', Guarantees.Primitive.READ_WRITE_LOCK);

  private static char letter(Guarantees.Primitive p) {
    return p == Guarantees.Primitive.LOCK ? 'L' : p == Guarantees.Primitive.SEMAPHORE ? 'S' : 'R';
  }

  /**
   * The holders of a semaphore or read-write lock, as the backend reads them, checked and with the
   * fencing floor added; null if nothing is held.
   */
  private HeldLock inspectHolders(String name, Guarantees.Primitive primitive) {
    HeldLock held = backend.inspectHolders(name, primitive);
    if (held == null) {
      return null;
    }
    boolean rw = primitive == Guarantees.Primitive.READ_WRITE_LOCK;
    boolean kindFits =
        rw
            ? held.kind() == HeldLock.Kind.READ || held.kind() == HeldLock.Kind.WRITE
            : held.kind() == HeldLock.Kind.SEMAPHORE;
    if (!held.name().equals(name) || !kindFits) {
      throw new IllegalStateException(
          "the backend for "
              + config.uri()
              + " answered "
              + held
              + " when asked for the holders of "
              + primitive
              + " '"
              + name
              + "'");
    }
    long floor = config.fencingFloor();
    if (floor == 0) {
      return held;
    }
    List<LockState> raised = new ArrayList<>();
    for (LockState s : held.holders()) {
      raised.add(
          s.fencingToken().isPresent()
              ? s.withFencingToken(s.fencingToken().getAsLong() + floor)
              : s);
    }
    return HeldLock.of(name, held.kind(), raised);
  }

  /** The largest page {@link #list} reads. */
  static final int MAX_PAGE = 1000;

  /** The longest cursor {@link #list} takes back. */
  static final int MAX_CURSOR = 4096;

  /** The longest reason {@link #breakLock} takes. */
  static final int MAX_REASON = 500;

  /**
   * The backend's watch on who holds {@code name} ({@link LockBackend#watchHolder}), for {@link
   * Election#observe}; null where it has none, or does not declare state reads.
   */
  dev.locksmith.spi.HolderWatch watchHolder(String name, Runnable changed) {
    ensureOpen();
    if (!guarantees.has(Guarantees.Feature.STATE_READS)) {
      return null;
    }
    return backend.watchHolder(name, changed);
  }

  LockState inspect(String name) {
    ensureOpen();
    LockState state = backend.inspect(name);
    if (state == null) {
      throw new IllegalStateException(
          "the backend for " + config.uri() + " returned no state for lock '" + name + "'");
    }
    long floor = config.fencingFloor();
    if (floor != 0 && state.fencingToken().isPresent()) {
      // the holder's token as this client's leases show it: above the floor
      return state.withFencingToken(state.fencingToken().getAsLong() + floor);
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
    String ownerId = nextOwnerId();
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
    LockException closedSignal = null; // thrown by the loop itself when it sees the client closed
    try {
      attempt = backend.attempt(name, claim, ownerId, options.lease(), waiter::wake);
      while (true) {
        if (waiter.isCancelled()) {
          throw new CancellationException("acquiring " + what + " was cancelled");
        }
        if (closed.get()) {
          closedSignal =
              new LockException(
                  "lock client for " + config.uri() + " was closed while waiting for " + what);
          throw closedSignal;
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
            ownerId = nextOwnerId();
            attempt = backend.attempt(name, claim, ownerId, options.lease(), waiter::wake);
            continue;
          }
          if (options.autoRenew() && System.nanoTime() - lease.validUntil >= 0) {
            // The grant's answer came after the lease it was granted for could have ended on the
            // server (an answer held up on the network, a pause of this process), so another may
            // hold the lock by now: never hand out a renewed lease that is void from the start.
            // Give it back (owner-checked: nothing of another's is freed) and ask again while the
            // wait lasts (lock-compare's DROPPED_GRANT row on Redis). A lease without renewal is
            // handed out as it is, already ended (isValid() false): its caller asked for a fixed
            // lease, which may be shorter than a round trip (ShedLock's clamped lockAtMostFor).
            LOG.debug(
                "the grant of {} came {} ms after its lease could have ended; given back",
                what,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lease.validUntil));
            releaseQuietly(lease);
            granted = false;
            if (timeoutNanos == 0 || (bounded && deadline - System.nanoTime() <= 0)) {
              return null;
            }
            ownerId = nextOwnerId();
            attempt = backend.attempt(name, claim, ownerId, options.lease(), waiter::wake);
            continue;
          }
          if (poll.isSessionGrant()
              && !options.autoRenew()
              && guarantees.has(Guarantees.Feature.EXTEND)) {
            leaseControl.serverExpiry(lease);
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
    } catch (RuntimeException e) {
      reason = LockEvents.GiveUpReason.ERROR;
      if (closed.get() && e != closedSignal) {
        // close() shut the backend's connections under this poll, and the backend reported that
        // (for example gRPC's "Channel shutdownNow invoked"): the waiter ends because its client
        // was closed, and says so, with what the backend reported as the cause
        throw new LockException(
            "lock client for " + config.uri() + " was closed while waiting for " + what, e);
      }
      throw e;
    } catch (Error e) {
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
            bl,
            config.fencingFloor(),
            scheduled,
            session,
            sessionHeld,
            owner,
            pollStart,
            validUntil,
            leaseNanos);
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
    scheduler.scheduleBy(lease.nextDue());
    return lease;
  }

  /**
   * Tries a set of exclusive locks in one step through {@link LockBackend#acquireAll}.
   *
   * @param names distinct checked names, in the set's order
   * @param owner the thread that asks, null for an asynchronous caller
   * @return one lease per name; an empty list if a name was busy (nothing held); null if the
   *     backend does not take this set in one step, or the calling thread holds one of the names
   *     through this client already (the caller then takes the names one by one)
   */
  List<LeaseHandle> acquireAll(List<String> names, LockOptions options, Thread owner)
      throws InterruptedException {
    ensureOpen();
    if (Thread.interrupted()) {
      throw new InterruptedException("interrupted before acquiring locks " + names);
    }
    if (owner != null) {
      for (String name : names) {
        if (byThread.containsKey(
            new ThreadKey(HeldLease.threadKey(name, Claim.exclusive()), owner))) {
          return null; // reentrancy, or a hold of our own: the one-by-one way handles both
        }
      }
    }
    long start = System.nanoTime();
    long epoch = sessionEpoch.get();
    List<String> ownerIds = new ArrayList<>(names.size());
    for (int i = 0; i < names.size(); i++) {
      ownerIds.add(nextOwnerId());
    }
    List<Poll> polls = backend.acquireAll(names, List.copyOf(ownerIds), options.lease());
    if (polls == null || polls.isEmpty()) {
      return polls == null ? null : List.of();
    }
    long leaseNanos = options.lease().toNanos();
    List<HeldLease> leases = new ArrayList<>(names.size());
    try {
      if (polls.size() != names.size()) {
        throw new LockException(
            "the backend for "
                + config.uri()
                + " answered "
                + polls.size()
                + " grants for a set of "
                + names.size()
                + " locks");
      }
      for (int i = 0; i < names.size(); i++) {
        Poll poll = polls.get(i);
        if (!poll.isGranted()) {
          throw new LockException(
              "the backend for "
                  + config.uri()
                  + " answered a set with some grants and a busy '"
                  + names.get(i)
                  + "'");
        }
        leases.add(
            register(
                names.get(i),
                Claim.exclusive(),
                ownerIds.get(i),
                options,
                poll,
                start,
                leaseNanos,
                owner));
      }
    } catch (RuntimeException | Error e) {
      leases.forEach(this::releaseQuietly);
      for (int i = leases.size(); i < polls.size(); i++) {
        Poll poll = polls.get(i);
        if (poll.isGranted()) {
          try {
            backend.release(
                new BackendLease(
                    names.get(i),
                    Claim.exclusive(),
                    ownerIds.get(i),
                    poll.fencingToken(),
                    options.lease(),
                    poll.state()));
          } catch (RuntimeException released) {
            e.addSuppressed(released);
          }
        }
      }
      throw e;
    }
    boolean session = false;
    for (HeldLease lease : leases) {
      session |= lease.sessionGrant;
    }
    if (session && sessionEpoch.get() != epoch) {
      // the session ended while the grants were on their way: never hand out a void set
      leases.forEach(this::releaseQuietly);
      return null;
    }
    long now = System.nanoTime();
    for (HeldLease lease : leases) {
      if (options.autoRenew() && now - lease.validUntil >= 0) {
        // the grants' answer came after a lease could have ended on the server (see acquire):
        // never hand out a void set; the names are then taken one by one, each checked so
        leases.forEach(this::releaseQuietly);
        return null;
      }
    }
    long waited = System.nanoTime() - start;
    List<LeaseHandle> handles = new ArrayList<>(leases.size());
    for (HeldLease lease : leases) {
      if (lease.sessionGrant && !options.autoRenew() && guarantees.has(Guarantees.Feature.EXTEND)) {
        leaseControl.serverExpiry(lease);
      }
      String name = lease.name;
      emit(() -> events.acquired(name, lease.token, Duration.ofNanos(waited)));
      handles.add(new LeaseHandle(this, lease));
    }
    return handles;
  }

  /**
   * @param executor runs the acquisition; null for the client's own background threads
   */
  CompletableFuture<Lease> acquireAsync(
      String name,
      Claim claim,
      LockOptions options,
      long timeoutNanos,
      Duration timeout,
      java.util.concurrent.Executor executor) {
    ensureOpen();
    Waiter waiter = new Waiter();
    CompletableFuture<Lease> future = new CompletableFuture<>();
    // Completed by anyone but us (cancel, orTimeout): withdraw the waiter.
    future.whenComplete((lease, error) -> waiter.cancel());
    // the owner id names who asked (an election's identity, or the calling thread), not the
    // client's thread that waits for it
    String asker = ASKER.get() != null ? ASKER.get() : Thread.currentThread().getName();
    try {
      (executor == null ? background : executor)
          .execute(
              () -> {
                ASKER.set(asker);
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
                } finally {
                  ASKER.remove();
                }
              });
    } catch (RejectedExecutionException e) {
      future.completeExceptionally(
          executor == null
              ? new IllegalStateException("lock client for " + config.uri() + " is closed")
              : e);
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

  /**
   * Drops one holding of each lease, in one backend call for those whose last holding it was (the
   * names of a lock set).
   *
   * @return true if every lease was still held up to this release
   */
  boolean releaseHoldings(List<HeldLease> leases) {
    boolean all = true;
    List<HeldLease> last = new ArrayList<>(leases.size());
    for (HeldLease lease : leases) {
      int left = lease.exitOnce();
      if (left != 0) {
        all &= left > 0 && lease.isValid();
      } else if (lease.state.compareAndSet(HeldLease.State.HELD, HeldLease.State.RELEASED)) {
        forget(lease);
        last.add(lease);
      } else {
        all = false;
      }
    }
    if (last.isEmpty()) {
      return all;
    }
    long now = System.nanoTime();
    boolean[] stillHeld = new boolean[last.size()];
    try {
      List<BackendLease> backendLeases = new ArrayList<>(last.size());
      for (HeldLease lease : last) {
        backendLeases.add(lease.backendLease);
      }
      List<Boolean> ours = backend.releaseAll(backendLeases);
      if (ours == null || ours.size() != last.size()) {
        throw new LockException(
            "the backend for "
                + config.uri()
                + " answered "
                + (ours == null ? "nothing" : ours.size() + " outcomes")
                + " for the release of "
                + last.size()
                + " leases");
      }
      for (int i = 0; i < last.size(); i++) {
        stillHeld[i] = Boolean.TRUE.equals(ours.get(i)) && now - last.get(i).validUntil < 0;
        all &= stillHeld[i];
      }
      return all;
    } finally {
      for (int i = 0; i < last.size(); i++) {
        HeldLease lease = last.get(i);
        boolean kept = stillHeld[i];
        wakeWaiters(lease.resourceKey);
        long heldFor = System.nanoTime() - lease.grantedAt;
        emit(() -> events.released(lease.name, lease.token, Duration.ofNanos(heldFor), kept));
      }
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

  void forget(HeldLease lease) {
    held.remove(lease.ownerId, lease);
    if (lease.owner != null) {
      byThread.remove(new ThreadKey(lease.threadKey, lease.owner), lease);
    }
  }

  /**
   * Waiters of this client for the same resource need no server round trip to learn of a release.
   */
  void wakeWaiters(String resourceKey) {
    Set<Waiter> peers = waiting.get(resourceKey);
    if (peers != null) {
      peers.forEach(Waiter::wake);
    }
  }

  // ---------------------------------------------------------------- loss

  /**
   * A handle of {@code lease} became unreachable unreleased: the application dropped it, so nobody
   * can release it any more. Its holding is released (on the client's pool: the caller is the
   * cleaner thread), with a warning naming the lock, the thread that took it and, with {@code
   * dropped-leases=trace}, the code.
   */
  void abandoned(HeldLease lease, Throwable site) {
    if (closed.get() || lease.state.get() != HeldLease.State.HELD) {
      return;
    }
    runInBackground(
        () -> {
          if (lease.state.get() != HeldLease.State.HELD) {
            return;
          }
          String message =
              HeldLease.describe(lease.name, lease.claim)
                  + " (fencing token "
                  + lease.token
                  + ", taken by "
                  + (lease.owner == null
                      ? "an asynchronous acquire"
                      : "thread '" + lease.owner.getName() + "'")
                  + ") was dropped by the application without being released; releasing it"
                  + (site == null
                      ? " (set dropped-leases=trace to log the code that took it, or keep to keep"
                          + " such leases)"
                      : "");
          if (site == null) {
            LOG.warn(message);
          } else {
            LOG.warn(message, site);
          }
          try {
            releaseHolding(lease);
          } catch (RuntimeException e) {
            LOG.warn(
                "releasing dropped lease on '{}' failed; it expires with its lease: {}",
                lease.name,
                e.toString());
          }
        });
  }

  void markLost(HeldLease lease, LeaseLostException.Reason reason, String detail) {
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
      scheduler.scheduleBy(lease.nextDue());
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
  void emit(Runnable event) {
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

  void runInBackground(Runnable task) {
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
