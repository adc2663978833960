package dev.locksmith;

import dev.locksmith.spi.HolderWatch;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leader election by campaigning: an instance {@linkplain #campaign campaigns} under an identity
 * and, once elected, holds a {@link Leadership} whose {@linkplain Leadership#term() term} fences
 * its writes; anyone can ask {@linkplain #leader() who leads} and {@linkplain #observe watch} the
 * leader change, without campaigning. For a service that just wants to be told when it leads, see
 * {@link LeaderLatch}, which campaigns again by itself.
 *
 * <pre>{@code
 * Election election = client.election("billing-scheduler");
 * try (Election.Leadership leading = election.campaign("web-1", Duration.ofMinutes(5))) {
 *   leading.lost().thenRun(scheduler::stop);     // deposed: stop acting at once
 *   scheduler.runAs(leading.term());             // pass the term with every write
 * }                                              // resigns: the next leader need not wait
 * election.leader().ifPresent(l -> log.info("{} leads, term {}", l.identity(), l.term()));
 * }</pre>
 *
 * <p>An election is the client's exclusive lock of the same name, so it works on every backend and
 * brings that lock's guarantees: at most one leadership at a time where the backend keeps mutual
 * exclusion, a term that is the lock's fencing token (above every earlier term where the backend
 * declares {@link Guarantees.Feature#FENCING}, so a deposed leader that does not know it yet is
 * refused by the fence), and {@link Leadership#lost()} when the lease is lost. The leadership's
 * lease is the client's default lease, renewed while it leads. Campaigners wait in the lock's
 * queue: in the order the backend's {@link Guarantees.Feature#FIFO_FAIRNESS} says, woken on a
 * resignation where it declares {@link Guarantees.Feature#NOTIFIED_WAKEUP}.
 *
 * <p>The identity is written into the owner id of the leader's lease, where a lock's holder names
 * its thread (see {@link Holder}), so it is read back on every backend that stores the owner id, by
 * {@link #leader()}, {@code lockctl leader} and {@code lockctl ls} alike. {@link #leader()} and
 * {@link #observe} need {@link Guarantees.Feature#STATE_READS}. A crashed leader is the leader
 * until its lease ends: its identity stays readable until then. Thread-safe.
 */
public final class Election {
  private static final Logger LOG = LoggerFactory.getLogger(Election.class);
  private static final AtomicInteger THREADS = new AtomicInteger();

  /** The longest identity a campaign takes, in characters. */
  public static final int MAX_IDENTITY = Holder.MAX_PART;

  /**
   * How often an {@linkplain #observe observer} reads the leader where the backend does not tell it
   * of every change: a change is seen within this and one round trip. A backend that announces
   * releases (Redis, PostgreSQL, {@code local:}) makes it read at once after a release too.
   */
  public static final Duration OBSERVE_EVERY = Duration.ofMillis(50);

  /**
   * How often an observer reads the leader anyway, as a safety net, where the backend's watch tells
   * it of every change (etcd, ZooKeeper); it also reads when the leader's lease may have run out.
   */
  static final Duration WATCHED_READ_EVERY = Duration.ofSeconds(1);

  /** After an announced release with no leader read: how soon to read again, and how often. */
  static final Duration QUICK_READ = Duration.ofMillis(5);

  static final int QUICK_READS = 4;

  private static final String IDENTITY_RULE =
      "it must be 1 to "
          + MAX_IDENTITY
          + " characters, each a letter or digit (A-Z, a-z, 0-9), '.', '_' or '-', such as"
          + " web-1 or orders.host-3";

  private final LockClient client;
  private final String name;
  private final DistributedLock lock;

  Election(LockClient client, String name, LockOptions options) {
    this.client = client;
    if (options == null) {
      throw new NullPointerException(
          "`options` was null but it must be LockOptions, such as LockOptions.defaults()");
    }
    // not reentrant: leadership belongs to the campaign, not to a thread; renewed while it leads
    this.lock = client.lock(name, options.toBuilder().reentrant(false).autoRenew(true).build());
    this.name = name;
  }

  /**
   * @return the election's name: the name of the lock its leader holds
   */
  public String name() {
    return name;
  }

  /**
   * Campaigns until this caller leads or the timeout passes.
   *
   * @param identity who campaigns, as others will read it ({@link Leader#identity()}): 1 to {@value
   *     #MAX_IDENTITY} characters, each a letter or digit (ASCII), {@code .}, {@code _} or {@code
   *     -}
   * @param timeout how long to wait: zero looks once; longer than 292 years waits for ever
   * @return the leadership, held until it is {@linkplain Leadership#resign() resigned} or lost
   * @throws NullPointerException if {@code identity} or {@code timeout} is null
   * @throws IllegalArgumentException if {@code identity} is not as above or {@code timeout} is
   *     negative
   * @throws LockTimeoutException if another led for the whole timeout
   * @throws InterruptedException if interrupted while waiting; this caller then does not lead
   * @throws BackendUnavailableException if the server could not be reached
   */
  public Leadership campaign(String identity, Duration timeout) throws InterruptedException {
    String id = checkIdentity(identity);
    Names.timeoutNanos(timeout);
    Lease lease = new Candidate(lock, id).acquire(timeout);
    return new Leadership(name, id, lease);
  }

  /**
   * The election as a lock that campaigns under {@code identity}: for code that takes locks through
   * an API of its own, such as {@code ReactiveLocks}, the Kotlin suspend forms or {@code
   * acquireAsync}, each acquire of it is a campaign, and its lease is the leadership ({@link
   * Lease#fencingToken()} is the term; releasing resigns). Not reentrant; renewed while held.
   *
   * @param identity as for {@link #campaign}
   * @return a lock of this election's name whose every acquire campaigns under {@code identity}
   * @throws NullPointerException if {@code identity} is null
   * @throws IllegalArgumentException if {@code identity} is not as {@link #campaign} says
   */
  public DistributedLock candidate(String identity) {
    return new Candidate(lock, checkIdentity(identity));
  }

  /**
   * Reads who leads now, without campaigning: one state read of the election's lock.
   *
   * @return the leader, or empty if none leads (never elected, resigned, or its lease ran out)
   * @throws UnsupportedOperationException if the backend does not declare {@link
   *     Guarantees.Feature#STATE_READS}
   * @throws BackendUnavailableException if the server could not be reached
   */
  public Optional<Leader> leader() {
    requireStateReads("leader");
    LockState state = lock.state();
    return state.isHeld() ? Optional.of(new Leader(name, state)) : Optional.empty();
  }

  /**
   * Watches the leader: {@code listener} is called on a daemon thread of its own with the leader
   * read when the observation starts, then with every change it sees: another leader, or empty when
   * none leads. Each leadership is delivered once, in term order (a read older than one already
   * delivered is dropped), and the current one within {@link #OBSERVE_EVERY} and one round trip of
   * the change. Where the backend watches the lock ({@link
   * dev.locksmith.spi.LockBackend#watchHolder}), the observer reads as soon as it is told: of every
   * change on etcd and ZooKeeper (the observer then reads only when told, when the leader's lease
   * may have run out, and once a second), of a release on Redis, PostgreSQL and {@code local:}
   * (then it also reads a few times in quick succession for the next leader, and every {@link
   * #OBSERVE_EVERY}). A leadership that begins and ends between two reads is not seen: for every
   * term, use the fencing token the leaders write with. A read that fails is logged and read again;
   * a listener that throws is logged. Stop with {@link Observation#close()}.
   *
   * @param listener called with each leader seen, empty for none
   * @return the running observation
   * @throws NullPointerException if {@code listener} is null
   * @throws UnsupportedOperationException if the backend does not declare {@link
   *     Guarantees.Feature#STATE_READS}
   */
  public Observation observe(Consumer<? super Optional<Leader>> listener) {
    Objects.requireNonNull(listener, "`listener` was null but it must be a callback");
    requireStateReads("observe");
    Observation o = new Observation(this, listener);
    o.thread.start();
    return o;
  }

  private void requireStateReads(String method) {
    if (!client.guarantees().has(Guarantees.Feature.STATE_READS)) {
      throw new UnsupportedOperationException(
          "Election."
              + method
              + "() reads the election's lock and needs feature STATE_READS, which the backend"
              + " for "
              + client.config().uri()
              + " does not declare; campaign() works on it");
    }
  }

  static String checkIdentity(String identity) {
    if (identity == null) {
      throw new NullPointerException("`identity` was null but " + IDENTITY_RULE);
    }
    if (identity.isEmpty() || identity.length() > MAX_IDENTITY) {
      throw new IllegalArgumentException(
          "`identity` was '"
              + Names.show(identity.length() > 60 ? identity.substring(0, 60) + "…" : identity)
              + "' ("
              + identity.length()
              + " characters) but "
              + IDENTITY_RULE);
    }
    for (int i = 0; i < identity.length(); i++) {
      char c = identity.charAt(i);
      boolean ok =
          c >= 'a' && c <= 'z'
              || c >= 'A' && c <= 'Z'
              || c >= '0' && c <= '9'
              || c == '.'
              || c == '_'
              || c == '-';
      if (!ok) {
        throw new IllegalArgumentException(
            "`identity` was '"
                + Names.show(identity)
                + "' but it has "
                + String.format("U+%04X", (int) c)
                + " at index "
                + i
                + "; "
                + IDENTITY_RULE);
      }
    }
    return identity;
  }

  /**
   * One leadership won by {@link Election#campaign}: held until it is resigned, closed or lost.
   * Closing resigns. Any thread may resign it.
   */
  public static final class Leadership implements AutoCloseable {
    private final String election;
    private final String identity;
    private final Lease lease;

    Leadership(String election, String identity, Lease lease) {
      this.election = election;
      this.identity = identity;
      this.lease = lease;
    }

    /**
     * @return the election's name
     */
    public String election() {
      return election;
    }

    /**
     * @return the identity this leadership campaigned under
     */
    public String identity() {
      return identity;
    }

    /**
     * @return the term: the election lock's fencing token, above every earlier term of this
     *     election where the backend declares {@link Guarantees.Feature#FENCING}; pass it with the
     *     leader's writes, so that the writes of a deposed leader are refused
     */
    public long term() {
      return lease.fencingToken();
    }

    /**
     * @return completes when the lease behind this leadership is lost (expired, taken, renewal
     *     failed, session lost): stop acting as the leader; not completed by a resignation
     */
    public CompletionStage<LeaseLostException> lost() {
      return lease.lost();
    }

    /**
     * @return whether this leadership still holds, as far as this caller can tell
     */
    public boolean isValid() {
      return lease.isValid();
    }

    /**
     * Steps down at once: the election's lock is released, so the next campaigner leads without
     * waiting for the lease. Returns once the release is done on the server.
     *
     * @return true if this caller still led up to the resignation; false if the leadership had
     *     already ended (resigned, or lost)
     * @throws BackendUnavailableException if the server could not be reached; the leadership then
     *     ends with its lease
     */
    public boolean resign() {
      return lease.release();
    }

    /** Resigns, logging rather than throwing a server that cannot be reached. */
    @Override
    public void close() {
      lease.close();
    }

    @Override
    public String toString() {
      return "Leadership{election='"
          + election
          + "', identity="
          + identity
          + ", term="
          + term()
          + "}";
    }
  }

  /** The leader of an election as a state read saw it. */
  public static final class Leader {
    private final String election;
    private final LockState state;

    Leader(String election, LockState state) {
      this.election = election;
      this.state = state;
    }

    /**
     * @return the election's name
     */
    public String election() {
      return election;
    }

    /**
     * @return the identity the leader campaigned under; for a holder that took the election's lock
     *     directly (a {@link LeaderLatch}, or a plain lock), the name of the thread that asked;
     *     empty where the backend does not keep the holder's owner id, or the owner id is not one a
     *     Locksmith client wrote
     */
    public Optional<String> identity() {
      return state.holderIdentity().map(Holder::thread);
    }

    /**
     * @return the leader's term (its fencing token), where the backend reads it
     */
    public OptionalLong term() {
      return state.fencingToken();
    }

    /**
     * @return the rest of the leader's lease when it was read (it is renewed while the leader
     *     lives), where the backend reads it; empty for a lease that lasts as long as a session
     */
    public Optional<Duration> remaining() {
      return state.remaining();
    }

    /**
     * @return who leads in full (application, host, process, when it campaigned), where the backend
     *     keeps a Locksmith owner id
     */
    public Optional<Holder> holder() {
      return state.holderIdentity();
    }

    /**
     * @return the state read of the election's lock this leader comes from
     */
    public LockState state() {
      return state;
    }

    /** The same leadership: the same owner id and term (the rest of the lease aside). */
    boolean sameAs(Leader other) {
      return other != null
          && state.holder().equals(other.state.holder())
          && state.fencingToken().equals(other.state.fencingToken());
    }

    @Override
    public String toString() {
      return "Leader{election='"
          + election
          + "', identity="
          + identity().orElse("?")
          + ", term="
          + (term().isPresent() ? Long.toString(term().getAsLong()) : "?")
          + "}";
    }
  }

  /** A running {@link Election#observe} watch: closing it stops the calls. */
  public static final class Observation implements AutoCloseable {
    private final Election election;
    private final Consumer<? super Optional<Leader>> listener;
    private final Semaphore woken = new Semaphore(0);

    /** State reads made so far, for tests. */
    final java.util.concurrent.atomic.AtomicInteger reads =
        new java.util.concurrent.atomic.AtomicInteger();

    final Thread thread;
    private volatile boolean closed;

    Observation(Election election, Consumer<? super Optional<Leader>> listener) {
      this.election = election;
      this.listener = listener;
      this.thread =
          new Thread(
              this::watch, "locksmith-observer-" + THREADS.incrementAndGet() + "-" + election.name);
      this.thread.setDaemon(true);
    }

    /** Called by the backend's watch: the holder may have changed, read now. */
    private void wake() {
      if (woken.availablePermits() == 0) {
        woken.release();
      }
    }

    private void watch() {
      HolderWatch w = null;
      if (election.client instanceof ClientCore) {
        try {
          w = ((ClientCore) election.client).watchHolder(election.name, this::wake);
        } catch (RuntimeException e) {
          LOG.debug(
              "election '{}': no watch, the observer reads every {} ms: {}",
              election.name,
              OBSERVE_EVERY.toMillis(),
              e.toString());
        }
      }
      try {
        watch(w != null && w.seesGrants() ? WATCHED_READ_EVERY : OBSERVE_EVERY, w != null);
      } finally {
        if (w != null) {
          w.close();
        }
      }
    }

    /**
     * @param every how long to wait for a call of the watch before reading anyway
     * @param watched whether a watch calls {@link #wake()}
     */
    private void watch(Duration every, boolean watched) {
      boolean first = true;
      Leader last = null; // the last leader delivered; null with first false: none delivered
      long lastTerm = Long.MIN_VALUE; // the highest term delivered
      boolean byWake = false; // whether this read follows a call of the watch
      int quick = 0; // quick reads left: a release was announced, the next grant may be on its way
      while (!closed) {
        woken.drainPermits(); // a call from now on brings another read after this one
        Optional<Leader> now;
        reads.incrementAndGet();
        try {
          now = election.leader();
        } catch (IllegalStateException e) {
          if (!closed) {
            LOG.warn("election '{}': observer stops: {}", election.name, e.getMessage());
          }
          return; // the client was closed
        } catch (RuntimeException e) {
          LOG.debug(
              "election '{}': observer could not read the leader: {}", election.name, e.toString());
          now = null;
        }
        Leader seen = now == null ? null : now.orElse(null);
        if (now != null && !closed) {
          boolean stale =
              seen != null && seen.term().isPresent() && seen.term().getAsLong() < lastTerm;
          boolean changed = first || (seen == null ? last != null : !seen.sameAs(last));
          if (changed && !stale) {
            first = false;
            last = seen;
            if (seen != null && seen.term().isPresent()) {
              lastTerm = seen.term().getAsLong();
            }
            try {
              listener.accept(now);
            } catch (RuntimeException e) {
              LOG.warn("election '{}': an observer's listener threw, ignored", election.name, e);
            }
          }
        }
        long wait = every.toNanos();
        if (seen != null && seen.remaining().isPresent()) {
          // read again when the leader's lease may have run out: an expiry announces nothing
          wait = Math.min(wait, seen.remaining().get().toNanos() + QUICK_READ.toNanos());
        }
        if (now != null && seen == null && byWake && every == OBSERVE_EVERY) {
          // a release was announced and no leader read: a waiting campaigner's grant is likely
          // a round trip away, and nothing will announce it
          quick = QUICK_READS;
        }
        if (seen != null || now == null) {
          quick = 0;
        } else if (quick > 0) {
          quick--;
          wait = Math.min(wait, QUICK_READ.toNanos());
        }
        try {
          byWake = watched && woken.tryAcquire(Math.max(1, wait), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          return; // closed
        }
      }
    }

    /**
     * Stops the watch: no call begins after this returns (waits for one that is running, unless
     * called from the listener).
     */
    @Override
    public void close() {
      closed = true;
      if (Thread.currentThread() == thread) {
        return;
      }
      thread.interrupt();
      try {
        thread.join(TimeUnit.SECONDS.toMillis(10));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
