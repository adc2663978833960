package dev.locksmith.redlock;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Guarantees.Promise;
import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisNode;
import dev.locksmith.redis.internal.RedisScripts;
import dev.locksmith.redis.internal.ReleaseSubscriber;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Redlock over N independent Redis servers. A lock is held when a majority of the servers hold its
 * key for us, and only for the validity left of the lease after the time the acquisition took and
 * an allowance for clock drift. Every server call reuses lock-redis's scripts and connection
 * handling ({@link RedisNode}, {@link RedisScripts}); the servers are asked all at once, each with
 * a short timeout. The fencing token is drawn from a majority: the highest fence counter among the
 * servers we took, written back to a majority before the lock counts as held, so that any two
 * holders meet on a server that orders them (the argument is in the module's README).
 */
final class RedlockBackend implements LockBackend {
  private static final Logger LOG = LoggerFactory.getLogger(RedlockBackend.class);

  /**
   * Starts the release message of a round that never held the lock: waiters need not wake for it.
   */
  static final String UNHELD = "unheld:";

  static final Guarantees GUARANTEES =
      Guarantees.builder()
          .features(
              Feature.FENCING,
              Feature.RENEWAL,
              Feature.LOSS_DETECTION,
              Feature.NOTIFIED_WAKEUP,
              Feature.REENTRANCY,
              Feature.SHARED_ACROSS_PROCESSES,
              Feature.EXTEND,
              Feature.HOLD_AFTER_RELEASE,
              Feature.BREAK_GLASS,
              Feature.SEMAPHORES,
              Feature.READ_WRITE_LOCKS)
          .promise(
              Fault.HOLDER_PAUSE,
              Promise.SAFE_WITH_FENCING,
              "a paused holder's keys expire with its lease, and the next holder's token, drawn"
                  + " from a majority that meets the old holder's, is higher")
          .promise(
              Fault.HOLDER_CRASH,
              Promise.SAFE,
              "a crashed holder stops renewing and its keys expire with the lease on every server")
          .promise(
              Fault.PAUSE_DURING_ACQUIRE,
              Promise.SAFE_WITH_FENCING,
              "validity counts from before the acquire was sent, so a late reply only shortens it;"
                  + " a holder that outlives it has the lower token")
          .promise(
              Fault.SERVER_RESTART,
              Promise.UNSAFE,
              "a server that restarts without its data forgets our key and its fence counter: with"
                  + " a majority so restarted a second holder can enter, unless restarts are"
                  + " delayed by a lease; and even one such server, however late it rejoins, can"
                  + " make a token go back (only fsync=always keeps the counters)")
          .promise(
              Fault.SERVER_PAUSE,
              Promise.SAFE_WITH_FENCING,
              "a paused minority changes nothing; a paused majority blocks acquiring, and holders"
                  + " are told of the loss when renewal cannot reach a majority within validity")
          .promise(
              Fault.PARTITION,
              Promise.SAFE_WITH_FENCING,
              "a holder cut off from a majority cannot renew and is told of the loss by the end of"
                  + " validity; the next holder's token is higher")
          .promise(
              Fault.LEADER_FAILOVER,
              Promise.SAFE,
              "no leader: with a minority of servers down locks are still acquired and held safely;"
                  + " with a majority down acquiring fails at once naming them")
          .promise(
              Fault.CLOCK_JUMP,
              Promise.UNSAFE,
              "validity assumes every server's clock runs at about the rate of ours (the drift"
                  + " allowance): a server clock jumping forward expires keys early, and two"
                  + " holders can overlap")
          .promise(
              Fault.RELEASE_AFTER_EXPIRY,
              Promise.SAFE,
              "release deletes a key only where it still holds our owner id, in one script per"
                  + " server")
          .promise(
              Fault.AMBIGUOUS_ACQUIRE,
              Promise.SAFE,
              "a server that answers too late is released as soon as its answer comes; an abandoned"
                  + " attempt releases everywhere; liveness only")
          .promise(
              Fault.TOKEN_MONOTONICITY,
              Promise.SAFE,
              "tokens are the maximum fence of the servers taken, written back to a majority before"
                  + " the lock counts as held; safe while servers keep their data (appendfsync"
                  + " always): a delayed restart keeps exclusion, not the counters (see"
                  + " SERVER_RESTART)")
          .build();

  /** One server: its connections and its release-notification subscriber. */
  static final class Member {
    final int index;
    final RedisNode node;
    final ReleaseSubscriber subscriber;

    Member(int index, RedisNode node, ReleaseSubscriber subscriber) {
      this.index = index;
      this.node = node;
      this.subscriber = subscriber;
    }

    String endpoint() {
      return node.endpoint();
    }
  }

  /**
   * What a grant hands back for renew and release: the value our keys hold, the semaphore slot it
   * took (-1 for other claims), and until when the lease is ours.
   */
  static final class Grant {
    final String value;
    final int slot;
    volatile long validUntilNanos;

    /**
     * The acquire calls of the winning round. Some may still be on their way when the lease is
     * granted (a majority sufficed); the release on a server follows that server's acquire answer,
     * so it never overtakes the grant there.
     */
    final Fanout<Object> acquired;

    Grant(String value, int slot, long validUntilNanos, Fanout<Object> acquired) {
      this.value = value;
      this.slot = slot;
      this.validUntilNanos = validUntilNanos;
      this.acquired = acquired;
    }
  }

  /** One script call: the script, its KEYS and its ARGV. */
  static final class Call {
    final RedisScripts.Script script;
    final List<String> keys;
    final List<String> args;

    Call(RedisScripts.Script script, List<String> keys, List<String> args) {
      this.script = script;
      this.keys = keys;
      this.args = args;
    }

    Object on(Member m, Duration timeout) {
      return m.node.eval(script, keys, args, timeout);
    }
  }

  final List<Member> members;
  final int quorum;
  final RedisKeys keys;
  final ClaimScripts.Keys claimKeys;
  final BackendContext context;
  final RedlockSettings settings;
  final ExecutorService executor;
  final String shownUri;
  final AtomicLong rounds = new AtomicLong();
  private final RedlockLeaseControl leaseControl = new RedlockLeaseControl(this);

  RedlockBackend(
      List<RedisNode> nodes,
      RedisKeys keys,
      BackendContext context,
      RedlockSettings settings,
      ExecutorService executor,
      String shownUri) {
    List<Member> list = new ArrayList<>(nodes.size());
    for (int i = 0; i < nodes.size(); i++) {
      list.add(
          new Member(
              i,
              nodes.get(i),
              new ReleaseSubscriber(nodes.get(i), keys.clientChannel(context.clientId()))));
    }
    this.members = List.copyOf(list);
    this.quorum = quorum(nodes.size());
    this.keys = keys;
    this.claimKeys = new ClaimScripts.Keys(keys);
    this.context = context;
    this.settings = settings;
    this.executor = executor;
    this.shownUri = shownUri;
  }

  static int quorum(int servers) {
    return servers / 2 + 1;
  }

  @Override
  public Guarantees guarantees() {
    return GUARANTEES;
  }

  List<Member> members() {
    return members;
  }

  long driftNanos(Duration lease) {
    return settings.driftNanos(lease);
  }

  // ------------------------------------------------------------------ acquiring

  @Override
  public LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake) {
    return attempt(name, Claim.exclusive(), ownerId, lease, wake);
  }

  @Override
  public LockAttempt attempt(
      String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
    if (lease.toNanos() - driftNanos(lease) <= 0) {
      // every grant would come with its validity already gone: refuse, rather than retry until the
      // deadline
      Duration least = Duration.ofMillis(1);
      while (least.toNanos() - driftNanos(least) <= 0) {
        least = least.plusMillis(1);
      }
      throw new IllegalArgumentException(
          "`lease` was '"
              + Durations.format(lease)
              + "' but a redlock lease must be longer than "
              + "its clock-drift allowance (lease × drift-factor "
              + settings.driftFactor()
              + " + "
              + Durations.format(RedlockSettings.DRIFT_FLOOR)
              + " = "
              + Durations.format(Duration.ofNanos(driftNanos(lease)))
              + "), so at least "
              + Durations.format(least)
              + " for "
              + shownUri
              + "; take the lock with a longer lease");
    }
    return new RedlockAttempt(this, name, claim, ownerId, lease, wake);
  }

  /**
   * @return how long a waiting writer's mark lives on a server unless the writer polls again: three
   *     recheck intervals (the core polls a waiting writer at least once per interval) and a server
   *     timeout, so a writer that vanished stops holding readers back soon after
   */
  long writerMarkMillis(Duration lease) {
    return context.recheck().multipliedBy(3).plus(settings.perServerTimeout(lease)).toMillis();
  }

  /**
   * The token a lease is handed. A lock, a read-write side: the drawn counter. A permit: the drawn
   * counter times {@link Claim#MAX_PERMITS} plus its slot. Two permits whose rounds overlap can
   * draw the same counter, but they hold different slots (a slot has one valid holder), so their
   * tokens differ; a permit whose round starts after another grant returned draws a higher counter,
   * so its token is higher whatever the slots. The counters themselves are raised with the drawn
   * value only.
   */
  static long leaseToken(Claim claim, long drawn, int slot) {
    if (claim.kind() != Claim.Kind.PERMIT) {
      return drawn;
    }
    return Math.multiplyExact(drawn, (long) Claim.MAX_PERMITS) + slot;
  }

  /**
   * @return the owner-checked release of a lease of {@code value} (for a semaphore, of its slot),
   *     which publishes {@code message} on the resource's channel if it frees anything
   */
  Call releaseCall(String name, Claim claim, String value, int slot, String message) {
    switch (claim.kind()) {
      case PERMIT:
        return new Call(
            ClaimScripts.SEMAPHORE_RELEASE,
            List.of(
                claimKeys.semaphoreSlots(name),
                claimKeys.semaphoreOwners(name),
                claimKeys.semaphorePermits(name)),
            List.of(value, Integer.toString(slot), claimKeys.semaphoreChannel(name), message));
      case READ:
      case WRITE:
        return new Call(
            ClaimScripts.READ_WRITE_RELEASE,
            List.of(sideKey(name, claim), claimKeys.writersWaiting(name)),
            List.of(value, claimKeys.readWriteChannel(name), message, "", "0"));
      default:
        return new Call(
            RedisScripts.RELEASE,
            List.of(keys.owner(name), keys.token(name)),
            List.of(value, keys.releasedChannel(name), message));
    }
  }

  /**
   * KEYS: owner key, token key. ARGV: the release channel. Deletes whatever holds the lock on this
   * server and publishes its value as a release, so waiters count it as the holder's release; the
   * fence counter is a key of its own and stays. Returns 1 if something held it, else 0.
   */
  static final RedisScripts.Script BREAK =
      RedisScripts.Script.of(
          "redlock-break",
          "local v = redis.call('GET', KEYS[1])\n"
              + "if not v then return 0 end\n"
              + "redis.call('DEL', KEYS[1], KEYS[2])\n"
              + "redis.call('PUBLISH', ARGV[1], v)\n"
              + "return 1\n");

  /**
   * Deletes the lock's keys on every server at once, each server's fence counter kept: the holder's
   * next renewal finds a majority gone and reports the lease lost, and the next grant's token, the
   * highest counter of a majority plus one, is above the broken holder's. True if any server held
   * the lock; a server that does not answer within the server timeout keeps what it holds until its
   * lease ends, which a majority of the others outvotes.
   */
  /** The lease a break's server timeout is derived from, as for a default lease of 30 s. */
  private static final Duration BREAK_LEASE = Duration.ofSeconds(30);

  @Override
  public boolean breakLock(String name) {
    Duration timeout = settings.perServerTimeout(BREAK_LEASE);
    long deadline = System.nanoTime() + timeout.toNanos();
    Call call =
        new Call(
            BREAK,
            List.of(keys.owner(name), keys.token(name)),
            List.of(keys.releasedChannel(name)));
    Fanout<Object> broken = Fanout.start(members, m -> call.on(m, timeout), executor);
    broken.awaitUninterruptibly(deadline, f -> false);
    int held = 0;
    int answered = 0;
    for (int i = 0; i < members.size(); i++) {
      Object a = broken.answer(i);
      if (a instanceof Long) {
        answered++;
        held += ((Long) a).intValue();
      }
    }
    if (held == 0 && answered < quorum) {
      throw new BackendUnavailableException(
          "cannot break lock '"
              + name
              + "': only "
              + answered
              + " of the "
              + members.size()
              + " Redis servers of "
              + shownUri
              + " answered within "
              + Durations.format(timeout)
              + ", and a majority is "
              + quorum);
    }
    return held > 0;
  }

  String sideKey(String name, Claim claim) {
    return claim.kind() == Claim.Kind.READ
        ? claimKeys.readLeases(name)
        : claimKeys.writeLeases(name);
  }

  static boolean isGranted(Object reply) {
    return reply instanceof List && Long.valueOf(1).equals(((List<?>) reply).get(0));
  }

  static String reason(Member m, Object failure) {
    if (failure instanceof Throwable) {
      String msg = ((Throwable) failure).getMessage();
      return m.endpoint() + ": " + (msg == null ? failure.toString() : msg);
    }
    return m.endpoint() + " answered " + failure;
  }

  /**
   * Runs a release (or a withdrawal) on one server in the background; what it misses expires with
   * its lease or mark.
   *
   * @return done when the server answered, or the call failed or was not sent
   */
  CompletableFuture<Void> inBackground(Member m, Call call) {
    try {
      return CompletableFuture.runAsync(
          () -> {
            try {
              m.node.eval(call.script, call.keys, call.args);
            } catch (RuntimeException e) {
              LOG.debug(
                  "{} of {} on {} failed; it expires by itself: {}",
                  call.script,
                  call.keys.get(0),
                  m.endpoint(),
                  e.toString());
            }
          },
          executor);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      LOG.debug(
          "closed: {} of {} on {} not sent; it expires by itself",
          call.script,
          call.keys.get(0),
          m.endpoint());
      return CompletableFuture.completedFuture(null);
    }
  }

  // ------------------------------------------------------------------ renewing

  /**
   * The renew script on every server at once, one pipelined batch per script and server, counted
   * toward a majority; see {@link RedlockLeaseControl#renew}.
   */
  @Override
  public List<Renewal> renew(List<BackendLease> leases) {
    return leaseControl.renew(leases);
  }

  static Grant grant(BackendLease lease) {
    Object state = lease.state();
    if (!(state instanceof Grant)) {
      throw new IllegalArgumentException(
          "lease " + lease + " was not granted by a redlock backend");
    }
    return (Grant) state;
  }

  // ------------------------------------------------------------------ releasing

  /**
   * Releases on every server at once and waits for each of them until it answered or
   * `server-timeout` passed, not only for a majority: a slot left on a minority for a moment after
   * the answer is harmless for one lock, but several permits released that way can leave a majority
   * of servers each holding one of them, and a semaphore so held refused the next caller (kit rule
   * 18.2 found it full after a release; rule 18.6 found its old count still in use after every
   * permit was released). The release on a server is sent once that server answered the acquire, so
   * a grant still on its way cannot land after the release and stay.
   */
  @Override
  public boolean release(BackendLease lease) {
    Grant grant = grant(lease);
    String value = grant.value;
    String name = lease.name();
    int n = members.size();
    Duration timeout = settings.perServerTimeout(lease.lease());
    long start = System.nanoTime();
    long deadline = start + timeout.toNanos();
    Call call = releaseCall(name, lease.claim(), value, grant.slot, value);
    Fanout<Object> release =
        Fanout.start(
            members,
            m -> {
              awaitAnswer(grant.acquired, m.index, deadline);
              return call.on(m, timeout);
            },
            executor);
    release.awaitUninterruptibly(deadline, f -> false);
    boolean timeUp = System.nanoTime() - (start + timeout.toNanos()) >= 0;
    int released = 0;
    List<String> unreachable = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Object a = release.answer(i);
      if (Long.valueOf(1).equals(a)) {
        released++;
      } else if (a == null) {
        if (timeUp && !release.answered(i)) {
          unreachable.add(
              members.get(i).endpoint() + " did not answer within " + Durations.format(timeout));
        }
      } else if (!(a instanceof Long)) {
        unreachable.add(reason(members.get(i), a));
      }
    }
    if (released >= quorum) {
      return true;
    }
    if (released + unreachable.size() >= quorum) {
      // we may still hold a majority: the unreachable servers decide, and we cannot hear them
      throw new BackendUnavailableException(
          "cannot tell whether "
              + Claim.noun(lease.claim().kind())
              + " '"
              + name
              + "' was released: released on "
              + released
              + " of the "
              + n
              + " Redis servers of "
              + shownUri
              + ", a lock needs "
              + quorum
              + "; unreachable: "
              + String.join("; ", unreachable)
              + "; the rest expires with the lease");
    }
    return false;
  }

  /**
   * Waits, until the deadline at most, for server {@code index}'s answer to the acquire that
   * granted a lease.
   */
  private static void awaitAnswer(Fanout<Object> acquired, int index, long deadlineNanos) {
    if (acquired == null || acquired.answered(index)) {
      return;
    }
    try {
      acquired
          .future(index)
          .get(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // an executor thread: the release is sent at once
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      // a failed acquire holds nothing there; one still pending is released now, and expires if it
      // lands later
    }
  }

  // ------------------------------------------------------------------ lease control

  /**
   * The renew script with the new lease on every server at once, counted toward a majority; see
   * {@link RedlockLeaseControl#extend}.
   */
  @Override
  public boolean extend(BackendLease lease, Duration newLease) {
    return leaseControl.extend(lease, newLease);
  }

  /**
   * The hold script on every server at once, counted toward a majority; see {@link
   * RedlockLeaseControl#releaseAfter}.
   */
  @Override
  public boolean releaseAfter(BackendLease lease, Duration keep) {
    return leaseControl.releaseAfter(lease, keep);
  }

  // ------------------------------------------------------------------ closing

  @Override
  public void close() {
    for (Member m : members) {
      try {
        m.subscriber.close();
      } catch (RuntimeException e) {
        LOG.debug("closing the subscriber of {} failed: {}", m.endpoint(), e.toString());
      }
    }
    executor.shutdown();
    try {
      // let releases of split rounds finish; the servers expire whatever they miss
      if (!executor.awaitTermination(200, TimeUnit.MILLISECONDS)) {
        executor.shutdownNow();
      }
    } catch (InterruptedException e) {
      executor.shutdownNow();
      Thread.currentThread().interrupt();
    }
    for (Member m : members) {
      m.node.close();
    }
  }

  @Override
  public String toString() {
    return "redlock backend for "
        + shownUri
        + " ("
        + members.size()
        + " servers, quorum "
        + quorum
        + ")";
  }
}
