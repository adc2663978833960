package dev.locksmith.spring;

/**
 * This instance leads the election {@link #election()} from now on, with the term {@link #term()};
 * a {@link LeadershipRevokedEvent} of the same term follows when it stops.
 */
public final class LeadershipGrantedEvent extends LeadershipEvent {
  private static final long serialVersionUID = 1L;

  LeadershipGrantedEvent(LocksmithElections source, String election, long term) {
    super(source, election, term);
  }
}
