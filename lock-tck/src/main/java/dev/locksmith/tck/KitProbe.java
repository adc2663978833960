package dev.locksmith.tck;

import dev.locksmith.Guarantees;
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
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * What the kit sees of the backend under test: it wraps the provider so that every call passes
 * through unchanged while the kit counts polls and withdrawals per lock (and per claim, for
 * semaphores and read-write locks), learns the owner id and the lease of each grant, and can act at
 * the instant a poll or a release reaches the backend (to aim a race at the window inside it). Two
 * faults it can plant itself: it can send a stale lease's release to the backend again (as a
 * delayed or repeated request would), and it can drop the withdrawal of chosen attempts (as a
 * waiter that crashes mid-wait never withdraws). One per test.
 */
final class KitProbe {
  private final Map<String, AtomicInteger> polls = new ConcurrentHashMap<>();

  /**
   * Per lock and per claim: when each poll came back ({@link System#nanoTime()}) and the wait it
   * asked for (ms; -1 for a grant), for the messages of the rules that count polls.
   */
  private final Map<String, java.util.Queue<long[]>> pollTimes = new ConcurrentHashMap<>();

  private final Map<String, AtomicInteger> abandons = new ConcurrentHashMap<>();
  private final Map<String, String> owners = new ConcurrentHashMap<>();
  private final Map<String, BackendLease> grants = new ConcurrentHashMap<>();
  private final Set<String> sessionGrants = ConcurrentHashMap.newKeySet();
  private final List<Probed> opened = new CopyOnWriteArrayList<>();
  private final Set<String> vanishing = ConcurrentHashMap.newKeySet();

  /** Per lock: when each call of an election observer's holder watch came. */
  private final Map<String, java.util.Queue<Long>> watchCalls = new ConcurrentHashMap<>();

  /**
   * Per lock: what the backend answered the last time an observer asked for a holder watch: "none"
   * (null), "releases" or "grants" ({@link dev.locksmith.spi.HolderWatch#seesGrants()}).
   */
  private final Map<String, String> watches = new ConcurrentHashMap<>();

  private volatile Consumer<String> onPoll;
  private volatile Consumer<String> onRelease;
  private volatile long lastPollNanos = 200_000;
  private volatile long lastReleaseNanos = 200_000;

  /**
   * @param provider the backend's provider
   * @return a provider whose backends report to this probe
   */
  LockProvider wrap(LockProvider provider) {
    return new LockProvider() {
      @Override
      public Set<String> schemes() {
        return provider.schemes();
      }

      @Override
      public Set<String> optionNames() {
        return provider.optionNames();
      }

      @Override
      public boolean acceptsOption(String key) {
        return provider.acceptsOption(key);
      }

      @Override
      public LockBackend open(BackendConfig config, BackendContext context) {
        Probed p = new Probed(provider.open(config, context));
        opened.add(p);
        return p;
      }

      @Override
      public String toString() {
        return provider.toString();
      }
    };
  }

  /**
   * @return polls of attempts on this lock so far, by every client of the test
   */
  int polls(String name) {
    AtomicInteger n = polls.get(name);
    return n == null ? 0 : n.get();
  }

  /**
   * @param name a resource's name
   * @param kind a kind of claim
   * @return polls of attempts of that kind on that name so far (a lock, a semaphore and a
   *     read-write lock of one name are told apart; the read and write sides too)
   */
  int polls(String name, Claim.Kind kind) {
    return polls(claimKey(name, kind));
  }

  /**
   * @return the polls of that kind on that name that came back since {@code fromNanos}, as "+ms
   *     (asked to wait ms)", for a rule's message
   */
  String pollTimeline(String name, Claim.Kind kind, long fromNanos) {
    java.util.Queue<long[]> times = pollTimes.get(claimKey(name, kind));
    if (times == null) {
      return "none";
    }
    StringBuilder b = new StringBuilder();
    for (long[] t : times) {
      if (t[0] - fromNanos >= 0) {
        b.append(b.length() == 0 ? "" : ", ")
            .append('+')
            .append(java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(t[0] - fromNanos))
            .append(" ms (wait ")
            .append(t[1] < 0 ? "granted" : t[1] + " ms")
            .append(')');
      }
    }
    return b.length() == 0 ? "none" : b.toString();
  }

  /**
   * @param name a resource's name
   * @param kind a kind of claim
   * @return attempts of that kind on that name withdrawn so far (dropped ones included)
   */
  int abandons(String name, Claim.Kind kind) {
    return abandons(claimKey(name, kind));
  }

  /**
   * @return polls of attempts on this lock that {@code thread} made and that came back: a waiter's
   *     own, where {@link #polls(String)} would also count a poll again by a waiter queued before
   *     it
   */
  int pollsBy(String name, Thread thread) {
    return polls(byThread(name, thread));
  }

  /**
   * @return as {@link #pollsBy(String, Thread)}, for attempts of one kind of claim
   */
  int pollsBy(String name, Claim.Kind kind, Thread thread) {
    return polls(byThread(claimKey(name, kind), thread));
  }

  private static String byThread(String key, Thread thread) {
    return key + "\0thread " + thread.getId();
  }

  private static String claimKey(String name, Claim.Kind kind) {
    return kind + "\0" + name;
  }

  /**
   * @param name a resource's name
   * @param kind the kind of claim granted
   * @param token the grant's fencing token
   * @return the lease the backend granted, as the core hands it back for release
   */
  Optional<BackendLease> grant(String name, Claim.Kind kind, long token) {
    return Optional.ofNullable(grants.get(claimKey(name, kind) + "#" + token));
  }

  /**
   * Sends a release of {@code lease} to the backend once more, through the newest backend of the
   * test still open, past the core (which never releases a lease twice): a delayed or repeated
   * request as the network can deliver it. The server's owner check alone decides.
   *
   * @param lease a lease from {@link #grant}
   * @return what the backend answered
   */
  boolean releaseAgain(BackendLease lease) {
    for (int i = opened.size() - 1; i >= 0; i--) {
      Probed p = opened.get(i);
      if (!p.closed) {
        return p.backend.release(lease);
      }
    }
    throw new IllegalStateException("no backend of this test is open to send the release through");
  }

  /**
   * Sends an extend of {@code lease} to the backend, through the newest backend of the test still
   * open, past the core (which never extends a lease its own clock says has run out): an extend
   * sent in time but delivered late, as the network can deliver it. The server's checks alone
   * decide.
   *
   * @param lease a lease from {@link #grant}
   * @param newLease the lease asked for
   * @return what the backend answered
   */
  boolean extendAgain(BackendLease lease, Duration newLease) {
    for (int i = opened.size() - 1; i >= 0; i--) {
      Probed p = opened.get(i);
      if (!p.closed) {
        return p.backend.extend(lease, newLease);
      }
    }
    throw new IllegalStateException("no backend of this test is open to send the extend through");
  }

  /**
   * From now on, withdrawals of attempts of this kind on this name do not reach the backend: the
   * attempt vanishes as a waiter whose process dies mid-wait does. Counted in {@link #abandons}.
   */
  void dropWithdrawals(String name, Claim.Kind kind) {
    vanishing.add(claimKey(name, kind));
  }

  /**
   * @return attempts on this lock withdrawn so far
   */
  int abandons(String name) {
    AtomicInteger n = abandons.get(name);
    return n == null ? 0 : n.get();
  }

  /**
   * @return whether the lease of this lock with this token was granted for a session ({@code
   *     Poll.grantedForSession}): held while the backend's session lives, so that a revoke that
   *     ends the session may report it lost as {@code SESSION_LOST}
   */
  boolean sessionGrant(String name, long token) {
    return sessionGrants.contains(name + "#" + token);
  }

  /**
   * @return the owner id the lease with this token was granted to
   */
  Optional<String> ownerOf(String name, long token) {
    return Optional.ofNullable(owners.get(name + "#" + token));
  }

  /**
   * Runs {@code action} with the lock's name as each poll reaches the backend, before it is sent;
   * null stops it.
   */
  void onPoll(Consumer<String> action) {
    onPoll = action;
  }

  /**
   * Runs {@code action} with the lock's name as each release reaches the backend, before it is
   * sent; null stops it.
   */
  void onRelease(Consumer<String> action) {
    onRelease = action;
  }

  /**
   * @return how long the last poll took in the backend
   */
  long lastPollNanos() {
    return lastPollNanos;
  }

  /**
   * @return how long the last release took in the backend
   */
  long lastReleaseNanos() {
    return lastReleaseNanos;
  }

  /**
   * @return when each call of a holder watch of {@code name} came ({@link System#nanoTime()})
   */
  List<Long> watchCalls(String name) {
    java.util.Queue<Long> q = watchCalls.get(name);
    return q == null ? List.of() : List.copyOf(q);
  }

  /**
   * @return empty if no observer asked the backend for a holder watch of {@code name}; else "none"
   *     if it answered null, "releases" or "grants" for a watch that sees releases only or grants
   *     too
   */
  Optional<String> watchKind(String name) {
    return Optional.ofNullable(watches.get(name));
  }

  private static void count(Map<String, AtomicInteger> counts, String name) {
    counts.computeIfAbsent(name, k -> new AtomicInteger()).incrementAndGet();
  }

  /** Passes every call through. */
  private final class Probed implements LockBackend {
    private final LockBackend backend;
    private volatile boolean closed;

    Probed(LockBackend backend) {
      this.backend = backend;
    }

    @Override
    public Guarantees guarantees() {
      return backend.guarantees();
    }

    @Override
    public LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake) {
      return attempt(name, Claim.exclusive(), ownerId, lease, wake);
    }

    @Override
    public LockAttempt attempt(
        String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
      LockAttempt attempt =
          claim.isExclusive()
              ? backend.attempt(name, ownerId, lease, wake)
              : backend.attempt(name, claim, ownerId, lease, wake);
      return new LockAttempt() {
        @Override
        public Poll poll() throws InterruptedException {
          return counted(false);
        }

        @Override
        public Poll pollWithoutWaiting() throws InterruptedException {
          return counted(true);
        }

        private Poll counted(boolean once) throws InterruptedException {
          Consumer<String> hook = onPoll;
          if (hook != null) {
            hook.accept(name);
          }
          long start = System.nanoTime();
          Poll p = once ? attempt.pollWithoutWaiting() : attempt.poll();
          long end = System.nanoTime();
          lastPollNanos = end - start;
          pollTimes
              .computeIfAbsent(claimKey(name, claim.kind()), k -> new ConcurrentLinkedQueue<>())
              .add(new long[] {end, p.isGranted() ? -1 : p.retryAfter().toMillis()});
          count(polls, name);
          count(polls, claimKey(name, claim.kind()));
          count(polls, byThread(name, Thread.currentThread()));
          count(polls, byThread(claimKey(name, claim.kind()), Thread.currentThread()));
          if (p.isGranted()) {
            if (claim.isExclusive()) {
              owners.put(name + "#" + p.fencingToken(), ownerId);
              if (p.isSessionGrant()) {
                sessionGrants.add(name + "#" + p.fencingToken());
              }
            }
            grants.put(
                claimKey(name, claim.kind()) + "#" + p.fencingToken(),
                new BackendLease(name, claim, ownerId, p.fencingToken(), lease, p.state()));
          }
          return p;
        }

        @Override
        public void abandon() {
          // counted once the withdrawal is done, not as it starts: rule 18.4 waits for the count
          // and then expects every place in line given back, and a clean run at 02a94d2 (beside
          // another) read the count while a cancelled waiter's withdrawal was still on its way
          try {
            if (!vanishing.contains(claimKey(name, claim.kind()))) {
              attempt.abandon();
            }
          } finally {
            count(abandons, name);
            count(abandons, claimKey(name, claim.kind()));
          }
        }
      };
    }

    @Override
    public List<Poll> acquireAll(List<String> names, List<String> ownerIds, Duration lease)
        throws InterruptedException {
      Consumer<String> hook = onPoll;
      if (hook != null) {
        names.forEach(hook);
      }
      List<Poll> got = backend.acquireAll(names, ownerIds, lease);
      if (got == null) {
        return null;
      }
      for (int i = 0; i < names.size(); i++) {
        String name = names.get(i);
        count(polls, name);
        count(polls, claimKey(name, Claim.Kind.EXCLUSIVE));
        count(polls, byThread(name, Thread.currentThread()));
        count(polls, byThread(claimKey(name, Claim.Kind.EXCLUSIVE), Thread.currentThread()));
        if (i < got.size() && got.get(i).isGranted()) {
          Poll p = got.get(i);
          owners.put(name + "#" + p.fencingToken(), ownerIds.get(i));
          if (p.isSessionGrant()) {
            sessionGrants.add(name + "#" + p.fencingToken());
          }
          grants.put(
              claimKey(name, Claim.Kind.EXCLUSIVE) + "#" + p.fencingToken(),
              new BackendLease(
                  name, Claim.exclusive(), ownerIds.get(i), p.fencingToken(), lease, p.state()));
        }
      }
      return got;
    }

    @Override
    public boolean renewsBySession() {
      return backend.renewsBySession();
    }

    @Override
    public List<Renewal> renew(List<BackendLease> leases) {
      return backend.renew(leases);
    }

    @Override
    public String toString() {
      return backend.toString();
    }

    @Override
    public boolean extend(BackendLease lease, java.time.Duration newLease) {
      return backend.extend(lease, newLease);
    }

    @Override
    public boolean releaseAfter(BackendLease lease, java.time.Duration keep) {
      return backend.releaseAfter(lease, keep);
    }

    @Override
    public boolean release(BackendLease lease) {
      Consumer<String> hook = onRelease;
      if (hook != null) {
        hook.accept(lease.name());
      }
      long start = System.nanoTime();
      try {
        return backend.release(lease);
      } finally {
        lastReleaseNanos = System.nanoTime() - start;
      }
    }

    @Override
    public List<Boolean> releaseAll(List<BackendLease> leases) {
      Consumer<String> hook = onRelease;
      if (hook != null) {
        leases.forEach(lease -> hook.accept(lease.name()));
      }
      long start = System.nanoTime();
      try {
        return backend.releaseAll(leases);
      } finally {
        lastReleaseNanos = System.nanoTime() - start;
      }
    }

    @Override
    public LockState inspect(String name) {
      return backend.inspect(name);
    }

    @Override
    public dev.locksmith.spi.HolderWatch watchHolder(String name, Runnable changed) {
      java.util.Queue<Long> calls =
          watchCalls.computeIfAbsent(name, k -> new ConcurrentLinkedQueue<>());
      dev.locksmith.spi.HolderWatch w =
          backend.watchHolder(
              name,
              () -> {
                calls.add(System.nanoTime());
                changed.run();
              });
      watches.put(name, w == null ? "none" : w.seesGrants() ? "grants" : "releases");
      return w;
    }

    @Override
    public boolean breakLock(String name) {
      return backend.breakLock(name);
    }

    @Override
    public dev.locksmith.spi.NamePage listNames(String prefix, String cursor, int limit) {
      return backend.listNames(prefix, cursor, limit);
    }

    @Override
    public dev.locksmith.spi.NamePage listNames(
        String prefix, String cursor, int limit, Guarantees.Primitive primitive) {
      return backend.listNames(prefix, cursor, limit, primitive);
    }

    @Override
    public dev.locksmith.HeldLock inspectHolders(String name, Guarantees.Primitive primitive) {
      return backend.inspectHolders(name, primitive);
    }

    @Override
    public void abandon() {
      closed = true;
      backend.abandon();
    }

    @Override
    public void close() {
      closed = true;
      backend.close();
    }
  }
}
