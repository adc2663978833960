package dev.locksmith.redlock;

import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisScripts.Script;
import java.util.List;

/**
 * The keys and the per-server Lua scripts of semaphores and read-write locks over several
 * independent servers. Each script runs atomically on one server and answers for that server only;
 * {@link RedlockBackend} counts the answers toward a majority, as for locks.
 *
 * <p>Keys share the hash tag of the lock of the same name ({@code {<namespace><name>}}), so the
 * fence counter is the lock's (the counter of that slot), and differ from the lock's and from each
 * other's by their suffix: a lock, a semaphore and a read-write lock of one name have no key in
 * common.
 *
 * <p>A semaphore of N permits is N exclusive slots {@code 0..N-1}, each held over a majority like a
 * lock (the README says why per-server counting semaphores would not bound the holders to N). One
 * server keeps a sorted set of its live slots (member: slot index, score: expiry in the server's
 * own clock, ms), a hash slot → the holding round's value, and the permit count the live slots were
 * taken with. A read-write lock keeps per server a sorted set of live read leases and one of live
 * write leases (member: the round's value, score: expiry), and a sorted set of waiting writers
 * (member: the writer's owner id, score: when its mark lapses). Every script first drops what has
 * expired by the server's clock ({@code TIME}), and gives each key the TTL of its last entry, so an
 * unused resource vanishes by itself. The fence counter has no TTL.
 */
final class ClaimScripts {
  /** The message of a waiting writer's withdrawal starts with it (followed by its owner id). */
  static final String UNMARKED = "writer-withdrew:";

  private ClaimScripts() {}

  /** Where one semaphore or read-write lock lives on each server. */
  static final class Keys {
    private final RedisKeys keys;

    Keys(RedisKeys keys) {
      this.keys = keys;
    }

    /**
     * The tag of the lock of the same name, so both live in one slot and share its fence counter.
     */
    private String tag(String name) {
      return "{" + keys.namespace() + name + "}";
    }

    String semaphoreSlots(String name) {
      return tag(name) + ":sem:slots";
    }

    String semaphoreOwners(String name) {
      return tag(name) + ":sem:slot-owners";
    }

    String semaphorePermits(String name) {
      return tag(name) + ":sem:permits";
    }

    String semaphoreChannel(String name) {
      return tag(name) + ":sem:released";
    }

    String readLeases(String name) {
      return tag(name) + ":rw:read";
    }

    String writeLeases(String name) {
      return tag(name) + ":rw:write";
    }

    String writersWaiting(String name) {
      return tag(name) + ":rw:writers-waiting";
    }

    String readWriteChannel(String name) {
      return tag(name) + ":rw:released";
    }

    String fenceCounter(String name) {
      return keys.fenceCounter(name);
    }

    /**
     * @return every key of the semaphore and of the read-write lock of that name (for tests'
     *     revoke)
     */
    List<String> all(String name) {
      return List.of(
          semaphoreSlots(name),
          semaphoreOwners(name),
          semaphorePermits(name),
          readLeases(name),
          writeLeases(name),
          writersWaiting(name));
    }
  }

  /**
   * {@code now}: the server's clock in ms. {@code keep(key, a, b)}: gives the sorted set {@code
   * key} (and the keys {@code a}, {@code b} that live as long as it) the TTL of its last score, or
   * deletes them all when it is empty. {@code earliest(key, than)}: the lowest score of a sorted
   * set, or {@code than} if that is lower or the set is empty.
   */
  private static final String PRELUDE =
      "local t = redis.call('TIME')\n"
          + "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
          + "local function keep(key, a, b)\n"
          + "  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')\n"
          + "  if last[2] then\n"
          + "    local ttl = math.max(1, tonumber(last[2]) - now)\n"
          + "    redis.call('PEXPIRE', key, ttl)\n"
          + "    if a then redis.call('PEXPIRE', a, ttl) end\n"
          + "    if b then redis.call('PEXPIRE', b, ttl) end\n"
          + "  else\n"
          + "    redis.call('DEL', key)\n"
          + "    if a then redis.call('DEL', a) end\n"
          + "    if b then redis.call('DEL', b) end\n"
          + "  end\n"
          + "end\n"
          + "local function earliest(key, than)\n"
          + "  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')\n"
          + "  local at = first[2] and tonumber(first[2])\n"
          + "  if at and (not than or at < than) then return at end\n"
          + "  return than\n"
          + "end\n";

  /**
   * Drops the semaphore's expired slots (KEYS[1]) and their owners (KEYS[2]), in chunks that Lua's
   * unpack can take.
   */
  private static final String PURGE_SLOTS =
      "local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)\n"
          + "if #gone > 0 then\n"
          + "  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
          + "  for i = 1, #gone, 1000 do\n"
          + "    redis.call('HDEL', KEYS[2], unpack(gone, i, math.min(i + 999, #gone)))\n"
          + "  end\n"
          + "end\n";

  /**
   * KEYS: slots, slot owners, permit count, fence counter. ARGV: the round's value, lease in ms,
   * permits N, the slot asked for, where to start looking for free slots, how many to report. With
   * live slots taken with another count: {-1, that count, ms until the earliest ends}, and nothing
   * changes. Else, if the slot asked for is free: takes it for the lease, keeps the count,
   * increments the fence counter and answers {1, the counter}. Else {0, ms until the earliest live
   * slot ends, then up to the number asked of free slots, looking from the start given onwards}.
   */
  static final Script SEMAPHORE_ACQUIRE =
      Script.of(
          "redlock-semaphore-acquire",
          PRELUDE
              + PURGE_SLOTS
              + "local n = tonumber(ARGV[3])\n"
              + "local busy = redis.call('ZCARD', KEYS[1])\n"
              + "local wait = math.max(1, (earliest(KEYS[1]) or now) - now)\n"
              + "if busy == 0 then\n"
              + "  redis.call('DEL', KEYS[3])\n"
              + "else\n"
              + "  local inUse = tonumber(redis.call('GET', KEYS[3]) or ARGV[3])\n"
              + "  if inUse ~= n then\n"
              + "    return {-1, inUse, wait}\n"
              + "  end\n"
              + "end\n"
              + "if busy < n and tonumber(ARGV[4]) < n and not redis.call('ZSCORE', KEYS[1],"
              + " ARGV[4]) then\n"
              + "  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[4])\n"
              + "  redis.call('HSET', KEYS[2], ARGV[4], ARGV[1])\n"
              + "  redis.call('SET', KEYS[3], ARGV[3])\n"
              + "  keep(KEYS[1], KEYS[2], KEYS[3])\n"
              + "  return {1, redis.call('INCR', KEYS[4])}\n"
              + "end\n"
              + "local answer = {0, wait}\n"
              + "if busy < n then\n"
              + "  local start = tonumber(ARGV[5])\n"
              + "  local want = tonumber(ARGV[6])\n"
              + "  local i = 0\n"
              + "  while i < n and #answer - 2 < want do\n"
              + "    local slot = (start + i) % n\n"
              + "    if not redis.call('ZSCORE', KEYS[1], tostring(slot)) then\n"
              + "      answer[#answer + 1] = slot\n"
              + "    end\n"
              + "    i = i + 1\n"
              + "  end\n"
              + "end\n"
              + "return answer\n");

  /**
   * KEYS: slots, slot owners, permit count. ARGV: the round's value, the new lease in ms, the slot.
   * Renewal and extend: sets the slot's expiry to the lease from now, only if the slot is live and
   * ours. Returns 1 if so, 0 if it is live and another's, -1 if it is gone.
   */
  static final Script SEMAPHORE_RENEW =
      Script.of(
          "redlock-semaphore-renew",
          PRELUDE
              + "local owner = redis.call('HGET', KEYS[2], ARGV[3])\n"
              + "local at = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[3]) or '0')\n"
              + "if at <= now then\n"
              + "  return -1\n"
              + "end\n"
              + "if owner ~= ARGV[1] then\n"
              + "  return 0\n"
              + "end\n"
              + "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])\n"
              + "keep(KEYS[1], KEYS[2], KEYS[3])\n"
              + "return 1\n");

  /**
   * KEYS: slots, slot owners, permit count. ARGV: the round's value, the slot, the channel, the
   * message. Frees the slot only if ours, and publishes the message. Returns 1 if it was ours and
   * live, else 0.
   */
  static final Script SEMAPHORE_RELEASE =
      Script.of(
          "redlock-semaphore-release",
          PRELUDE
              + "if redis.call('HGET', KEYS[2], ARGV[2]) ~= ARGV[1] then\n"
              + "  return 0\n"
              + "end\n"
              + "local at = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]) or '0')\n"
              + "redis.call('ZREM', KEYS[1], ARGV[2])\n"
              + "redis.call('HDEL', KEYS[2], ARGV[2])\n"
              + "keep(KEYS[1], KEYS[2], KEYS[3])\n"
              + "if at > now then\n"
              + "  redis.call('PUBLISH', ARGV[3], ARGV[4])\n"
              + "  return 1\n"
              + "end\n"
              + "return 0\n");

  /**
   * KEYS: slots, slot owners, fence counter. ARGV: the round's value, the token, the slot. Raises
   * the fence counter to at least the token, only while the slot is live and ours. Returns 1 if so,
   * 0 if it is another's, -1 if it is gone.
   */
  static final Script SEMAPHORE_RAISE_FENCE =
      Script.of(
          "redlock-semaphore-raise-fence",
          PRELUDE
              + "local at = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[3]) or '0')\n"
              + "if at <= now then\n"
              + "  return -1\n"
              + "end\n"
              + "if redis.call('HGET', KEYS[2], ARGV[3]) ~= ARGV[1] then\n"
              + "  return 0\n"
              + "end\n"
              + "if tonumber(redis.call('GET', KEYS[3]) or '0') < tonumber(ARGV[2]) then\n"
              + "  redis.call('SET', KEYS[3], ARGV[2])\n"
              + "end\n"
              + "return 1\n");

  /**
   * KEYS: read leases, write leases, writers waiting, fence counter. ARGV: the round's value, lease
   * in ms, {@code read} or {@code write}, the writer's owner id, how long a writer's mark lives in
   * ms (0: none, a writer that does not wait). A writer is granted when no lease is live, and then
   * loses its mark; else it marks itself waiting (or refreshes its mark) and is refused. A reader
   * is granted when no write lease is live and no writer's mark is. Grant: {1, the fence counter
   * after INCR}. Refused: {0, ms until the earliest lease or mark in the way ends}.
   */
  static final Script READ_WRITE_ACQUIRE =
      Script.of(
          "redlock-read-write-acquire",
          PRELUDE
              + "for i = 1, 3 do\n"
              + "  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)\n"
              + "end\n"
              + "local life = tonumber(ARGV[2])\n"
              + "if ARGV[3] == 'write' then\n"
              + "  if redis.call('ZCARD', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[2]) == 0"
              + " then\n"
              + "    redis.call('ZADD', KEYS[2], now + life, ARGV[1])\n"
              + "    redis.call('ZREM', KEYS[3], ARGV[4])\n"
              + "    keep(KEYS[2])\n"
              + "    keep(KEYS[3])\n"
              + "    return {1, redis.call('INCR', KEYS[4])}\n"
              + "  end\n"
              + "  if tonumber(ARGV[5]) > 0 then\n"
              + "    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[5]), ARGV[4])\n"
              + "    keep(KEYS[3])\n"
              + "  end\n"
              + "  return {0, math.max(1, (earliest(KEYS[1], earliest(KEYS[2])) or now) - now)}\n"
              + "end\n"
              + "if redis.call('ZCARD', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[3]) == 0 then\n"
              + "  redis.call('ZADD', KEYS[1], now + life, ARGV[1])\n"
              + "  keep(KEYS[1])\n"
              + "  return {1, redis.call('INCR', KEYS[4])}\n"
              + "end\n"
              + "return {0, math.max(1, (earliest(KEYS[2], earliest(KEYS[3])) or now) - now)}\n");

  /**
   * KEYS: the lease's sorted set (read or write leases). ARGV: the round's value, the new lease in
   * ms. Renewal and extend: sets our lease's expiry to the lease from now, only if it is live.
   * Returns 1 if so, else -1 (gone: a side's leases are told apart by their values only).
   */
  static final Script READ_WRITE_RENEW =
      Script.of(
          "redlock-read-write-renew",
          PRELUDE
              + "local at = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]) or '0')\n"
              + "if at <= now then\n"
              + "  return -1\n"
              + "end\n"
              + "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\n"
              + "keep(KEYS[1])\n"
              + "return 1\n");

  /**
   * KEYS: the lease's sorted set (read or write leases), writers waiting. ARGV: the round's value
   * (empty: none), the channel, the message, a writer's owner id (empty: none), its mark's life in
   * ms. Removes our lease; then, for a writer, marks it waiting again when the life is above 0 (a
   * writer's round that did not win a majority gives its servers back but keeps readers out), or
   * removes its mark when the life is 0 (the writer withdrew, or was granted). Publishes the
   * message when a live lease or a mark went. Returns 1 if a live lease of ours went, else 0.
   */
  static final Script READ_WRITE_RELEASE =
      Script.of(
          "redlock-read-write-release",
          PRELUDE
              + "local ours = 0\n"
              + "if ARGV[1] ~= '' then\n"
              + "  local at = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
              + "  if at then\n"
              + "    redis.call('ZREM', KEYS[1], ARGV[1])\n"
              + "    if tonumber(at) > now then ours = 1 end\n"
              + "    keep(KEYS[1])\n"
              + "  end\n"
              + "end\n"
              + "local unmarked = 0\n"
              + "if ARGV[4] ~= '' then\n"
              + "  local life = tonumber(ARGV[5])\n"
              + "  if life > 0 then\n"
              + "    redis.call('ZADD', KEYS[2], now + life, ARGV[4])\n"
              + "  else\n"
              + "    unmarked = redis.call('ZREM', KEYS[2], ARGV[4])\n"
              + "  end\n"
              + "  keep(KEYS[2])\n"
              + "end\n"
              + "if ours == 1 or unmarked == 1 then\n"
              + "  redis.call('PUBLISH', ARGV[2], ARGV[3])\n"
              + "end\n"
              + "return ours\n");

  /**
   * KEYS: the lease's sorted set, fence counter. ARGV: the round's value, the token. Raises the
   * fence counter to at least the token, only while our lease is live. Returns 1 if so, else -1.
   */
  static final Script READ_WRITE_RAISE_FENCE =
      Script.of(
          "redlock-read-write-raise-fence",
          PRELUDE
              + "local at = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]) or '0')\n"
              + "if at <= now then\n"
              + "  return -1\n"
              + "end\n"
              + "if tonumber(redis.call('GET', KEYS[2]) or '0') < tonumber(ARGV[2]) then\n"
              + "  redis.call('SET', KEYS[2], ARGV[2])\n"
              + "end\n"
              + "return 1\n");
}
