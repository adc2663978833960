package dev.locksmith.spring;

import org.springframework.context.ApplicationEvent;

/**
 * A change of this instance's leadership in an election of {@code locksmith.elections.<name>}:
 * {@link LeadershipGrantedEvent} when it starts leading, {@link LeadershipRevokedEvent} when it
 * stops. Published on the election's own thread, in order (a revocation before the next grant);
 * listen with {@code @EventListener}. The source is the {@link LocksmithElections} bean.
 */
public abstract class LeadershipEvent extends ApplicationEvent {
  private static final long serialVersionUID = 1L;

  private final String election;
  private final long term;

  LeadershipEvent(LocksmithElections source, String election, long term) {
    super(source);
    this.election = election;
    this.term = term;
  }

  /**
   * @return the election's name: the key under {@code locksmith.elections}, and the name of the
   *     lock the leader holds
   */
  public String election() {
    return election;
  }

  /**
   * @return the leadership's term: the lock's fencing token, above every earlier leader's; pass it
   *     with what the leader writes, so that a deposed leader's late writes are refused
   */
  public long term() {
    return term;
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + "{election=" + election + ", term=" + term + "}";
  }
}
