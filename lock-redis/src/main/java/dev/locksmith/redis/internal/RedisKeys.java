package dev.locksmith.redis.internal;

/**
 * Internal: for lock-redlock, not for applications; may change.
 *
 * <p>Where one lock lives in Redis. Both keys and the wake-up channel of a lock start with the
 * hash tag {@code {<namespace><name>}}, so a lock's keys share one Redis Cluster hash slot and
 * the scripts stay legal on a cluster. The namespace is never empty and holds no brace, so the
 * tag is never empty and ends at the same place in every key of the lock, whatever the name holds.
 */
public final class RedisKeys {
  private final String namespace;

  /** @param namespace the prefix of every key and channel, already checked */
  public RedisKeys(String namespace) {
    this.namespace = namespace;
  }

  /**
   * @param lockName the lock's name
   * @return the key that holds the owner id of the lock's holder, with the lease as its TTL
   */
  public String owner(String lockName) {
    return tag(lockName) + ":owner";
  }

  /**
   * @param lockName the lock's name
   * @return the key of the lock's fence counter; it has no TTL, so tokens keep increasing
   */
  public String fence(String lockName) {
    return tag(lockName) + ":fence";
  }

  /**
   * @param lockName the lock's name
   * @return the sorted set of the lock's waiters (owner ids), in arrival order
   */
  public String queue(String lockName) {
    return tag(lockName) + ":queue";
  }

  /**
   * @param lockName the lock's name
   * @return the sorted set of when each queued waiter's entry lapses unless it polls again
   */
  public String queueDeadlines(String lockName) {
    return tag(lockName) + ":queue-deadlines";
  }

  /**
   * @param lockName the lock's name
   * @return the channel a release of the lock is published on
   */
  public String releasedChannel(String lockName) {
    return tag(lockName) + ":released";
  }

  /**
   * @param clientId a client's id
   * @return a channel only that client subscribes to, which keeps its subscriber connection open
   */
  public String clientChannel(String clientId) {
    return namespace + "client:" + clientId;
  }

  /**
   * @param lockName a lock whose Cluster slot the channel must share
   * @param clientId a client's id
   * @return a channel only that client subscribes to, in the lock's slot: it keeps that client's
   *     sharded subscriber connection to the slot's node open (sharded pub/sub, on a Cluster)
   */
  public String clientChannel(String lockName, String clientId) {
    return tag(lockName) + ":client:" + clientId;
  }

  /** @return the namespace every key and channel starts with */
  public String namespace() {
    return namespace;
  }

  private String tag(String lockName) {
    return "{" + namespace + lockName + "}";
  }
}
