package dev.locksmith.tck;

import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Guarantees.Promise;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * An in-memory lock server whose locks belong to sessions, and a backend for it, written against
 * the public SPI only, the way a backend over PostgreSQL advisory locks (or any server that scopes
 * a lock to a connection) is written: each client holds its locks through one session, and the only
 * way for anyone else to take a lock from its holder is to end the holder's session, which frees
 * every lock of that session at once. Its revoke hook does exactly that, as {@code
 * pg_terminate_backend} would, and does nothing for a lock nobody holds; the backend then reports
 * every lease of the ended session lost ({@code SESSION_LOST}) and opens a new session. It must
 * pass the whole kit ({@link SessionLockCompatibilityTest}): the positive control of the contract
 * written in {@link FaultHooks#revoke}.
 */
final class SessionBackends {
  private SessionBackends() {}

  /** How long the server keeps a vanished client's session: the kit's expiry slack. */
  static final Duration SESSION_TIMEOUT = Duration.ofSeconds(1);

  static final Guarantees GUARANTEES =
      InMemoryGuarantees.of(
          "session timeout",
          Promise.NOT_APPLICABLE,
          "never paused",
          Feature.FENCING,
          Feature.RENEWAL,
          Feature.LOSS_DETECTION,
          Feature.NOTIFIED_WAKEUP,
          Feature.REENTRANCY,
          Feature.EXTEND,
          Feature.HOLD_AFTER_RELEASE);

  /** The one server every client of the test shares. */
  static final Server SERVER = new Server();

  /** One client's session: its locks live as long as it does. */
  static final class Session {
    final long id;
    final Consumer<Session> onEnd;
    volatile boolean ended;

    Session(long id, Consumer<Session> onEnd) {
      this.id = id;
      this.onEnd = onEnd;
    }
  }

  /**
   * One lock's record: its holder and the holder's session (none for a hold after release), its
   * fence, its waiters.
   */
  private static final class Entry {
    String owner;
    Session session;

    /**
     * When the server ends the lease by itself (set by extend and by a hold); {@link
     * Long#MAX_VALUE}: while the session lives.
     */
    long expiresAt = Long.MAX_VALUE;

    long fence;
    final Set<Runnable> waiters = new LinkedHashSet<>();
  }

  /** The lock table and the sessions. */
  static final class Server {
    private final ReentrantLock mutex = new ReentrantLock();
    private final Map<String, Entry> locks = new HashMap<>();
    private final AtomicLong sessions = new AtomicLong();

    Session open(Consumer<Session> onEnd) {
      return new Session(sessions.incrementAndGet(), onEnd);
    }

    private Entry entry(String name) {
      return locks.computeIfAbsent(name, k -> new Entry());
    }

    /**
     * @return whether the entry is held now; frees it if its server-side lease ran out
     */
    private boolean held(Entry e, long now) {
      if (e.owner != null && e.expiresAt != Long.MAX_VALUE && now - e.expiresAt >= 0) {
        free(e);
      }
      return e.owner != null;
    }

    private void free(Entry e) {
      e.owner = null;
      e.session = null;
      e.expiresAt = Long.MAX_VALUE;
      new ArrayList<>(e.waiters).forEach(Runnable::run);
    }

    private boolean owns(Entry e, String ownerId, long now) {
      return held(e, now) && e.owner.equals(ownerId);
    }

    void subscribe(String name, Runnable wake) {
      mutex.lock();
      try {
        entry(name).waiters.add(wake);
      } finally {
        mutex.unlock();
      }
    }

    /**
     * @return the fence granted; 0 if the session has ended; else minus the nanoseconds until a
     *     retry is worthwhile without a wake-up
     */
    long tryTake(String name, Session session, String ownerId, Runnable wake) {
      mutex.lock();
      try {
        if (session.ended) {
          return 0;
        }
        Entry e = entry(name);
        long now = System.nanoTime();
        if (held(e, now)) {
          return e.expiresAt == Long.MAX_VALUE
              ? -Duration.ofMinutes(1).toNanos()
              : -Math.max(1, e.expiresAt - now);
        }
        e.waiters.remove(wake);
        e.owner = ownerId;
        e.session = session;
        e.expiresAt = Long.MAX_VALUE;
        return ++e.fence;
      } finally {
        mutex.unlock();
      }
    }

    /** Withdraws a waiter, and gives back a grant it may hold. */
    void withdraw(String name, String ownerId, Runnable wake) {
      mutex.lock();
      try {
        Entry e = entry(name);
        e.waiters.remove(wake);
        if (owns(e, ownerId, System.nanoTime())) {
          free(e);
        }
      } finally {
        mutex.unlock();
      }
    }

    boolean release(String name, String ownerId) {
      mutex.lock();
      try {
        Entry e = entry(name);
        if (!owns(e, ownerId, System.nanoTime())) {
          return false;
        }
        free(e);
        return true;
      } finally {
        mutex.unlock();
      }
    }

    boolean stillHeld(String name, String ownerId) {
      mutex.lock();
      try {
        return owns(entry(name), ownerId, System.nanoTime());
      } finally {
        mutex.unlock();
      }
    }

    /** Has the server end the lease at {@code leaseNanos} from now (owner-checked). */
    boolean extend(String name, String ownerId, long leaseNanos) {
      mutex.lock();
      try {
        Entry e = entry(name);
        long now = System.nanoTime();
        if (!owns(e, ownerId, now)) {
          return false;
        }
        e.expiresAt = now + leaseNanos;
        return true;
      } finally {
        mutex.unlock();
      }
    }

    /**
     * Turns the lease into a hold of no session, which the server ends by itself (owner-checked).
     */
    boolean releaseAfter(String name, String ownerId, long keepNanos) {
      mutex.lock();
      try {
        Entry e = entry(name);
        long now = System.nanoTime();
        if (!owns(e, ownerId, now)) {
          return false;
        }
        e.owner = "hold of " + ownerId;
        e.session = null;
        e.expiresAt = now + keepNanos;
        return true;
      } finally {
        mutex.unlock();
      }
    }

    /**
     * The kit's revoke hook. The server cannot take one lock from a live session: it ends the
     * holder's session, freeing all of its locks, and returns once they are free; the session's
     * client learns of it afterwards, as a client whose connection was terminated does. A hold
     * after release (no session) is simply dropped. A lock nobody holds: nothing to do.
     *
     * @return whether the lock was held
     */
    boolean revoke(String name) {
      Session ended = null;
      mutex.lock();
      try {
        Entry e = locks.get(name);
        if (e == null || !held(e, System.nanoTime())) {
          return false;
        }
        if (e.session == null) {
          free(e);
          return true;
        }
        ended = e.session;
        endLocked(ended);
      } finally {
        mutex.unlock();
      }
      Session s = ended;
      Thread notice = new Thread(() -> s.onEnd.accept(s), "session-ended-" + s.id);
      notice.setDaemon(true);
      notice.start();
      return true;
    }

    /** Ends a session and frees its locks; its client is not told (it closed, or it vanished). */
    void end(Session session) {
      mutex.lock();
      try {
        endLocked(session);
      } finally {
        mutex.unlock();
      }
    }

    private void endLocked(Session session) {
      session.ended = true;
      for (Entry e : locks.values()) {
        if (e.session == session && e.owner != null) {
          free(e);
        }
      }
    }
  }

  /** The provider for the scheme {@code session}. */
  static final class Provider implements LockProvider {
    @Override
    public Set<String> schemes() {
      return Set.of("session");
    }

    @Override
    public Set<String> optionNames() {
      return Set.of();
    }

    @Override
    public LockBackend open(BackendConfig config, BackendContext context) {
      config.check();
      return new Backend(SERVER, context);
    }
  }

  /** One client's connection: one session at a time, a new one once the server ended the last. */
  private static final class Backend implements LockBackend {
    private final Server server;
    private final BackendContext context;
    private volatile Session session;
    private volatile boolean closed;

    Backend(Server server, BackendContext context) {
      this.server = server;
      this.context = context;
      this.session = server.open(this::ended);
    }

    /**
     * @return the current session, after taking note of an ended one
     */
    private Session live() {
      Session s = session;
      if (s.ended) {
        ended(s);
        s = session;
      }
      return s;
    }

    /**
     * The server ended {@code s}: every lease of it is lost, reported before a new session can
     * grant anything, so that no lease of the new session is reported with the old one's.
     */
    private synchronized void ended(Session s) {
      if (session != s || closed) {
        return;
      }
      context.allLeasesLost(
          "the server ended session " + s.id + " of client " + context.clientId());
      session = server.open(this::ended);
    }

    @Override
    public Guarantees guarantees() {
      return GUARANTEES;
    }

    @Override
    public boolean renewsBySession() {
      return true;
    }

    @Override
    public LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake) {
      server.subscribe(
          name, wake); // before the first poll: a release during it still wakes this waiter
      return new LockAttempt() {
        @Override
        public Poll poll() {
          while (true) {
            Session s = live();
            long r = server.tryTake(name, s, ownerId, wake);
            if (r > 0) {
              return Poll.grantedForSession(r, null);
            }
            if (r < 0) {
              return Poll.busy(Duration.ofNanos(-r));
            }
            ended(s); // ended under this poll: on to the next session
          }
        }

        @Override
        public void abandon() {
          server.withdraw(name, ownerId, wake);
        }
      };
    }

    @Override
    public List<Renewal> renew(List<BackendLease> leases) {
      // never called for session grants; answered truthfully all the same
      List<Renewal> out = new ArrayList<>(leases.size());
      for (BackendLease lease : leases) {
        out.add(
            server.stillHeld(lease.name(), lease.ownerId())
                ? Renewal.renewed()
                : Renewal.lost("not held by this lease"));
      }
      return out;
    }

    @Override
    public boolean release(BackendLease lease) {
      return server.release(lease.name(), lease.ownerId());
    }

    @Override
    public boolean extend(BackendLease lease, Duration newLease) {
      return server.extend(lease.name(), lease.ownerId(), newLease.toNanos());
    }

    @Override
    public boolean releaseAfter(BackendLease lease, Duration keep) {
      return server.releaseAfter(lease.name(), lease.ownerId(), keep.toNanos());
    }

    @Override
    public void abandon() {
      closed = true;
      Session s = session;
      // the server ends a vanished client's session after its timeout
      Thread t =
          new Thread(
              () -> {
                LockSupport.parkNanos(SESSION_TIMEOUT.toNanos());
                server.end(s);
              },
              "session-timeout-" + s.id);
      t.setDaemon(true);
      t.start();
    }

    @Override
    public void close() {
      closed = true;
      server.end(
          session); // the core released every held lease first; a hold after release has no session
      // and stays
    }
  }
}
