package dev.locksmith.redlock;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockException;
import dev.locksmith.redis.internal.RedisScripts;
import dev.locksmith.redis.internal.ReleaseSubscriber;
import dev.locksmith.redlock.RedlockBackend.Call;
import dev.locksmith.redlock.RedlockBackend.Grant;
import dev.locksmith.redlock.RedlockBackend.Member;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.Poll;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One acquisition on a {@link RedlockBackend} of a lock, a semaphore permit or a side of a
 * read-write lock: rounds of "take a majority within validity", waiting on every server's release
 * channel between them.
 */
final class RedlockAttempt implements LockAttempt {
  private static final Logger LOG = LoggerFactory.getLogger(RedlockAttempt.class);

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

  /**
   * The marker a poll of a semaphore returns from a round to run another at once, with a slot the
   * servers named free.
   */
  private static final Poll AGAIN = Poll.busy(Duration.ZERO);

  private final RedlockBackend backend;
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
  private final boolean[] joined;

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
   * The acquire calls of the {@link #pending} round, so a withdrawal gives each server back once it
   * has answered.
   */
  private volatile Fanout<Object> pendingAcquire;

  /** Rounds in a row that took a majority but had no validity left. */
  private int expiredGrants;

  /** Polled once without waiting ({@link #pollWithoutWaiting}): a writer then sets no mark. */
  private boolean oneShot;

  /**
   * A writer's: per server, the answer to each earlier round that did not win and the release that
   * gave that server back with the mark set again, done or not. Neither is ordered with a later
   * round on the same server (each goes on a connection of its own), so one can land after the
   * round that grants the lock and set the mark again behind the grant, keeping readers out after
   * the writer has gone; once they are all done, the marks are removed once more.
   */
  private final List<CompletableFuture<Void>> earlierRounds = new ArrayList<>();

  /**
   * The give-backs ({@link #releaseAfterAnswers}) of this attempt's rounds that did not win, not
   * yet done. A one-shot attempt answers, and a withdrawal ({@link #abandon()}) returns, only once
   * they are done, so that a slot or lock a minority granted it is free again when the caller
   * learns the outcome. Left to the background, such a slot could make the next caller's attempt
   * fail: after a release of one of three permits, a tryAcquire() found the semaphore full on a
   * majority for as long as another's refused tryAcquire(), or a waiter that had just timed out,
   * still held its slot on the servers outside the release's majority (kit rules 18.2 and 18.4
   * failed this way in clean runs).
   */
  private final List<CompletableFuture<Void>> giveBacks = new ArrayList<>();

  RedlockAttempt(
      RedlockBackend backend,
      String name,
      Claim claim,
      String ownerId,
      Duration lease,
      Runnable wake) {
    this.backend = backend;
    this.joined = new boolean[backend.members.size()];
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
    this.perServer = backend.settings.perServerTimeout(lease);
    switch (claim.kind()) {
      case PERMIT:
        this.lockKeys =
            List.of(
                backend.claimKeys.semaphoreSlots(name),
                backend.claimKeys.semaphoreOwners(name),
                backend.claimKeys.semaphorePermits(name),
                backend.claimKeys.fenceCounter(name));
        this.channel = backend.claimKeys.semaphoreChannel(name);
        break;
      case READ:
      case WRITE:
        this.lockKeys =
            List.of(
                backend.claimKeys.readLeases(name),
                backend.claimKeys.writeLeases(name),
                backend.claimKeys.writersWaiting(name),
                backend.claimKeys.fenceCounter(name));
        this.channel = backend.claimKeys.readWriteChannel(name);
        break;
      default:
        this.lockKeys =
            List.of(
                backend.keys.owner(name),
                backend.keys.token(name),
                backend.keys.fenceCounter(name),
                backend.keys.legacyFence(name));
        this.channel = backend.keys.releasedChannel(name);
    }
    this.quietableWake = new AttemptWake(wake);
  }

  /**
   * Wakes the waiter for a release: on the first server that reports it, and again on the server
   * whose report completes a majority, since a poll woken by the first report can run before the
   * release has reached a majority, and then only a later report can wake it (kit rule 11.3 found
   * that lost wake-up). The other reports of the same release are dropped: each extra wake-up would
   * cost a round. The release of a round of this attempt's own that never held the lock wakes it
   * too, since those keys may be what its last poll found busy. Everything is ignored during the
   * quiet period after a split vote; the waiter polls then anyway.
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
      if (value.startsWith(RedlockBackend.UNHELD)
          && !value.startsWith(RedlockBackend.UNHELD + ownerId + "#")) {
        // another contender's round that never held the lock gave back its servers; it retries
        // after a random delay, and one of them will release loudly
        return;
      }
      if (value.startsWith(ownerId + "#")) {
        return; // a release by one of our own rounds that held the lock: we let go of it
        // ourselves
      }
      if (!value.isEmpty() && !value.startsWith(RedlockBackend.UNHELD)) {
        int copies;
        synchronized (heard) {
          copies = heard.merge(value, 1, Integer::sum);
        }
        if (copies != 1 && copies != backend.quorum) {
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
    return oneShot ? 0 : backend.writerMarkMillis(lease);
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
            RedisScripts.RAISE_FENCE, lockKeys.subList(0, 3), List.of(value, Long.toString(token)));
    }
  }

  /**
   * The release of one of this attempt's rounds that did not win. A writer marks itself waiting
   * again where it gives a server back, so readers stay out while it retries. A reader's is
   * published as a release, not marked unheld: a reader that lost the race to a writer's marks
   * waits behind them and does not retry, so the writer that found those reads in its way is woken
   * now rather than at its next recheck.
   */
  private Call unheldReleaseCall(String value) {
    if (claim.kind() == Claim.Kind.WRITE) {
      return new Call(
          ClaimScripts.READ_WRITE_RELEASE,
          List.of(lockKeys.get(1), lockKeys.get(2)),
          List.of(
              value, channel, RedlockBackend.UNHELD + value, ownerId, Long.toString(markMillis())));
    }
    return backend.releaseCall(
        name,
        claim,
        value,
        slot,
        claim.kind() == Claim.Kind.READ ? value : RedlockBackend.UNHELD + value);
  }

  /**
   * @return the outcome, or null if a majority was out of reach and {@code last} is false
   */
  private Poll round(boolean last) throws InterruptedException {
    // The quiet period after a split vote ends when a round starts, even one that starts early: a
    // wake-up remembered from the last round (its first release report, or a subscription's
    // confirmation, heard before the quiet period was set) lets the next round start before the
    // period is over, and a release that lands on a server after this round has read it must wake
    // us. Ignored as quiet, it was lost, and the waiter slept until its deadline (kit rule 11.3,
    // about once in three runs of the Redlock kit under load).
    quietUntil = System.nanoTime();
    for (Member m : backend.members) {
      if (!joined[m.index]) {
        // another waiter of this client already listens there: listen before polling, so no
        // release is missed
        joined[m.index] = m.subscriber.joinIfSubscribed(channel, quietableWake);
      }
    }
    giveBacks.removeIf(CompletableFuture::isDone); // a waiter that waits long runs many rounds
    // a fresh value per round: a late release of an earlier round can never delete this round's
    // keys
    String value = ownerId + "#" + backend.rounds.incrementAndGet();
    Call call = acquireCall(value);
    int asked = slot;
    pending = value;
    long start = System.nanoTime();
    int n = backend.members.size();
    Fanout<Object> acquire =
        Fanout.start(backend.members, m -> call.on(m, perServer), backend.executor);
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
            if (RedlockBackend.isGranted(a)) {
              granted++;
            } else {
              refused++;
            }
          }
          return granted >= backend.quorum || refused > n - backend.quorum;
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
              backend.members.get(i).endpoint()
                  + " did not answer within "
                  + Durations.format(perServer));
        }
      } else if (RedlockBackend.isGranted(a)) {
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
        unreachable.add(RedlockBackend.reason(backend.members.get(i), a));
      }
    }
    if (granted.size() >= backend.quorum) {
      if (token <= 0) {
        releaseAfterAnswers(acquire, value);
        throw new LockException(
            what
                + " was taken but its fence counters read "
                + token
                + "; someone changed "
                + backend.keys.fenceCounter(name)
                + " on "
                + backend.shownUri);
      }
      int raised = raiseFence(acquire, granted, token, value);
      long validUntil = start + leaseNanos - backend.driftNanos(lease);
      if (raised >= backend.quorum && System.nanoTime() - validUntil < 0) {
        leaveAll();
        pending = null;
        pendingAcquire = null;
        if (claim.kind() == Claim.Kind.WRITE) {
          unmarkWhereRefused(acquire);
          unmarkAfterEarlierRounds();
        }
        return Poll.grantedUntil(
            RedlockBackend.leaseToken(claim, token, asked),
            validUntil,
            new Grant(value, asked, validUntil, acquire));
      }
      LOG.debug(
          "{}: took {} of {} servers but {}; releasing and retrying",
          what,
          granted.size(),
          n,
          raised < backend.quorum ? "raised the fence on only " + raised : "no validity was left");
      if (raised >= backend.quorum && ++expiredGrants >= EXPIRED_GRANTS_LIMIT) {
        // the lease is shorter than a round takes here: every further round would end the same
        // way
        releaseAfterAnswers(acquire, value);
        pending = null;
        pendingAcquire = null;
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        throw new LockException(
            what
                + ": a majority of "
                + backend.shownUri
                + " granted it "
                + EXPIRED_GRANTS_LIMIT
                + " times in a row, but each time only after its validity was gone (`lease` '"
                + Durations.format(lease)
                + "' − drift allowance "
                + Durations.format(Duration.ofNanos(backend.driftNanos(lease)))
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
    if (mismatched >= backend.quorum) {
      // a majority holds live slots taken with another count: some lease of that count may be
      // valid
      long count = inUse.entrySet().stream().max(Map.Entry.comparingByValue()).get().getKey();
      throw Claim.permitsInUse(name, claim.permits(), (int) count);
    }
    if (unreachable.size() > n - backend.quorum) {
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
              + backend.shownUri
              + " answered and a lock needs "
              + backend.quorum
              + "; unreachable: "
              + String.join("; ", unreachable));
    }
    if (claim.kind() == Claim.Kind.PERMIT && mismatched == 0) {
      // the next round asks for a slot that a majority named free, at once; else for another slot
      // at random
      List<Integer> candidates = new ArrayList<>();
      for (Map.Entry<Long, Integer> e : free.entrySet()) {
        if (e.getValue() >= backend.quorum && e.getKey() != asked) {
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
    if (!granted.isEmpty() || busy < backend.quorum) {
      // a split vote (or too slow; or the servers we lack are split among others, so nobody holds
      // a
      // majority): retry after a random delay, ignoring wake-ups until then; whoever took more
      // servers retries sooner, so the contenders of a split do not meet again as equals
      long step = Math.min(25, elapsedMs + 2);
      long delay =
          1
              + step * Math.max(0, backend.quorum - 1 - granted.size())
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
        busyFor == Long.MAX_VALUE ? backend.context.recheck() : Duration.ofMillis(busyFor + 1));
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
        behind.add(backend.members.get(i));
      }
    }
    if (behind.isEmpty()) {
      return atToken;
    }
    Call call = raiseCall(value, token);
    Fanout<Object> raise = Fanout.start(behind, m -> call.on(m, perServer), backend.executor);
    if (atToken >= backend.quorum) {
      return atToken; // already a majority: the others are raised in the background, to spare
      // later acquisitions a round
    }
    int need = backend.quorum - atToken;
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
    for (Member m : backend.members) {
      if (!joined[m.index]) {
        m.subscriber.join(channel, quietableWake); // its confirmation wakes us to poll once more
        joined[m.index] = true;
      }
    }
  }

  private void leaveAll() {
    for (Member m : backend.members) {
      if (joined[m.index]) {
        m.subscriber.leave(channel, quietableWake);
        joined[m.index] = false;
      }
    }
  }

  /**
   * Withdraws, and returns once what this attempt gave back is given back on every server that
   * answers within `server-timeout` (two at most): a waiter that timed out, was interrupted or
   * cancelled leaves no slot, lock or writer's mark behind for the next caller to trip over. A hung
   * server is not waited for; what it holds expires.
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
      for (Member m : backend.members) {
        unmarks.add(rounds.thenCompose(x -> backend.inBackground(m, call)));
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
    for (int i = 0; i < backend.members.size(); i++) {
      Member m = backend.members.get(i);
      CompletableFuture<Object> answer = acquire.future(i);
      // given back where the server granted it, and where it did not answer (it may have granted
      // after all)
      CompletableFuture<Void> done =
          answer
              .handle((reply, error) -> error != null || RedlockBackend.isGranted(reply))
              .thenCompose(
                  give ->
                      give
                          ? backend.inBackground(m, call)
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
   * A granted writer's marks set again by its earlier rounds ({@link #earlierRounds}) go once those
   * rounds are done on every server. The owner id is this attempt's alone, so removing its mark
   * later can touch no other writer's.
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
              for (Member m : backend.members) {
                backend.inBackground(m, call);
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
        List.of("", channel, RedlockBackend.UNHELD + ownerId + "#granted", ownerId, "0"));
  }

  /**
   * A granted writer's marks on the servers that refused it go at once, so they do not outlive the
   * write lease.
   */
  private void unmarkWhereRefused(Fanout<Object> acquire) {
    Call call = unmarkGrantedCall();
    for (int i = 0; i < backend.members.size(); i++) {
      Member m = backend.members.get(i);
      acquire
          .future(i)
          .whenComplete(
              (reply, error) -> {
                if (!RedlockBackend.isGranted(reply)) {
                  backend.inBackground(m, call);
                }
              });
    }
  }
}
