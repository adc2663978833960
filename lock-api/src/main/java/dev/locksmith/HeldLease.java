package dev.locksmith;

import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/** One lease the backend granted, shared by every reentrant holding of it. */
final class HeldLease {
  enum State {
    HELD,
    RELEASED,
    LOST
  }

  final String name;
  final Claim claim;

  /** Keys the client's waiters of the same resource (a lock, a semaphore, a read-write lock). */
  final String resourceKey;

  /**
   * Keys the holding thread's reentrancy: a semaphore, a lock, or one side of a read-write lock.
   */
  final String threadKey;

  final String ownerId;
  final long token;
  final long leaseNanos;

  /**
   * Renewed by the core's scheduler (as opposed to expiring, or living by the backend's session).
   */
  final boolean scheduledRenewal;

  /** Held by the backend's session while auto-renew is on. */
  final boolean sessionHeld;

  /** Granted for the backend's session: only a release frees it on the server, never time. */
  final boolean sessionGrant;

  final Thread owner;
  final long grantedAt;
  final BackendLease backendLease;
  final CompletableFuture<LeaseLostException> lost = new CompletableFuture<>();
  final AtomicReference<State> state = new AtomicReference<>(State.HELD);
  final AtomicInteger holds = new AtomicInteger(1);
  volatile long validUntil;
  volatile long nextRenewAt;

  HeldLease(
      BackendLease backendLease,
      long fencingFloor,
      boolean scheduledRenewal,
      boolean sessionGrant,
      boolean sessionHeld,
      Thread owner,
      long grantedAt,
      long validUntil,
      long leaseNanos) {
    this.name = backendLease.name();
    this.claim = backendLease.claim();
    this.resourceKey = resourceKey(name, claim);
    this.threadKey = threadKey(name, claim);
    this.ownerId = backendLease.ownerId();
    // what the lease shows; the backend is always given its own token, in backendLease
    this.token = backendLease.fencingToken() + fencingFloor;
    this.backendLease = backendLease;
    this.scheduledRenewal = scheduledRenewal;
    this.sessionHeld = sessionHeld;
    this.sessionGrant = sessionGrant;
    this.owner = owner;
    this.grantedAt = grantedAt;
    this.validUntil = validUntil;
    this.leaseNanos = leaseNanos;
    this.nextRenewAt = scheduledRenewal ? grantedAt + renewInterval() : Long.MAX_VALUE;
  }

  /**
   * Names can hold no control characters, so a NUL-prefixed key never meets a lock's own name.
   *
   * @return the key of the resource a claim is on, for waking this client's waiters of it
   */
  static String resourceKey(String name, Claim claim) {
    switch (claim.kind()) {
      case PERMIT:
        return "\0sem\0" + name;
      case READ:
      case WRITE:
        return "\0rw\0" + name;
      default:
        return name;
    }
  }

  /**
   * @return the key of a thread's holding of a claim: one per lock, semaphore, or read-write side
   */
  static String threadKey(String name, Claim claim) {
    switch (claim.kind()) {
      case READ:
        return "\0r\0" + name;
      case WRITE:
        return "\0w\0" + name;
      default:
        return resourceKey(name, claim);
    }
  }

  /**
   * @return how messages name the resource: "lock 'x'", "semaphore 'x'", "read lock of 'x'"
   */
  static String describe(String name, Claim claim) {
    switch (claim.kind()) {
      case PERMIT:
        return "semaphore '" + name + "'";
      case READ:
        return "read lock of '" + name + "'";
      case WRITE:
        return "write lock of '" + name + "'";
      default:
        return "lock '" + name + "'";
    }
  }

  long renewInterval() {
    return leaseNanos / 3;
  }

  /** When the scheduler must look at this lease next. */
  long nextDue() {
    return scheduledRenewal ? Math.min(nextRenewAt, validUntil) : validUntil;
  }

  boolean isValid() {
    return state.get() == State.HELD && System.nanoTime() - validUntil < 0;
  }

  /** Adds a reentrant holding, unless the last holding is being released right now. */
  boolean enterAgain() {
    if (state.get() != State.HELD || !isValid()) {
      return false;
    }
    return holds.getAndUpdate(n -> n > 0 ? n + 1 : n) > 0;
  }

  /**
   * @return holdings left after dropping one; -1 if there were none
   */
  int exitOnce() {
    int before = holds.getAndUpdate(n -> n > 0 ? n - 1 : n);
    return before > 0 ? before - 1 : -1;
  }
}
