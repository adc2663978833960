package dev.locksmith.redis.internal;

/**
 * Internal: for lock-redlock, not for applications; may change.
 *
 * <p>Where one lock lives in Redis. The keys and the wake-up channel of a lock start with the hash
 * tag {@code {<namespace><name>}}, so a lock's keys share one Redis Cluster hash slot and the
 * scripts stay legal on a cluster. The namespace is never empty and holds no brace, so the tag is
 * never empty and ends at the same place in every key of the lock, whatever the name holds (a '}'
 * in the name ends it early, the same way in each of them).
 *
 * <p>Fencing tokens come from one counter per namespace and hash slot, {@code
 * <namespace>fence:{<slot tag>}}, where the slot tag is a short fixed text that hashes to the slot
 * of the lock's keys: at most 16,384 counters per namespace, whatever the number of lock names, and
 * each in the slot of every lock it serves.
 */
public final class RedisKeys {
  private final String namespace;

  /**
   * @param namespace the prefix of every key and channel, already checked
   */
  public RedisKeys(String namespace) {
    this.namespace = namespace;
    HashSlots.tag(0); // finds the slot tags now, at connect, rather than in the first acquire
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
   * @return the key that holds the token of the lock's holder, with the owner key's TTL
   */
  public String token(String lockName) {
    return tag(lockName) + ":token";
  }

  /**
   * @param lockName the lock's name
   * @return the key of the fence counter that the lock's tokens come from, shared by every lock of
   *     the namespace in the same hash slot; it has no TTL, so tokens keep increasing
   */
  public String fenceCounter(String lockName) {
    return fenceCounterOfSlot(slot(lockName));
  }

  /**
   * @param slot a hash slot, 0 to 16,383
   * @return the key of the namespace's fence counter in that slot
   */
  public String fenceCounterOfSlot(int slot) {
    if (slot < 0 || slot >= HashSlots.COUNT) {
      throw new IllegalArgumentException(
          "slot was " + slot + " but it must be from 0 to " + (HashSlots.COUNT - 1));
    }
    return namespace + "fence:{" + HashSlots.tag(slot) + "}";
  }

  /**
   * @param lockName the lock's name
   * @return the Redis Cluster hash slot of every key of the lock, 0 to 16,383
   */
  public int slot(String lockName) {
    return HashSlots.of(tag(lockName));
  }

  /**
   * @param lockName the lock's name
   * @return the lock's own fence counter of versions before the per-slot counters, no TTL; an
   *     acquire folds it into the slot's counter once and deletes it
   */
  public String legacyFence(String lockName) {
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

  // ---------------------------------------------------------------- semaphores and read-write
  // locks
  // Same hash tag as the lock of the same name (one slot, one fence counter), other suffixes: a
  // lock, a semaphore and a read-write lock of one name are three resources with no key in common.

  /**
   * @param name the semaphore's name
   * @return the sorted set of the semaphore's live leases: owner id, score = expiry (server clock,
   *     ms)
   */
  public String semaphoreLeases(String name) {
    return tag(name) + ":sem:leases";
  }

  /**
   * @param name the semaphore's name
   * @return the key that holds the permit count the live leases were taken with, expiring with them
   */
  public String semaphorePermits(String name) {
    return tag(name) + ":sem:permits";
  }

  /**
   * @param name the semaphore's name
   * @return the hash of the token each live lease was granted: owner id to token, written by the
   *     grant, dropped with the lease, expiring with the leases; read by a listing
   */
  public String semaphoreTokens(String name) {
    return tag(name) + ":sem:tokens";
  }

  /**
   * @param name the semaphore's name
   * @return the key whose presence says that some waiter polled busy lately, so a release publishes
   */
  public String semaphoreWaiting(String name) {
    return tag(name) + ":sem:waiting";
  }

  /**
   * @param name the semaphore's name
   * @return the channel a release of one of the semaphore's permits is published on
   */
  public String semaphoreChannel(String name) {
    return tag(name) + ":sem:released";
  }

  /**
   * @param name the read-write lock's name
   * @return the sorted set of its live read leases: owner id, score = expiry (server clock, ms)
   */
  public String readLeases(String name) {
    return tag(name) + ":rw:read";
  }

  /**
   * @param name the read-write lock's name
   * @return the sorted set of its live write lease (at most one): owner id, score = expiry (server
   *     clock, ms)
   */
  public String writeLeases(String name) {
    return tag(name) + ":rw:write";
  }

  /**
   * @param name the read-write lock's name
   * @return the hash of the token each live read lease was granted (owner id to token), as {@link
   *     #semaphoreTokens}
   */
  public String readTokens(String name) {
    return tag(name) + ":rw:read-tokens";
  }

  /**
   * @param name the read-write lock's name
   * @return the hash of the token the live write lease was granted (owner id to token), as {@link
   *     #semaphoreTokens}
   */
  public String writeTokens(String name) {
    return tag(name) + ":rw:write-tokens";
  }

  /**
   * @param name the read-write lock's name
   * @return the sorted set of its waiting writers: owner id, score = when the mark lapses unless
   *     the writer polls again (server clock, ms)
   */
  public String writersWaiting(String name) {
    return tag(name) + ":rw:writers-waiting";
  }

  /**
   * @param name the read-write lock's name
   * @return the key whose presence says that some waiter polled busy lately, so a release publishes
   */
  public String readWriteWaiting(String name) {
    return tag(name) + ":rw:waiting";
  }

  /**
   * @param name the read-write lock's name
   * @return the channel a release of either side (or a waiting writer's withdrawal) is published on
   */
  public String readWriteChannel(String name) {
    return tag(name) + ":rw:released";
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

  /**
   * @return the namespace every key and channel starts with
   */
  public String namespace() {
    return namespace;
  }

  private String tag(String lockName) {
    return "{" + namespace + lockName + "}";
  }
}
