package dev.locksmith.spring;

/**
 * This instance no longer leads the election {@link #election()}. On a shutdown or a resignation it
 * is published before the lock is released, so listeners stop the leader's work before another
 * instance is elected; when the lease was lost instead (expired, taken, server unreachable) another
 * instance may already lead, which is what the {@link #term()} is for.
 */
public final class LeadershipRevokedEvent extends LeadershipEvent {
  private static final long serialVersionUID = 1L;

  LeadershipRevokedEvent(LocksmithElections source, String election, long term) {
    super(source, election, term);
  }
}
