package dev.locksmith.redlock;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Guarantees.Promise;
import dev.locksmith.LockException;
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
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadLocalRandom;
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

  /** Renewals per pipeline and server, as in lock-redis. */
  static final int RENEW_CHUNK = 1000;

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
              "a server that restarts without its data forgets our key and its fence counter; with"
                  + " a majority so restarted a second holder can enter and tokens can repeat,"
                  + " unless restarts are delayed by a lease (or fsync=always)")
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
                  + " the lock counts as held; safe while servers keep their data or restart only"
                  + " after a lease (see SERVER_RESTART)")
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

  private final List<Member> members;
  private final int quorum;
  private final RedisKeys keys;
  private final ClaimScripts.Keys claimKeys;
  private final BackendContext context;
  private final RedlockSettings settings;
  private final ExecutorService executor;
  private final String shownUri;
  private final AtomicLong rounds = new AtomicLong();

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

  private long driftNanos(Duration lease) {
    return settings.driftNanos(lease);
  }

  // ------------------------------------------------------------------ acquiring

  /**
   * Rounds in a row that a majority granted only after the validity was gone, before acquire gives
   * up on the lease.
   */
  static final int EXPIRED_GRANTS_LIMIT = 3;

  /** Free semaphore slots a server names when the slot asked for is taken. */
  static final int SLOT_HINTS = 8;

  /**
   * Rounds one poll of a semaphore runs back to back while the servers name a slot free on a
   * majority.
   */
  static final int SLOT_ROUNDS = 3;

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
    return new Attempt(name, claim, ownerId, lease, wake);
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
   * One acquisition: rounds of "take a majority within validity", waiting on every server's release
   * channel between them.
   */
  private final class Attempt implements LockAttempt {
    private final String name;
    private final Claim claim;

    /** "lock 'x'", "semaphore 'x'" or "read-write lock 'x'", for messages. */
    private final String what;

    /** The semaphore slot the next round asks for. */
    private int slot;

    private final String ownerId;
    private final Duration lease;
    private final long leaseNanos;
    private final Duration perServer;
    private final List<String> lockKeys;
    private final String channel;
    private final AttemptWake quietableWake;
    private final boolean[] joined = new boolean[members.size()];

    /**
     * After a split vote, wake-ups are ignored until then, so contenders retry at random times, not
     * all at once.
     */
    private volatile long quietUntil = System.nanoTime();

    /**
     * The value of a round that may hold keys the caller does not know of; released by {@link
     * #abandon()}.
     */
    private volatile String pending;

    /**
     * The acquire calls of the {@link #pending} round, so a withdrawal gives each server back once
     * it has answered.
     */
    private volatile Fanout<Object> pendingAcquire;

    /** Rounds in a row that took a majority but had no validity left. */
    private int expiredGrants;

    /** Polled once without waiting ({@link #pollWithoutWaiting}): a writer then sets no mark. */
    private boolean oneShot;

    /**
     * A writer's: per server, the answer to each earlier round that did not win and the release
     * that gave that server back with the mark set again, done or not. Neither is ordered with a
     * later round on the same server (each goes on a connection of its own), so one can land after
     * the round that grants the lock and set the mark again behind the grant, keeping readers out
     * after the writer has gone; once they are all done, the marks are removed once more.
     */
    private final List<CompletableFuture<Void>> earlierRounds = new ArrayList<>();

    /**
     * The give-backs ({@link #releaseAfterAnswers}) of this attempt's rounds that did not win, not
     * yet done. A one-shot attempt answers, and a withdrawal ({@link #abandon()}) returns, only
     * once they are done, so that a slot or lock a minority granted it is free again when the
     * caller learns the outcome. Left to the background, such a slot could make the next caller's
     * attempt fail: after a release of one of three permits, a tryAcquire() found the semaphore
     * full on a majority for as long as another's refused tryAcquire(), or a waiter that had just
     * timed out, still held its slot on the servers outside the release's majority (kit rules 18.2
     * and 18.4 failed this way in clean runs).
     */
    private final List<CompletableFuture<Void>> giveBacks = new ArrayList<>();

    Attempt(String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
      this.name = name;
      this.claim = claim;
      this.what = Claim.noun(claim.kind()) + " '" + name + "'";
      this.slot =
          claim.kind() == Claim.Kind.PERMIT
              ? ThreadLocalRandom.current().nextInt(claim.permits())
              : -1;
      this.ownerId = ownerId;
      this.lease = lease;
      this.leaseNanos = lease.toNanos();
      this.perServer = settings.perServerTimeout(lease);
      switch (claim.kind()) {
        case PERMIT:
          this.lockKeys =
              List.of(
                  claimKeys.semaphoreSlots(name),
                  claimKeys.semaphoreOwners(name),
                  claimKeys.semaphorePermits(name),
                  claimKeys.fenceCounter(name));
          this.channel = claimKeys.semaphoreChannel(name);
          break;
        case READ:
        case WRITE:
          this.lockKeys =
              List.of(
                  claimKeys.readLeases(name),
                  claimKeys.writeLeases(name),
                  claimKeys.writersWaiting(name),
                  claimKeys.fenceCounter(name));
          this.channel = claimKeys.readWriteChannel(name);
          break;
        default:
          this.lockKeys =
              List.of(
                  keys.owner(name),
                  keys.token(name),
                  keys.fenceCounter(name),
                  keys.legacyFence(name));
          this.channel = keys.releasedChannel(name);
      }
      this.quietableWake = new AttemptWake(wake);
    }

    /**
     * Wakes the waiter for a release: on the first server that reports it, and again on the server
     * whose report completes a majority, since a poll woken by the first report can run before the
     * release has reached a majority, and then only a later report can wake it (kit rule 11.3 found
     * that lost wake-up). The other reports of the same release are dropped: each extra wake-up
     * would cost a round. The release of a round of this attempt's own that never held the lock
     * wakes it too, since those keys may be what its last poll found busy. Everything is ignored
     * during the quiet period after a split vote; the waiter polls then anyway.
     */
    private final class AttemptWake implements ReleaseSubscriber.ReleaseWake {
      private final Runnable wake;
      private final Map<String, Integer> heard =
          new LinkedHashMap<>() {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
              return size() > 32;
            }
          };

      AttemptWake(Runnable wake) {
        this.wake = wake;
      }

      @Override
      public void run() {
        if (System.nanoTime() - quietUntil >= 0) {
          wake.run();
        }
      }

      @Override
      public void released(String value) {
        if (value.startsWith(UNHELD) && !value.startsWith(UNHELD + ownerId + "#")) {
          // another contender's round that never held the lock gave back its servers; it retries
          // after a random delay, and one of them will release loudly
          return;
        }
        if (value.startsWith(ownerId + "#")) {
          return; // a release by one of our own rounds that held the lock: we let go of it
          // ourselves
        }
        if (!value.isEmpty() && !value.startsWith(UNHELD)) {
          int copies;
          synchronized (heard) {
            copies = heard.merge(value, 1, Integer::sum);
          }
          if (copies != 1 && copies != quorum) {
            return; // the same release, heard from another server, neither first nor completing a
            // majority
          }
        }
        run();
      }
    }

    /**
     * A writer that does not wait sets no mark: a mark made only to be withdrawn would keep readers
     * out until its withdrawal lands, so two callers that do not wait, a reader and a writer, could
     * each make the other fail.
     */
    @Override
    public Poll pollWithoutWaiting() throws InterruptedException {
      oneShot = true;
      Poll outcome = poll();
      awaitGiveBacks();
      return outcome;
    }

    /**
     * Waits for the give-backs of this attempt's rounds: for each server, until it refused, did not
     * answer within its `server-timeout` (counted from the round's start), or granted and took the
     * give-back; two `server-timeout`s at most. An interrupt does not cut the wait short (a
     * withdrawal after an interrupt must still leave nothing behind) and stays set.
     */
    private void awaitGiveBacks() {
      if (giveBacks.isEmpty()) {
        return;
      }
      CompletableFuture<Void> all =
          CompletableFuture.allOf(giveBacks.toArray(new CompletableFuture<?>[0]));
      giveBacks.clear();
      long deadline = System.nanoTime() + 2 * perServer.toNanos();
      boolean interrupted = false;
      try {
        while (true) {
          try {
            all.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            return;
          } catch (InterruptedException e) {
            interrupted = true;
          } catch (java.util.concurrent.TimeoutException
              | java.util.concurrent.ExecutionException e) {
            // a server that does not answer: what it holds of ours expires with the lease; the
            // answer stands
            LOG.debug(
                "{}: the give-backs of an attempt were not all done within {}: {}",
                what,
                Durations.format(perServer.multipliedBy(2)),
                e.toString());
            return;
          }
        }
      } finally {
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
    }

    @Override
    public Poll poll() throws InterruptedException {
      if (Thread.interrupted()) {
        throw new InterruptedException("interrupted while acquiring " + what);
      }
      for (int i = 1; ; i++) {
        Poll outcome = round(false);
        // a majority out of reach: once more at once, since a server that was merely slow (a first
        // connection, a pause of ours) answers now; out of reach twice in a row is an outage
        outcome = outcome != null ? outcome : round(true);
        if (outcome != AGAIN) {
          return outcome;
        }
        if (i == SLOT_ROUNDS) {
          return Poll.busy(Duration.ZERO);
        }
        if (Thread.interrupted()) {
          throw new InterruptedException("interrupted while acquiring " + what);
        }
      }
    }

    /**
     * @return how long this writer's mark lives: 0 (none) for a writer that does not wait
     */
    private long markMillis() {
      return oneShot ? 0 : writerMarkMillis(lease);
    }

    /** The round's call to one server. */
    private Call acquireCall(String value) {
      String ms = Long.toString(Math.max(1, lease.toMillis()));
      switch (claim.kind()) {
        case PERMIT:
          return new Call(
              ClaimScripts.SEMAPHORE_ACQUIRE,
              lockKeys,
              List.of(
                  value,
                  ms,
                  Integer.toString(claim.permits()),
                  Integer.toString(slot),
                  Integer.toString(ThreadLocalRandom.current().nextInt(claim.permits())),
                  Integer.toString(SLOT_HINTS)));
        case READ:
          return new Call(
              ClaimScripts.READ_WRITE_ACQUIRE, lockKeys, List.of(value, ms, "read", "", "0"));
        case WRITE:
          return new Call(
              ClaimScripts.READ_WRITE_ACQUIRE,
              lockKeys,
              List.of(value, ms, "write", ownerId, Long.toString(markMillis())));
        default:
          return new Call(RedisScripts.ACQUIRE, lockKeys, List.of(value, ms));
      }
    }

    /** Raises one server's fence counter to the token while the round's grant there is live. */
    private Call raiseCall(String value, long token) {
      switch (claim.kind()) {
        case PERMIT:
          return new Call(
              ClaimScripts.SEMAPHORE_RAISE_FENCE,
              List.of(lockKeys.get(0), lockKeys.get(1), lockKeys.get(3)),
              List.of(value, Long.toString(token), Integer.toString(slot)));
        case READ:
        case WRITE:
          return new Call(
              ClaimScripts.READ_WRITE_RAISE_FENCE,
              List.of(lockKeys.get(claim.kind() == Claim.Kind.READ ? 0 : 1), lockKeys.get(3)),
              List.of(value, Long.toString(token)));
        default:
          return new Call(
              RedisScripts.RAISE_FENCE,
              lockKeys.subList(0, 3),
              List.of(value, Long.toString(token)));
      }
    }

    /**
     * The release of one of this attempt's rounds that did not win. A writer marks itself waiting
     * again where it gives a server back, so readers stay out while it retries. A reader's is
     * published as a release, not marked unheld: a reader that lost the race to a writer's marks
     * waits behind them and does not retry, so the writer that found those reads in its way is
     * woken now rather than at its next recheck.
     */
    private Call unheldReleaseCall(String value) {
      if (claim.kind() == Claim.Kind.WRITE) {
        return new Call(
            ClaimScripts.READ_WRITE_RELEASE,
            List.of(lockKeys.get(1), lockKeys.get(2)),
            List.of(value, channel, UNHELD + value, ownerId, Long.toString(markMillis())));
      }
      return releaseCall(
          name, claim, value, slot, claim.kind() == Claim.Kind.READ ? value : UNHELD + value);
    }

    /**
     * @return the outcome, or null if a majority was out of reach and {@code last} is false
     */
    private Poll round(boolean last) throws InterruptedException {
      for (Member m : members) {
        if (!joined[m.index]) {
          // another waiter of this client already listens there: listen before polling, so no
          // release is missed
          joined[m.index] = m.subscriber.joinIfSubscribed(channel, quietableWake);
        }
      }
      giveBacks.removeIf(CompletableFuture::isDone); // a waiter that waits long runs many rounds
      // a fresh value per round: a late release of an earlier round can never delete this round's
      // keys
      String value = ownerId + "#" + rounds.incrementAndGet();
      Call call = acquireCall(value);
      int asked = slot;
      pending = value;
      long start = System.nanoTime();
      int n = members.size();
      Fanout<Object> acquire = Fanout.start(members, m -> call.on(m, perServer), executor);
      pendingAcquire = acquire;
      acquire.await(
          start + perServer.toNanos(),
          f -> {
            int granted = 0;
            int refused = 0;
            for (int i = 0; i < n; i++) {
              Object a = f.answer(i);
              if (a == null) {
                continue;
              }
              if (isGranted(a)) {
                granted++;
              } else {
                refused++;
              }
            }
            return granted >= quorum || refused > n - quorum;
          });
      // a server still pending counts as unreachable only once its time is up, not when the others
      // decided early
      boolean timeUp = System.nanoTime() - (start + perServer.toNanos()) >= 0;
      List<Integer> granted = new ArrayList<>();
      long token = 0;
      long busyFor = Long.MAX_VALUE;
      int busy = 0;
      List<String> unreachable = new ArrayList<>();
      // semaphores: servers that hold live slots taken with another count, by count; free slots
      // named, by slot
      Map<Long, Integer> inUse = new HashMap<>();
      int mismatched = 0;
      Map<Long, Integer> free = new HashMap<>();
      for (int i = 0; i < n; i++) {
        Object a = acquire.answer(i);
        if (a == null) {
          if (timeUp && !acquire.answered(i)) {
            unreachable.add(
                members.get(i).endpoint()
                    + " did not answer within "
                    + Durations.format(perServer));
          }
        } else if (isGranted(a)) {
          granted.add(i);
          token = Math.max(token, (Long) ((List<?>) a).get(1));
        } else if (a instanceof List && Long.valueOf(-1).equals(((List<?>) a).get(0))) {
          mismatched++;
          busy++;
          inUse.merge((Long) ((List<?>) a).get(1), 1, Integer::sum);
          busyFor = Math.min(busyFor, (Long) ((List<?>) a).get(2));
        } else if (a instanceof List) {
          busy++;
          List<?> reply = (List<?>) a;
          long pttl = (Long) reply.get(1);
          busyFor = Math.min(busyFor, pttl >= 0 ? pttl : Long.MAX_VALUE);
          for (int h = 2; h < reply.size(); h++) {
            free.merge((Long) reply.get(h), 1, Integer::sum);
          }
        } else {
          unreachable.add(reason(members.get(i), a));
        }
      }
      if (granted.size() >= quorum) {
        if (token <= 0) {
          releaseAfterAnswers(acquire, value);
          throw new LockException(
              what
                  + " was taken but its fence counters read "
                  + token
                  + "; someone changed "
                  + keys.fenceCounter(name)
                  + " on "
                  + shownUri);
        }
        int raised = raiseFence(acquire, granted, token, value);
        long validUntil = start + leaseNanos - driftNanos(lease);
        if (raised >= quorum && System.nanoTime() - validUntil < 0) {
          leaveAll();
          pending = null;
          pendingAcquire = null;
          if (claim.kind() == Claim.Kind.WRITE) {
            unmarkWhereRefused(acquire);
            unmarkAfterEarlierRounds();
          }
          return Poll.grantedUntil(
              leaseToken(claim, token, asked),
              validUntil,
              new Grant(value, asked, validUntil, acquire));
        }
        LOG.debug(
            "{}: took {} of {} servers but {}; releasing and retrying",
            what,
            granted.size(),
            n,
            raised < quorum ? "raised the fence on only " + raised : "no validity was left");
        if (raised >= quorum && ++expiredGrants >= EXPIRED_GRANTS_LIMIT) {
          // the lease is shorter than a round takes here: every further round would end the same
          // way
          releaseAfterAnswers(acquire, value);
          pending = null;
          pendingAcquire = null;
          long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
          throw new LockException(
              what
                  + ": a majority of "
                  + shownUri
                  + " granted it "
                  + EXPIRED_GRANTS_LIMIT
                  + " times in a row, but each time only after its validity was gone (`lease` '"
                  + Durations.format(lease)
                  + "' − drift allowance "
                  + Durations.format(Duration.ofNanos(driftNanos(lease)))
                  + ", and the last round took "
                  + tookMs
                  + " ms); take the lock with a lease well above the time a round takes");
        }
      } else {
        expiredGrants = 0;
      }
      // not held: give back whatever this round took, on each server as soon as it has answered
      releaseAfterAnswers(acquire, value);
      pending = null;
      pendingAcquire = null;
      if (mismatched >= quorum) {
        // a majority holds live slots taken with another count: some lease of that count may be
        // valid
        long count = inUse.entrySet().stream().max(Map.Entry.comparingByValue()).get().getKey();
        throw Claim.permitsInUse(name, claim.permits(), (int) count);
      }
      if (unreachable.size() > n - quorum) {
        if (!last) {
          return null;
        }
        throw new BackendUnavailableException(
            "cannot acquire "
                + what
                + ": only "
                + (n - unreachable.size())
                + " of the "
                + n
                + " Redis servers of "
                + shownUri
                + " answered and a lock needs "
                + quorum
                + "; unreachable: "
                + String.join("; ", unreachable));
      }
      if (claim.kind() == Claim.Kind.PERMIT && mismatched == 0) {
        // the next round asks for a slot that a majority named free, at once; else for another slot
        // at random
        List<Integer> candidates = new ArrayList<>();
        for (Map.Entry<Long, Integer> e : free.entrySet()) {
          if (e.getValue() >= quorum && e.getKey() != asked) {
            candidates.add(e.getKey().intValue());
          }
        }
        if (!candidates.isEmpty()) {
          slot = candidates.get(ThreadLocalRandom.current().nextInt(candidates.size()));
          return AGAIN;
        }
        slot = ThreadLocalRandom.current().nextInt(claim.permits());
      }
      if (!oneShot) {
        joinAll(); // a one-shot attempt waits for no release: listening for one would cost five
        // subscribes and unsubscribes
      }
      long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      if (!granted.isEmpty() || busy < quorum) {
        // a split vote (or too slow; or the servers we lack are split among others, so nobody holds
        // a
        // majority): retry after a random delay, ignoring wake-ups until then; whoever took more
        // servers retries sooner, so the contenders of a split do not meet again as equals
        long step = Math.min(25, elapsedMs + 2);
        long delay =
            1
                + step * Math.max(0, quorum - 1 - granted.size())
                + ThreadLocalRandom.current().nextLong(step + 1);
        quietUntil = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delay);
        return Poll.busy(Duration.ofMillis(delay));
      }
      // held by someone else: their keys expire after busyFor ms at the earliest; a release wakes
      // us sooner,
      // so a quiet period left by an earlier split vote ends here, or the release it covers would
      // be missed
      quietUntil = System.nanoTime();
      return Poll.busy(
          busyFor == Long.MAX_VALUE ? context.recheck() : Duration.ofMillis(busyFor + 1));
    }

    /**
     * Writes the token back where this round's fence is lower, until a majority holds at least it.
     *
     * @return how many servers we hold with a fence of at least the token
     */
    private int raiseFence(Fanout<Object> acquire, List<Integer> granted, long token, String value)
        throws InterruptedException {
      List<Member> behind = new ArrayList<>();
      int atToken = 0;
      for (int i : granted) {
        long fence = (Long) ((List<?>) acquire.answer(i)).get(1);
        if (fence >= token) {
          atToken++;
        } else {
          behind.add(members.get(i));
        }
      }
      if (behind.isEmpty()) {
        return atToken;
      }
      Call call = raiseCall(value, token);
      Fanout<Object> raise = Fanout.start(behind, m -> call.on(m, perServer), executor);
      if (atToken >= quorum) {
        return atToken; // already a majority: the others are raised in the background, to spare
        // later acquisitions a round
      }
      int need = quorum - atToken;
      raise.await(
          System.nanoTime() + perServer.toNanos(),
          f -> {
            int ok = 0;
            for (int i = 0; i < f.size(); i++) {
              if (Long.valueOf(RedisScripts.RENEWED).equals(f.answer(i))) {
                ok++;
              }
            }
            return ok >= need;
          });
      int ok = 0;
      for (int i = 0; i < raise.size(); i++) {
        if (Long.valueOf(RedisScripts.RENEWED).equals(raise.answer(i))) {
          ok++;
        }
      }
      return atToken + ok;
    }

    private void joinAll() {
      for (Member m : members) {
        if (!joined[m.index]) {
          m.subscriber.join(channel, quietableWake); // its confirmation wakes us to poll once more
          joined[m.index] = true;
        }
      }
    }

    private void leaveAll() {
      for (Member m : members) {
        if (joined[m.index]) {
          m.subscriber.leave(channel, quietableWake);
          joined[m.index] = false;
        }
      }
    }

    /**
     * Withdraws, and returns once what this attempt gave back is given back on every server that
     * answers within `server-timeout` (two at most): a waiter that timed out, was interrupted or
     * cancelled leaves no slot, lock or writer's mark behind for the next caller to trip over. A
     * hung server is not waited for; what it holds expires.
     */
    @Override
    public void abandon() {
      leaveAll();
      String value = pending;
      Fanout<Object> inFlight = pendingAcquire;
      pending = null;
      pendingAcquire = null;
      if (value != null && inFlight != null) {
        // interrupted mid-round: each server may grant it without our seeing the reply; given back
        // once it answers,
        // not before (a give-back that overtook the acquire would find nothing, and the grant would
        // stay)
        releaseAfterAnswers(inFlight, value);
      }
      if (claim.kind() == Claim.Kind.WRITE) {
        // a waiting writer withdraws its marks once its rounds' give-backs (which mark again) are
        // done, and wakes the
        // readers it held back
        Call call =
            new Call(
                ClaimScripts.READ_WRITE_RELEASE,
                List.of(lockKeys.get(1), lockKeys.get(2)),
                List.of(
                    value == null ? "" : value,
                    channel,
                    ClaimScripts.UNMARKED + ownerId,
                    ownerId,
                    "0"));
        CompletableFuture<Void> rounds =
            CompletableFuture.allOf(giveBacks.toArray(new CompletableFuture<?>[0]))
                .handle((x, e) -> null);
        List<CompletableFuture<Void>> unmarks = new ArrayList<>();
        for (Member m : members) {
          unmarks.add(rounds.thenCompose(x -> inBackground(m, call)));
        }
        if (!oneShot) {
          giveBacks.addAll(
              unmarks); // a writer that did not wait set no mark: it holds no reader back
        }
      }
      awaitGiveBacks();
    }

    /**
     * Releases this round's value on every server that did not refuse it, each once its acquire has
     * answered.
     */
    private void releaseAfterAnswers(Fanout<Object> acquire, String value) {
      Call call = unheldReleaseCall(value);
      boolean writer = claim.kind() == Claim.Kind.WRITE;
      if (writer) {
        earlierRounds.removeIf(
            CompletableFuture::isDone); // a writer that waits long runs many rounds
      }
      for (int i = 0; i < members.size(); i++) {
        Member m = members.get(i);
        CompletableFuture<Object> answer = acquire.future(i);
        // given back where the server granted it, and where it did not answer (it may have granted
        // after all)
        CompletableFuture<Void> done =
            answer
                .handle((reply, error) -> error != null || isGranted(reply))
                .thenCompose(
                    give ->
                        give
                            ? inBackground(m, call)
                            : CompletableFuture.<Void>completedFuture(null));
        if (writer) {
          earlierRounds.add(done);
        }
        // waited for by a one-shot attempt's answer and by a withdrawal: a granting server's
        // give-back, not a server that
        // did not answer in time (it may be hung, and whatever it holds of this round expires with
        // the lease)
        giveBacks.add(
            answer
                .handle((reply, error) -> error == null)
                .thenCompose(
                    answered -> answered ? done : CompletableFuture.<Void>completedFuture(null)));
      }
    }

    /**
     * A granted writer's marks set again by its earlier rounds ({@link #earlierRounds}) go once
     * those rounds are done on every server. The owner id is this attempt's alone, so removing its
     * mark later can touch no other writer's.
     */
    private void unmarkAfterEarlierRounds() {
      if (earlierRounds.isEmpty()) {
        return;
      }
      // done ones too: one done while this round ran may have landed after its grant
      CompletableFuture<?>[] pendingRounds = earlierRounds.toArray(new CompletableFuture<?>[0]);
      earlierRounds.clear();
      Call call = unmarkGrantedCall();
      CompletableFuture.allOf(pendingRounds)
          .whenComplete(
              (x, e) -> {
                for (Member m : members) {
                  inBackground(m, call);
                }
              });
    }

    /**
     * A granted writer's removal of its own mark on a server (no lease to release), published as a
     * give-back.
     */
    private Call unmarkGrantedCall() {
      return new Call(
          ClaimScripts.READ_WRITE_RELEASE,
          List.of(lockKeys.get(1), lockKeys.get(2)),
          List.of("", channel, UNHELD + ownerId + "#granted", ownerId, "0"));
    }

    /**
     * A granted writer's marks on the servers that refused it go at once, so they do not outlive
     * the write lease.
     */
    private void unmarkWhereRefused(Fanout<Object> acquire) {
      Call call = unmarkGrantedCall();
      for (int i = 0; i < members.size(); i++) {
        Member m = members.get(i);
        acquire
            .future(i)
            .whenComplete(
                (reply, error) -> {
                  if (!isGranted(reply)) {
                    inBackground(m, call);
                  }
                });
      }
    }
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
   * The marker a poll of a semaphore returns from a round to run another at once, with a slot the
   * servers named free.
   */
  private static final Poll AGAIN = Poll.busy(Duration.ZERO);

  /**
   * @return the owner-checked release of a lease of {@code value} (for a semaphore, of its slot),
   *     which publishes {@code message} on the resource's channel if it frees anything
   */
  private Call releaseCall(String name, Claim claim, String value, int slot, String message) {
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
   * @return the owner-checked renewal (and extend) of a lease to {@code ttlMillis} from now
   */
  private Call renewCall(String name, Claim claim, Grant grant, long ttlMillis) {
    String ttl = Long.toString(ttlMillis);
    switch (claim.kind()) {
      case PERMIT:
        return new Call(
            ClaimScripts.SEMAPHORE_RENEW,
            List.of(
                claimKeys.semaphoreSlots(name),
                claimKeys.semaphoreOwners(name),
                claimKeys.semaphorePermits(name)),
            List.of(grant.value, ttl, Integer.toString(grant.slot)));
      case READ:
      case WRITE:
        return new Call(
            ClaimScripts.READ_WRITE_RENEW,
            List.of(sideKey(name, claim)),
            List.of(grant.value, ttl));
      default:
        return new Call(
            RedisScripts.RENEW,
            List.of(keys.owner(name), keys.token(name)),
            List.of(grant.value, ttl));
    }
  }

  private String sideKey(String name, Claim claim) {
    return claim.kind() == Claim.Kind.READ
        ? claimKeys.readLeases(name)
        : claimKeys.writeLeases(name);
  }

  private static boolean isGranted(Object reply) {
    return reply instanceof List && Long.valueOf(1).equals(((List<?>) reply).get(0));
  }

  private static String reason(Member m, Object failure) {
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
  private CompletableFuture<Void> inBackground(Member m, Call call) {
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

  @Override
  public List<Renewal> renew(List<BackendLease> leases) {
    List<Renewal> out = new ArrayList<>(leases.size());
    if (leases.isEmpty()) {
      return out;
    }
    long start = System.nanoTime();
    // leases of different claims need different scripts: one pipelined batch per script and server
    Map<RedisScripts.Script, List<Integer>> byScript = new LinkedHashMap<>();
    List<Call> calls = new ArrayList<>(leases.size());
    Duration shortest = null;
    for (int l = 0; l < leases.size(); l++) {
      BackendLease lease = leases.get(l);
      // the keys outlive the lease by the drift allowance, so the core's validity (renewal start +
      // lease) keeps that margin
      long ttl =
          Math.max(
              1,
              lease.lease().toMillis() + TimeUnit.NANOSECONDS.toMillis(driftNanos(lease.lease())));
      Call call = renewCall(lease.name(), lease.claim(), grant(lease), ttl);
      calls.add(call);
      byScript.computeIfAbsent(call.script, k -> new ArrayList<>()).add(l);
      if (shortest == null || lease.lease().compareTo(shortest) < 0) {
        shortest = lease.lease();
      }
    }
    Duration timeout = settings.renewTimeout(shortest);
    int n = members.size();
    int size = leases.size();
    Fanout<List<Object>> renew =
        Fanout.start(
            members,
            m -> {
              Object[] replies = new Object[size];
              for (Map.Entry<RedisScripts.Script, List<Integer>> batch : byScript.entrySet()) {
                List<List<String>> keyLists = new ArrayList<>(batch.getValue().size());
                List<List<String>> argLists = new ArrayList<>(batch.getValue().size());
                for (int l : batch.getValue()) {
                  keyLists.add(calls.get(l).keys);
                  argLists.add(calls.get(l).args);
                }
                List<Object> answers =
                    m.node.evalMany(batch.getKey(), keyLists, argLists, RENEW_CHUNK, timeout);
                for (int j = 0; j < answers.size(); j++) {
                  replies[batch.getValue().get(j)] = answers.get(j);
                }
              }
              return java.util.Arrays.asList(replies);
            },
            executor);
    long chunks = 0;
    for (List<Integer> batch : byScript.values()) {
      chunks += (batch.size() + RENEW_CHUNK - 1) / RENEW_CHUNK;
    }
    renew.awaitUninterruptibly(
        start + timeout.toNanos() * chunks,
        f -> {
          for (int l = 0; l < size; l++) {
            int renewed = 0;
            int lost = 0;
            for (int i = 0; i < n; i++) {
              Object code = codeOf(f.answer(i), l);
              if (Long.valueOf(RedisScripts.RENEWED).equals(code)) {
                renewed++;
              } else if (code instanceof Long) {
                lost++;
              }
            }
            if (renewed < quorum && lost <= n - quorum) {
              return false;
            }
          }
          return true;
        });
    long now = System.nanoTime();
    for (int l = 0; l < size; l++) {
      BackendLease lease = leases.get(l);
      Grant grant = grant(lease);
      int renewed = 0;
      List<String> gone = new ArrayList<>();
      List<String> unreachable = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        Member m = members.get(i);
        Object code = codeOf(renew.answer(i), l);
        if (Long.valueOf(RedisScripts.RENEWED).equals(code)) {
          renewed++;
        } else if (Long.valueOf(RedisScripts.HELD_BY_ANOTHER).equals(code)) {
          gone.add(m.endpoint() + ": held by another owner");
        } else if (Long.valueOf(RedisScripts.GONE).equals(code)) {
          gone.add(m.endpoint() + ": key gone");
        } else if (code == null) {
          unreachable.add(m.endpoint() + " did not answer within " + Durations.format(timeout));
        } else {
          unreachable.add(reason(m, code));
        }
      }
      if (renewed >= quorum) {
        if (now - grant.validUntilNanos < 0) {
          grant.validUntilNanos = start + lease.lease().toNanos();
          out.add(Renewal.renewed());
        } else {
          out.add(
              Renewal.failed(
                  new LockException(
                      Claim.noun(lease.claim().kind())
                          + " '"
                          + lease.name()
                          + "' was renewed on a majority of "
                          + shownUri
                          + " only after its validity ended")));
        }
      } else if (gone.size() > n - quorum) {
        out.add(
            Renewal.lost(
                "the "
                    + leaseKey(lease)
                    + " is no longer ours on a majority of the "
                    + n
                    + " Redis servers ("
                    + String.join("; ", gone)
                    + ")"));
      } else {
        out.add(
            Renewal.failed(
                new BackendUnavailableException(
                    "renewed "
                        + Claim.noun(lease.claim().kind())
                        + " '"
                        + lease.name()
                        + "' on only "
                        + renewed
                        + " of the "
                        + n
                        + " Redis servers of "
                        + shownUri
                        + ", and it needs "
                        + quorum
                        + "; unreachable: "
                        + String.join("; ", unreachable)
                        + (gone.isEmpty() ? "" : "; not ours: " + String.join("; ", gone)))));
      }
    }
    return out;
  }

  /**
   * @return what a lease holds on each server, for messages: a lock's key, a semaphore's slot, a
   *     read-write lock's side
   */
  private String leaseKey(BackendLease lease) {
    switch (lease.claim().kind()) {
      case PERMIT:
        return "slot " + grant(lease).slot + " of " + claimKeys.semaphoreSlots(lease.name());
      case READ:
      case WRITE:
        return "lease in " + sideKey(lease.name(), lease.claim());
      default:
        return "key " + keys.owner(lease.name());
    }
  }

  /**
   * @return the answer of one server for one lease: a Long, a Throwable, or null if the server has
   *     not answered
   */
  private static Object codeOf(Object serverAnswer, int lease) {
    if (serverAnswer instanceof List) {
      return ((List<?>) serverAnswer).get(lease);
    }
    return serverAnswer;
  }

  private static Grant grant(BackendLease lease) {
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
   * The renew script with the new lease on every server at once. The keys get the new lease plus
   * the drift allowance, as a renewal gives them, and the lease counts as extended only when a
   * majority extended it before its current validity ended; then it is valid until the start of the
   * call + the new lease. Otherwise every server that extended it, now or when its late answer
   * comes, releases it (owner-checked), and the answer is false: the core counts the lease as lost.
   */
  @Override
  public boolean extend(BackendLease lease, Duration newLease) {
    Grant grant = grant(lease);
    String name = lease.name();
    int n = members.size();
    Call call =
        renewCall(
            name,
            lease.claim(),
            grant,
            RedisScripts.ceilMillis(newLease.plusNanos(driftNanos(newLease))));
    Duration timeout =
        settings.renewTimeout(newLease.compareTo(lease.lease()) < 0 ? newLease : lease.lease());
    long start = System.nanoTime();
    long deadline = start + timeout.toNanos();
    if (grant.validUntilNanos - deadline < 0) {
      deadline = grant.validUntilNanos; // an answer after the validity ended could not count
    }
    Fanout<Object> extend = Fanout.start(members, m -> call.on(m, timeout), executor);
    extend.awaitUninterruptibly(
        deadline,
        f -> {
          int extended = 0;
          int not = 0;
          for (int i = 0; i < n; i++) {
            Object a = f.answer(i);
            if (Long.valueOf(RedisScripts.RENEWED).equals(a)) {
              extended++;
            } else if (a != null) {
              not++;
            }
          }
          return extended >= quorum || not > n - quorum;
        });
    long now = System.nanoTime();
    int extended = 0;
    List<String> failed = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Object a = extend.answer(i);
      if (Long.valueOf(RedisScripts.RENEWED).equals(a)) {
        extended++;
      } else {
        failed.add(members.get(i).endpoint() + ": " + outcome(a, timeout));
      }
    }
    if (extended >= quorum && now - grant.validUntilNanos < 0) {
      grant.validUntilNanos = start + newLease.toNanos();
      return true;
    }
    // not extended: give back what was, so that no minority keeps the lock past the old expiry
    for (int i = 0; i < n; i++) {
      Member m = members.get(i);
      extend
          .future(i)
          .whenComplete(
              (reply, error) -> {
                if (Long.valueOf(RedisScripts.RENEWED).equals(reply)) {
                  inBackground(
                      m, releaseCall(name, lease.claim(), grant.value, grant.slot, grant.value));
                }
              });
    }
    LOG.debug(
        "{} '{}': extended on {} of the {} Redis servers of {} ({}), and it needs {} within its"
            + " validity; given back",
        Claim.noun(lease.claim().kind()),
        name,
        extended,
        n,
        shownUri,
        String.join("; ", failed),
        quorum);
    return false;
  }

  /**
   * The hold script on every server at once: where the key still holds our value, it becomes a
   * value no lease has, expiring after {@code keep} plus the drift allowance, so that no server
   * whose clock runs fast frees it before {@code keep}. True when a majority set the hold. Else
   * every hold set, now or on a late answer, is taken back (owner-checked on the hold's value), and
   * the answer is false, or {@link BackendUnavailableException} when the servers that did not
   * answer decide it (the lock then expires with its lease).
   */
  @Override
  public boolean releaseAfter(BackendLease lease, Duration keep) {
    if (!lease.claim().isExclusive()) {
      throw new UnsupportedOperationException(
          this
              + " does not implement releaseAfter for a "
              + Claim.noun(lease.claim().kind())
              + "'s lease");
    }
    Grant grant = grant(lease);
    String name = lease.name();
    String hold = RedisScripts.holdValue(grant.value);
    int n = members.size();
    List<String> args =
        List.of(
            grant.value,
            hold,
            Long.toString(RedisScripts.ceilMillis(keep.plusNanos(driftNanos(keep)))));
    Duration timeout = settings.renewTimeout(lease.lease());
    long start = System.nanoTime();
    Fanout<Object> holding =
        Fanout.start(
            members,
            m ->
                m.node.eval(
                    RedisScripts.HOLD, List.of(keys.owner(name), keys.token(name)), args, timeout),
            executor);
    holding.awaitUninterruptibly(
        start + timeout.toNanos(),
        f -> {
          int held = 0;
          int not = 0;
          for (int i = 0; i < n; i++) {
            Object a = f.answer(i);
            if (Long.valueOf(1).equals(a)) {
              held++;
            } else if (a instanceof Long) {
              not++;
            }
          }
          return held >= quorum || not > n - quorum;
        });
    int held = 0;
    List<String> unreachable = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Object a = holding.answer(i);
      if (Long.valueOf(1).equals(a)) {
        held++;
      } else if (!(a instanceof Long)) {
        unreachable.add(members.get(i).endpoint() + ": " + outcome(a, timeout));
      }
    }
    if (held >= quorum) {
      return true;
    }
    for (int i = 0; i < n; i++) {
      Member m = members.get(i);
      holding
          .future(i)
          .whenComplete(
              (reply, error) -> {
                if (Long.valueOf(1).equals(reply)) {
                  inBackground(m, releaseCall(name, Claim.exclusive(), hold, -1, hold));
                }
              });
    }
    if (held + unreachable.size() >= quorum) {
      throw new BackendUnavailableException(
          "cannot hold lock '"
              + name
              + "' after release: held on "
              + held
              + " of the "
              + n
              + " Redis servers of "
              + shownUri
              + ", a lock needs "
              + quorum
              + "; unreachable: "
              + String.join("; ", unreachable)
              + "; what was held is given back, and the rest expires with the lease");
    }
    return false;
  }

  /**
   * @return what one server's answer says, for a message
   */
  private static String outcome(Object answer, Duration timeout) {
    if (answer == null) {
      return "did not answer within " + Durations.format(timeout);
    }
    if (answer instanceof Throwable) {
      String msg = ((Throwable) answer).getMessage();
      return msg == null ? answer.toString() : msg;
    }
    if (Long.valueOf(RedisScripts.HELD_BY_ANOTHER).equals(answer)) {
      return "held by another owner";
    }
    if (Long.valueOf(RedisScripts.GONE).equals(answer)) {
      return "key gone";
    }
    return "answered " + answer;
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
