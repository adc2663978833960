package dev.locksmith.local;

import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Guarantees.Promise;
import dev.locksmith.LockState;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.NamePage;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code local:} backend: a lock table in this JVM, leased, fenced, FIFO, woken by
 * notification.
 */
final class LocalBackend implements LockBackend {
  static final Guarantees GUARANTEES =
      Guarantees.builder()
          .features(
              Feature.FENCING,
              Feature.FIFO_FAIRNESS,
              Feature.RENEWAL,
              Feature.LOSS_DETECTION,
              Feature.NOTIFIED_WAKEUP,
              Feature.REENTRANCY,
              Feature.STATE_READS,
              Feature.EXTEND,
              Feature.HOLD_AFTER_RELEASE,
              Feature.BREAK_GLASS,
              Feature.LISTING,
              Feature.SEMAPHORES,
              Feature.READ_WRITE_LOCKS,
              Feature.ATOMIC_LOCK_SETS)
          // FIFO is declared, and checked by the kit, for locks only
          .except(Guarantees.Primitive.SEMAPHORE, Feature.FIFO_FAIRNESS)
          .except(Guarantees.Primitive.READ_WRITE_LOCK, Feature.FIFO_FAIRNESS)
          .promise(
              Fault.HOLDER_PAUSE,
              Promise.SAFE_WITH_FENCING,
              "the lease expires while the holder is paused; its token is then lower than the next"
                  + " holder's")
          .promise(
              Fault.HOLDER_CRASH,
              Promise.SAFE,
              "a holder that stops renewing loses the lock when its lease ends")
          .promise(Fault.PAUSE_DURING_ACQUIRE, Promise.SAFE_WITH_FENCING, "as for a paused holder")
          .promise(
              Fault.SERVER_RESTART,
              Promise.NOT_APPLICABLE,
              "the lock table lives and dies with the JVM")
          .promise(
              Fault.SERVER_PAUSE,
              Promise.UNAVAILABLE,
              "a suspended space refuses every call; leases are lost when renewal fails past their"
                  + " end")
          .promise(Fault.PARTITION, Promise.NOT_APPLICABLE, "no network")
          .promise(Fault.LEADER_FAILOVER, Promise.NOT_APPLICABLE, "no replication")
          .promise(
              Fault.CLOCK_JUMP,
              Promise.SAFE,
              "leases are timed with System.nanoTime, which a wall-clock jump does not move")
          .promise(Fault.RELEASE_AFTER_EXPIRY, Promise.SAFE, "release checks the owner")
          .promise(
              Fault.AMBIGUOUS_ACQUIRE,
              Promise.SAFE,
              "an abandoned attempt that was granted frees the lock")
          .promise(
              Fault.TOKEN_MONOTONICITY,
              Promise.SAFE,
              "one counter per lock name, never reset while the JVM lives")
          .build();

  /**
   * A waiting writer's mark outlives its last poll by this many of its client's recheck intervals.
   */
  private static final int MARK_RECHECKS = 3;

  private final LocalSpace space;
  private final long markNanos;

  LocalBackend(LocalSpace space, Duration recheck) {
    this.space = space;
    this.markNanos = recheck.toNanos() * MARK_RECHECKS;
  }

  @Override
  public Guarantees guarantees() {
    return GUARANTEES;
  }

  /** Every name free with nobody waiting: all taken under the space's one mutex; else none. */
  @Override
  public java.util.List<Poll> acquireAll(
      java.util.List<String> names, java.util.List<String> ownerIds, Duration lease) {
    long[] fences = space.takeAll(names, ownerIds, lease.toNanos());
    if (fences == null) {
      return java.util.List.of();
    }
    java.util.List<Poll> grants = new java.util.ArrayList<>(fences.length);
    for (long fence : fences) {
      grants.add(Poll.granted(fence, null));
    }
    return grants;
  }

  @Override
  public LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake) {
    LocalSpace.Queued me = new LocalSpace.Queued(ownerId, wake);
    long leaseNanos = lease.toNanos();
    space.enqueue(name, me);
    return new LockAttempt() {
      @Override
      public Poll poll() {
        long r = space.tryTake(name, me, leaseNanos);
        if (r > 0) {
          return Poll.granted(r, null);
        }
        return Poll.busy(r == -1 ? Duration.ofMillis(50) : Duration.ofNanos(-r));
      }

      @Override
      public void abandon() {
        space.withdraw(name, me);
      }
    };
  }

  @Override
  public LockAttempt attempt(
      String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
    if (claim.isExclusive()) {
      return attempt(name, ownerId, lease, wake);
    }
    String key = LocalSpace.sharedKey(name, claim);
    LocalSpace.Queued me = new LocalSpace.Queued(ownerId, wake);
    long leaseNanos = lease.toNanos();
    space.enqueueShared(key, me);
    return new LockAttempt() {
      @Override
      public Poll poll() {
        long r = space.tryTakeShared(key, name, claim, me, leaseNanos, markNanos);
        return r > 0 ? Poll.granted(r, null) : Poll.busy(Duration.ofNanos(-r));
      }

      @Override
      public void abandon() {
        space.withdrawShared(key, me);
      }
    };
  }

  @Override
  public List<Renewal> renew(List<BackendLease> leases) {
    List<Renewal> out = new ArrayList<>(leases.size());
    for (BackendLease lease : leases) {
      try {
        String why =
            lease.claim().isExclusive()
                ? space.renew(lease.name(), lease.ownerId(), lease.lease().toNanos())
                : space.renewShared(
                    LocalSpace.sharedKey(lease.name(), lease.claim()),
                    lease.ownerId(),
                    lease.lease().toNanos());
        out.add(why == null ? Renewal.renewed() : Renewal.lost(why));
      } catch (RuntimeException e) {
        out.add(Renewal.failed(e));
      }
    }
    return out;
  }

  @Override
  public boolean extend(BackendLease lease, java.time.Duration newLease) {
    if (!lease.claim().isExclusive()) {
      return space.renewShared(
              LocalSpace.sharedKey(lease.name(), lease.claim()),
              lease.ownerId(),
              newLease.toNanos())
          == null;
    }
    return space.renew(lease.name(), lease.ownerId(), newLease.toNanos()) == null;
  }

  @Override
  public boolean releaseAfter(BackendLease lease, java.time.Duration keep) {
    return space.releaseAfter(lease.name(), lease.ownerId(), keep.toNanos());
  }

  @Override
  public boolean release(BackendLease lease) {
    if (!lease.claim().isExclusive()) {
      return space.releaseShared(
          LocalSpace.sharedKey(lease.name(), lease.claim()), lease.ownerId());
    }
    return space.release(lease.name(), lease.ownerId());
  }

  @Override
  public LockState inspect(String name) {
    return space.state(name);
  }

  /** Every grant and release, told in-process under the space's mutex. */
  @Override
  public dev.locksmith.spi.HolderWatch watchHolder(String name, Runnable changed) {
    Runnable stop = space.watch(name, changed);
    changed.run(); // in place: read once
    return dev.locksmith.spi.HolderWatch.of(true, stop);
  }

  @Override
  public boolean breakLock(String name) {
    return space.breakLock(name);
  }

  /** In name order; the cursor is the last name of the page. */
  @Override
  public NamePage listNames(String prefix, String cursor, int limit) {
    List<String> names = space.heldNames(prefix, cursor, limit);
    if (names.size() <= limit) {
      return NamePage.of(names, null);
    }
    List<String> page = names.subList(0, limit);
    return NamePage.of(page, page.get(limit - 1));
  }

  @Override
  public NamePage listNames(
      String prefix, String cursor, int limit, dev.locksmith.Guarantees.Primitive primitive) {
    if (primitive == dev.locksmith.Guarantees.Primitive.LOCK) {
      return listNames(prefix, cursor, limit);
    }
    String kind = primitive == dev.locksmith.Guarantees.Primitive.SEMAPHORE ? "sem" : "rw";
    List<String> names = space.heldSharedNames(kind, prefix, cursor, limit);
    if (names.size() <= limit) {
      return NamePage.of(names, null);
    }
    List<String> page = names.subList(0, limit);
    return NamePage.of(page, page.get(limit - 1));
  }

  @Override
  public dev.locksmith.HeldLock inspectHolders(
      String name, dev.locksmith.Guarantees.Primitive primitive) {
    boolean semaphore = primitive == dev.locksmith.Guarantees.Primitive.SEMAPHORE;
    Claim claim = semaphore ? Claim.permit(1) : Claim.read();
    return space.holders(LocalSpace.sharedKey(name, claim), name, semaphore);
  }

  @Override
  public void close() {
    // nothing to close: the space outlives its clients
  }

  @Override
  public String toString() {
    return "local:" + space.name;
  }
}
