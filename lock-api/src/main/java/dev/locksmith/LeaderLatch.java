package dev.locksmith;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leader election for a service that just wants to be told: every instance starts a latch of the
 * same name; one at a time leads, and is told so ({@link #onElected}); when it loses the lead it is
 * told ({@link #onRevoked}) and campaigns again. Built on the client's exclusive lock of that name,
 * so it works on every backend, and it brings the lock's guarantees: at most one leader at a time
 * where the backend keeps mutual exclusion, and a {@linkplain Leadership#term() term} that is the
 * lock's fencing token, above every earlier leader's, for the leader to pass with its writes (a
 * deposed leader that does not know it yet is refused by the fence).
 *
 * <pre>{@code
 * LeaderLatch latch = client.leaderLatch("billing-scheduler")
 *     .onElected(leadership -> scheduler.start(leadership.term()))
 *     .onRevoked(leadership -> scheduler.stop());
 * latch.start();
 * ...
 * latch.close();   // steps down at once: the next instance leads without waiting for the lease
 * }</pre>
 *
 * <p>One daemon thread per latch campaigns (waits for the lock) and calls the callbacks, in order:
 * {@code onRevoked} of a leadership always comes before the next {@code onElected}, and a callback
 * that throws is logged, not propagated. On {@link #resign()} and {@link #close()} the latch calls
 * {@code onRevoked} first and releases the lock after it returns, so the leader has stopped before
 * the next one is elected; when the lease is lost (expired, taken, renewal failed, session lost)
 * another instance may already lead when {@code onRevoked} runs, which is what the term is for. The
 * lease is renewed while the instance leads (the client's default lease). Thread-safe.
 */
public final class LeaderLatch implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(LeaderLatch.class);
  private static final AtomicInteger THREADS = new AtomicInteger();

  /** The longest one wait for the lock lasts before the latch looks at whether it was closed. */
  private static final Duration CAMPAIGN_SLICE = Duration.ofSeconds(30);

  /** How long a resigned latch stands back at most where the backend wakes waiters. */
  static final Duration STAND_BACK_WOKEN = Duration.ofSeconds(1);

  /** A pause after a failed campaign (the server could not be reached), before trying again. */
  private static final long RETRY_MILLIS = 500;

  private final DistributedLock lock;
  private final String name;

  /** Whether the backend reads a lock's state: after a resignation, to see another take over. */
  private final boolean stateReads;

  /**
   * How long a resigned latch stands back at most for another to take over: a second where the
   * backend wakes waiters on a release, else the client's recheck interval (in which a waiter
   * polls) and a little.
   */
  private final long standBackNanos;

  private final Object guard = new Object();
  private Consumer<? super Leadership> elected = l -> {};
  private Consumer<? super Leadership> revoked = l -> {};
  private String identity;
  private Thread campaigner;

  /** The campaigner waits for the lock (guarded): only then may close() interrupt it. */
  private boolean waiting;

  private volatile boolean closed;
  private volatile Leadership current;

  LeaderLatch(LockClient client, String name) {
    this.name = name;
    this.stateReads = client.guarantees().has(Guarantees.Feature.STATE_READS);
    this.standBackNanos =
        client.guarantees().has(Guarantees.Feature.NOTIFIED_WAKEUP)
            ? STAND_BACK_WOKEN.toNanos()
            : client.config().recheck().toNanos() + TimeUnit.MILLISECONDS.toNanos(50);
    // not reentrant: leadership belongs to the latch, not to a thread; renewed while it leads
    this.lock =
        client.lock(
            name, client.config().defaults().toBuilder().reentrant(false).autoRenew(true).build());
  }

  /**
   * @return the name of the election: the name of the lock the leader holds
   */
  public String name() {
    return name;
  }

  /**
   * @param action called on the latch's thread when this instance becomes the leader
   * @return this latch
   * @throws NullPointerException if {@code action} is null
   * @throws IllegalStateException if the latch was started
   */
  public LeaderLatch onElected(Consumer<? super Leadership> action) {
    Objects.requireNonNull(action, "`action` was null but it must be a callback");
    synchronized (guard) {
      requireNotStarted("onElected");
      this.elected = action;
    }
    return this;
  }

  /**
   * @param action called on the latch's thread when this instance stops leading (it resigned, the
   *     latch was closed, or the lease was lost), before it campaigns again
   * @return this latch
   * @throws NullPointerException if {@code action} is null
   * @throws IllegalStateException if the latch was started
   */
  public LeaderLatch onRevoked(Consumer<? super Leadership> action) {
    Objects.requireNonNull(action, "`action` was null but it must be a callback");
    synchronized (guard) {
      requireNotStarted("onRevoked");
      this.revoked = action;
    }
    return this;
  }

  /**
   * @param identity who campaigns, as others read it ({@link Election.Leader#identity()}, {@code
   *     lockctl leader}): 1 to {@value Election#MAX_IDENTITY} characters, each a letter or digit
   *     (ASCII), {@code .}, {@code _} or {@code -}; without one, the latch's thread's name
   * @return this latch
   * @throws NullPointerException if {@code identity} is null
   * @throws IllegalArgumentException if {@code identity} is not as above
   * @throws IllegalStateException if the latch was started
   */
  public LeaderLatch identity(String identity) {
    String id = Election.checkIdentity(identity);
    synchronized (guard) {
      requireNotStarted("identity");
      this.identity = id;
    }
    return this;
  }

  /**
   * Starts campaigning, on a daemon thread of its own. A latch starts once.
   *
   * @return this latch
   * @throws IllegalStateException if it was started or closed already
   */
  public LeaderLatch start() {
    synchronized (guard) {
      requireNotStarted("start");
      if (closed) {
        throw new IllegalStateException("leader latch '" + name + "' was closed");
      }
      campaigner =
          new Thread(this::campaign, "locksmith-leader-" + THREADS.incrementAndGet() + "-" + name);
      campaigner.setDaemon(true);
      campaigner.start();
    }
    return this;
  }

  /**
   * @return whether this instance leads now, as far as it can tell (its lease is valid)
   */
  public boolean isLeader() {
    Leadership l = current;
    return l != null && l.isValid();
  }

  /**
   * @return the current leadership of this instance, empty when it does not lead
   */
  public Optional<Leadership> leadership() {
    Leadership l = current;
    return l != null && l.isValid() ? Optional.of(l) : Optional.empty();
  }

  /**
   * Waits until this instance leads.
   *
   * @param timeout how long to wait: zero looks once; longer than 292 years waits for ever
   * @return whether it leads
   * @throws InterruptedException if interrupted while waiting
   * @throws NullPointerException if {@code timeout} is null
   * @throws IllegalArgumentException if {@code timeout} is negative
   */
  public boolean awaitLeadership(Duration timeout) throws InterruptedException {
    long wait = Names.timeoutNanos(timeout);
    long start = System.nanoTime();
    while (!isLeader()) {
      long left = wait - (System.nanoTime() - start);
      if (left <= 0 || closed) {
        return isLeader();
      }
      TimeUnit.NANOSECONDS.sleep(Math.min(left, TimeUnit.MILLISECONDS.toNanos(10)));
    }
    return true;
  }

  /**
   * Steps down if this instance leads: {@code onRevoked} runs, the lock is released at once (the
   * next instance does not wait for the lease), and the latch campaigns again once another instance
   * has taken the lead (seen where the backend reads a lock's state), or, if none does, after a
   * second (where the backend wakes waiters on a release; else after the client's {@code recheck}
   * interval, in which waiters poll): on a backend that does not queue its waiters, a latch that
   * campaigned again at once could take the lock back before the waiter it woke. Returns once the
   * lock is released; called from a callback, it returns at once and the latch steps down when the
   * callback returns. Nothing happens if it does not lead.
   *
   * @throws InterruptedException if interrupted while waiting for the step-down
   */
  public void resign() throws InterruptedException {
    Leadership l = current;
    if (l == null) {
      return;
    }
    l.stepDown.complete("resigned");
    if (Thread.currentThread() == campaigner) {
      return; // called from a callback: the latch steps down once the callback returns
    }
    try {
      l.released.get();
    } catch (java.util.concurrent.ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    }
  }

  /**
   * Stops campaigning and steps down if this instance leads ({@code onRevoked}, then the lock is
   * released at once). Idempotent; returns once the latch's thread has ended (called from a
   * callback, at once: the latch ends when the callback returns).
   */
  @Override
  public void close() {
    Thread t;
    synchronized (guard) {
      if (closed) {
        return;
      }
      closed = true;
      t = campaigner;
      if (waiting) {
        t.interrupt(); // ends a wait for the lock at once; never a leader's release
      }
    }
    Leadership l = current;
    if (l != null) {
      l.stepDown.complete("closed");
    }
    if (t == null || t == Thread.currentThread()) {
      return; // not started, or called from a callback: the latch ends once it returns
    }
    try {
      t.join(TimeUnit.SECONDS.toMillis(30));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void requireNotStarted(String what) {
    if (campaigner != null) {
      throw new IllegalStateException(
          "`" + what + "` was called on leader latch '" + name + "' after it started");
    }
  }

  private void campaign() {
    if (identity != null) {
      ClientCore.ASKER.set(identity); // this thread campaigns for the latch only
    }
    while (!closed) {
      Lease lease;
      try {
        synchronized (guard) {
          if (closed) {
            return;
          }
          waiting = true;
        }
        Optional<Lease> got;
        try {
          got = lock.tryAcquire(CAMPAIGN_SLICE);
        } finally {
          synchronized (guard) {
            waiting = false;
            Thread.interrupted(); // close()'s interrupt is for the wait only
          }
        }
        if (got.isEmpty()) {
          continue;
        }
        lease = got.get();
        if (closed) { // granted as the latch closed: give it back unannounced
          lease.close();
          return;
        }
      } catch (InterruptedException e) {
        continue; // closed: the loop's test decides
      } catch (IllegalStateException e) {
        if (!closed) {
          LOG.warn("leader latch '{}' stops: {}", name, e.getMessage());
        }
        return; // the client was closed
      } catch (RuntimeException e) {
        LOG.warn(
            "leader latch '{}' could not campaign, trying again in {} ms: {}",
            name,
            RETRY_MILLIS,
            e.toString());
        pause();
        continue;
      }
      if (lead(lease)) {
        standBack();
      }
    }
  }

  /**
   * After a resignation: waits until another instance holds the lock (where the backend reads a
   * lock's state), for at most the client's recheck interval and a little, or until closed.
   */
  private void standBack() {
    long from = System.nanoTime();
    while (!closed && System.nanoTime() - from < standBackNanos) {
      if (stateReads) {
        try {
          if (lock.state().isHeld()) {
            return; // another leads; campaigning now queues behind it
          }
        } catch (RuntimeException e) {
          // a read that fails says nothing: keep standing back for the interval
        }
      }
      try {
        Thread.sleep(stateReads ? 5 : 50);
      } catch (InterruptedException e) {
        return; // closed: the loop's test decides
      }
    }
  }

  /**
   * @return whether the latch resigned (rather than was closed or lost the lease)
   */
  private boolean lead(Lease lease) {
    Leadership l = new Leadership(lease);
    CompletableFuture<String> down = l.stepDown;
    current = l;
    if (closed) {
      down.complete("closed"); // close() may have looked before current was set
    }
    call(elected, l, "onElected");
    CompletableFuture<Object> lost = new CompletableFuture<>();
    lease.lost().whenComplete((e, t) -> lost.complete(e));
    Object why = CompletableFuture.anyOf(down, lost).join();
    boolean steppingDown = why instanceof String;
    call(revoked, l, "onRevoked");
    current = null;
    if (steppingDown) {
      try {
        lease.release();
      } catch (RuntimeException e) {
        LOG.warn(
            "leader latch '{}' could not release its lock on stepping down; the next leader waits"
                + " for the lease: {}",
            name,
            e.toString());
      }
    } else {
      lease.close();
    }
    l.released.complete(null);
    return "resigned".equals(why);
  }

  private void call(Consumer<? super Leadership> action, Leadership l, String what) {
    try {
      action.accept(l);
    } catch (RuntimeException e) {
      LOG.warn("leader latch '{}': {} threw, ignored", name, what, e);
    }
  }

  private static void pause() {
    try {
      Thread.sleep(RETRY_MILLIS);
    } catch (InterruptedException e) {
      // closed: the loop's test decides
    }
  }

  /** One term of leadership: this instance led from its election until it was revoked. */
  public static final class Leadership {
    private final Lease lease;

    /** Completed to make this leader step down: why (resigned, closed). */
    final CompletableFuture<String> stepDown = new CompletableFuture<>();

    /** Completed once the lock was given back after this term. */
    final CompletableFuture<Void> released = new CompletableFuture<>();

    Leadership(Lease lease) {
      this.lease = lease;
    }

    /**
     * @return the election's name
     */
    public String name() {
      return lease.lockName();
    }

    /**
     * @return the term: the lock's fencing token, above every earlier leader's where the backend
     *     declares {@link Guarantees.Feature#FENCING}; pass it with the leader's writes
     */
    public long term() {
      return lease.fencingToken();
    }

    /**
     * @return completes when the lease behind this leadership is lost (not when it is given up)
     */
    public CompletionStage<LeaseLostException> lost() {
      return lease.lost();
    }

    /**
     * @return whether this leadership still holds, as far as this instance can tell
     */
    public boolean isValid() {
      return lease.isValid();
    }

    @Override
    public String toString() {
      return "Leadership{name='" + name() + "', term=" + term() + "}";
    }
  }
}
