package dev.locksmith.redis.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Internal: for lock-redlock, not for applications; may change.
 *
 * <p>The Lua scripts of the Redis lock protocol. Each runs atomically on the server, touches only
 * keys of one hash slot (a lock's own keys and the fence counter of its slot, see {@link
 * RedisKeys}) and needs one round trip.
 *
 * <p>Tokens: a grant increments the fence counter of the lock's slot and keeps the new value, the
 * holder's token, in the lock's token key, which lives exactly as long as the owner key (same TTL,
 * set, extended and deleted together). The first grant of a lock that still has a per-lock fence
 * counter of an older version first raises the slot's counter to at least that counter and deletes
 * it, so a lock's tokens keep rising across the upgrade.
 */
public final class RedisScripts {

  /**
   * Internal: for lock-redlock, not for applications; may change. A script's text and its SHA-1,
   * computed here so EVALSHA needs no SCRIPT LOAD reply. Run it with {@link RedisNode#eval}.
   */
  public static final class Script {
    final String name;
    final String text;
    final String sha;

    Script(String name, String text) {
      this.name = name;
      this.text = text;
      this.sha = sha1(text);
    }

    /**
     * Internal: for lock-redlock's own scripts (semaphores and read-write locks over several
     * servers), run with {@link RedisNode#eval} like these; not loaded at connect, so the first
     * call on each server costs one more round trip (EVALSHA, then EVAL).
     *
     * @param name a short name, for messages
     * @param text the Lua text
     * @return the script with its SHA-1
     */
    public static Script of(String name, String text) {
      return new Script(name, text);
    }

    @Override
    public String toString() {
      return name;
    }
  }

  /**
   * The grant of both acquire scripts, whose KEYS start with owner key, token key, fence counter
   * key, legacy fence key and whose ARGV[2] is the lease in ms: folds the legacy per-lock counter
   * (if any) into the slot's counter and deletes it, increments the counter, and keeps the new
   * value as the holder's token with the lease as TTL. Returns {1, token}.
   */
  private static final String GRANT =
      "local function grant()\n"
          + "  local legacy = redis.call('GET', KEYS[4])\n"
          + "  if legacy then\n"
          + "    if tonumber(legacy) > tonumber(redis.call('GET', KEYS[3]) or '0') then\n"
          + "      redis.call('SET', KEYS[3], legacy)\n"
          + "    end\n"
          + "    redis.call('DEL', KEYS[4])\n"
          + "  end\n"
          + "  local token = redis.call('INCR', KEYS[3])\n"
          + "  redis.call('SET', KEYS[2], token, 'PX', ARGV[2])\n"
          + "  return {1, token}\n"
          + "end\n";

  /**
   * The retry of an owner that already holds the lock (its reply was lost), for both acquire
   * scripts: extends the owner and token keys to the lease and returns {1, our token}.
   */
  private static final String REGRANT =
      "local function regrant()\n"
          + "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
          + "  redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
          + "  return {1, tonumber(redis.call('GET', KEYS[2]) or '0')}\n"
          + "end\n";

  /**
   * KEYS: owner key, token key, fence counter key, legacy fence key. ARGV: owner id, lease in ms.
   * Takes a free lock and draws its token from the slot's fence counter in one step: returns {1,
   * token}. If we already hold it (a retry after a lost reply), extends it and returns {1, our
   * token}. If someone else holds it: {0, the holder's remaining ms} (-1 when the key has no TTL).
   */
  public static final Script ACQUIRE =
      new Script(
          "acquire",
          GRANT
              + REGRANT
              + "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
              + "  return grant()\n"
              + "end\n"
              + "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
              + "  return regrant()\n"
              + "end\n"
              + "return {0, redis.call('PTTL', KEYS[1])}\n");

  /**
   * KEYS: owner key, token key. ARGV: owner id, channel, and optionally the message. Deletes the
   * lock (and its token) only if we hold it, and then publishes a wake-up for its waiters, whose
   * message is the given one, else the released owner id (so that a waiter on several servers can
   * tell one release from another, and Redlock can mark the releases of rounds that never held the
   * lock). Returns 1 if it was ours, else 0.
   */
  public static final Script RELEASE =
      new Script(
          "release",
          "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
              + "  redis.call('DEL', KEYS[1], KEYS[2])\n"
              + "  redis.call('PUBLISH', ARGV[2], ARGV[3] or ARGV[1])\n"
              + "  return 1\n"
              + "end\n"
              + "return 0\n");

  /**
   * KEYS: owner key, token key. ARGV: owner id, lease in ms. Sets both keys' expiry to the lease
   * from now, longer or shorter than before, only if we hold the lock: the renewal of a lease, and
   * also {@code Lease.extend}. A key past its expiry reads as gone, so an expired lease is never
   * brought back. Returns 1 if renewed, 0 if someone else holds the lock (a hold after release
   * included), -1 if the key is gone; only 1 changed anything.
   */
  public static final Script RENEW =
      new Script(
          "renew",
          "local v = redis.call('GET', KEYS[1])\n"
              + "if v == ARGV[1] then\n"
              + "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
              + "  redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
              + "  return 1\n"
              + "end\n"
              + "if v then return 0 end\n"
              + "return -1\n");

  /**
   * What the owner key of a lock held after release starts with ({@link #HOLD}). Owner ids made by
   * the core start with a process id, so no lease's owner id starts with it.
   */
  public static final String HOLD_PREFIX = "held-after-release:";

  /**
   * KEYS: owner key, token key. ARGV: owner id, the hold's value ({@link #HOLD_PREFIX} and the
   * owner id), how long to hold in ms. {@code Lease.releaseAfter}: only if we hold the lock,
   * replaces our owner id with the hold's value and sets the expiry to the hold, in one SET, so
   * that the lock stays taken until the key expires while no renewal, release, extend or acquire of
   * any lease matches it any more. Publishes nothing: nothing is free yet, and a waiter's busy poll
   * is told the key's remaining time. The fence counter is not touched; the token key gets the
   * hold's expiry, so the hold still reads as the lease's token. Returns 1 if it was ours, else 0
   * (nothing changed).
   */
  public static final Script HOLD =
      new Script(
          "hold",
          "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
              + "  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])\n"
              + "  redis.call('PEXPIRE', KEYS[2], ARGV[3])\n"
              + "  return 1\n"
              + "end\n"
              + "return 0\n");

  /**
   * KEYS: owner key, token key, fence counter key. ARGV: owner id, token. Raises the slot's fence
   * counter to at least the token, only while we hold the lock, so that a token drawn from several
   * servers (Redlock) is remembered by each of them, and makes it our token key's value (keeping
   * its TTL). Returns 1 if we hold the lock (the counter is now at least the token), 0 if someone
   * else does, -1 if the key is gone.
   */
  public static final Script RAISE_FENCE =
      new Script(
          "raise-fence",
          "local v = redis.call('GET', KEYS[1])\n"
              + "if v == ARGV[1] then\n"
              + "  if tonumber(redis.call('GET', KEYS[3]) or '0') < tonumber(ARGV[2]) then\n"
              + "    redis.call('SET', KEYS[3], ARGV[2])\n"
              + "  end\n"
              + "  local ttl = redis.call('PTTL', KEYS[2])\n"
              + "  if ttl > 0 then\n"
              + "    redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl)\n"
              + "  end\n"
              + "  return 1\n"
              + "end\n"
              + "if v then return 0 end\n"
              + "return -1\n");

  /**
   * KEYS: owner key, token key, fence counter key, legacy fence key, queue key, queue deadlines
   * key. ARGV: owner id, lease in ms, how long our queue entry lives without a poll (ms). The fair
   * acquire of lock-redis: waiters queue in a sorted set by arrival (score: the server's clock in
   * ms, made strictly increasing), and a free lock goes only to the first live entry, so the
   * releasing client cannot barge ahead of them. Each poll refreshes the caller's entry; an entry
   * not refreshed within its lifetime (a waiter that crashed or gave up without withdrawing) is
   * dropped by the next poll, so a dead waiter holds the lock up for at most that long. With nobody
   * queued it is SET NX PX + the grant of {@link #ACQUIRE}. Returns {1, token} when granted (also
   * when we already hold it: a retry after a lost reply extends it and returns our token), else {0,
   * ms to wait at most}: the holder's remaining lease, or, when the lock is free but another waiter
   * is first, the time until that waiter's entry lapses (-1: the holder's key has no TTL). An entry
   * lifetime of 0 is an attempt that will not wait: busy, it joins no queue and answers {0, the
   * holder's remaining lease} (0 if the lock is free with another waiter first).
   */
  public static final Script ACQUIRE_QUEUED =
      new Script(
          "acquire-queued",
          GRANT
              + REGRANT
              + "local now\n"
              + "local function clock()\n"
              + "  if not now then\n"
              + "    local t = redis.call('TIME')\n"
              + "    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
              + "  end\n"
              + "  return now\n"
              + "end\n"
              + "if redis.call('EXISTS', KEYS[5]) == 0 then\n"
              + "  if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
              + "    return grant()\n"
              + "  end\n"
              + "else\n"
              + "  local lapsed = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', clock(), 'LIMIT', 0,"
              + " 100)\n"
              + "  if #lapsed > 0 then\n"
              + "    redis.call('ZREM', KEYS[5], unpack(lapsed))\n"
              + "    redis.call('ZREM', KEYS[6], unpack(lapsed))\n"
              + "  end\n"
              + "  local first = redis.call('ZRANGE', KEYS[5], 0, 0)[1]\n"
              + "  if (not first or first == ARGV[1]) and redis.call('SET', KEYS[1], ARGV[1], 'NX',"
              + " 'PX', ARGV[2]) then\n"
              + "    if first then\n"
              + "      redis.call('ZREM', KEYS[5], ARGV[1])\n"
              + "      redis.call('ZREM', KEYS[6], ARGV[1])\n"
              + "    end\n"
              + "    return grant()\n"
              + "  end\n"
              + "end\n"
              + "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
              + "  redis.call('ZREM', KEYS[5], ARGV[1])\n"
              + "  redis.call('ZREM', KEYS[6], ARGV[1])\n"
              + "  return regrant()\n"
              + "end\n"
              + "local life = tonumber(ARGV[3])\n"
              + "if life == 0 then\n"
              + "  local left = redis.call('PTTL', KEYS[1])\n"
              + "  if left == -2 then\n"
              + "    left = 0\n"
              + "  end\n"
              + "  return {0, left}\n"
              + "end\n"
              + "if not redis.call('ZSCORE', KEYS[5], ARGV[1]) then\n"
              + "  local score = clock()\n"
              + "  local last = redis.call('ZRANGE', KEYS[5], -1, -1, 'WITHSCORES')\n"
              + "  if last[2] and tonumber(last[2]) >= score then\n"
              + "    score = tonumber(last[2]) + 1\n"
              + "  end\n"
              + "  redis.call('ZADD', KEYS[5], score, ARGV[1])\n"
              + "end\n"
              + "redis.call('ZADD', KEYS[6], clock() + life, ARGV[1])\n"
              + "for i = 5, 6 do\n"
              + "  if redis.call('PTTL', KEYS[i]) < life then\n"
              + "    redis.call('PEXPIRE', KEYS[i], life)\n"
              + "  end\n"
              + "end\n"
              + "local ttl = redis.call('PTTL', KEYS[1])\n"
              + "if ttl == -2 then\n"
              + "  local first = redis.call('ZRANGE', KEYS[5], 0, 0)[1]\n"
              + "  local deadline = tonumber(redis.call('ZSCORE', KEYS[6], first) or clock())\n"
              + "  return {0, math.max(0, deadline - clock())}\n"
              + "end\n"
              + "return {0, ttl}\n");

  /**
   * KEYS: owner key, token key, queue key. ARGV: owner id, channel. The release of {@link
   * #ACQUIRE_QUEUED}: deletes the lock (and its token) only if we hold it, and publishes a wake-up
   * only if someone is queued. Returns 1 if it was ours, else 0.
   */
  public static final Script RELEASE_QUEUED =
      new Script(
          "release-queued",
          "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
              + "  redis.call('DEL', KEYS[1], KEYS[2])\n"
              + "  if redis.call('EXISTS', KEYS[3]) == 1 then\n"
              + "    redis.call('PUBLISH', ARGV[2], ARGV[1])\n"
              + "  end\n"
              + "  return 1\n"
              + "end\n"
              + "return 0\n");

  /**
   * KEYS: owner key, token key, queue key, queue deadlines key. ARGV: owner id, channel. An attempt
   * of {@link #ACQUIRE_QUEUED} giving up: leaves the queue, gives back the lock if a grant it never
   * heard of made it ours, and wakes the waiters if the lock is now free with someone queued (the
   * first of them may be waiting for us to go). Returns 1 if it held the lock, else 0.
   */
  public static final Script WITHDRAW =
      new Script(
          "withdraw",
          "redis.call('ZREM', KEYS[3], ARGV[1])\n"
              + "redis.call('ZREM', KEYS[4], ARGV[1])\n"
              + "local held = 0\n"
              + "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
              + "  redis.call('DEL', KEYS[1], KEYS[2])\n"
              + "  held = 1\n"
              + "end\n"
              + "if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('EXISTS', KEYS[3]) == 1"
              + " then\n"
              + "  redis.call('PUBLISH', ARGV[2], ARGV[1])\n"
              + "end\n"
              + "return held\n");

  /**
   * KEYS: owner key, token key, queue deadlines key. Reads only (the server's clock, no write), in
   * one atomic step: an empty reply when the lock is free, else {owner id, remaining ms of the
   * lease (-1 without a TTL), the holder's token (0 if the lock was taken by a version without
   * token keys), the number of waiters}. The waiters are the live entries of the lock's queue (the
   * {@link #ACQUIRE_QUEUED} entries whose lapse time is still ahead; lapsed ones are dropped only
   * by the next poll and are not counted), the holder's own entry, if any, left out. During a hold
   * after release the owner is the hold's value ({@link #HOLD_PREFIX}), no lease's owner id.
   */
  public static final Script STATE =
      new Script(
          "state",
          "local owner = redis.call('GET', KEYS[1])\n"
              + "if not owner then\n"
              + "  return {}\n"
              + "end\n"
              + "local t = redis.call('TIME')\n"
              + "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
              + "local waiting = redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf')\n"
              + "local mine = redis.call('ZSCORE', KEYS[3], owner)\n"
              + "if mine and tonumber(mine) > now then\n"
              + "  waiting = waiting - 1\n"
              + "end\n"
              + "return {owner, redis.call('PTTL', KEYS[1]), tonumber(redis.call('GET', KEYS[2]) or"
              + " '0'), waiting}\n");

  /**
   * {@link #RELEASE_QUEUED} for a Redis Cluster: the same script with {@code SPUBLISH} (Redis 7
   * sharded pub/sub) instead of {@code PUBLISH}, so the wake-up goes only to the node that owns the
   * lock's slot (the channel shares the lock's hash tag) rather than to every node of the Cluster.
   */
  public static final Script RELEASE_QUEUED_SHARDED =
      new Script("release-queued-sharded", RELEASE_QUEUED.text.replace("'PUBLISH'", "'SPUBLISH'"));

  /**
   * {@link #WITHDRAW} for a Redis Cluster: {@code SPUBLISH} instead of {@code PUBLISH}, as {@link
   * #RELEASE_QUEUED_SHARDED}.
   */
  public static final Script WITHDRAW_SHARDED =
      new Script("withdraw-sharded", WITHDRAW.text.replace("'PUBLISH'", "'SPUBLISH'"));

  // ---------------------------------------------------------------- semaphores and read-write
  // locks

  /**
   * The start of every script of semaphores and read-write locks. {@code now}: the server's clock
   * in ms ({@code TIME}; never a client's clock), which every lease's and mark's score is counted
   * in. {@code keep(key, with, also)}: gives a sorted set (and {@code with} and {@code also}, keys
   * that live as long as it) the TTL of its last score, so that an unused resource vanishes from
   * Redis by itself. {@code prune(key, tokens)}: drops a sorted set's leases that ended by now, and
   * their owners' fields from the hash {@code tokens} (if given) of the token each lease was
   * granted. {@code mark(key, life)}: makes the key live at least {@code life} ms from now. {@code
   * earliest(key, than)}: the lowest score of a sorted set, or {@code than} if that is lower or the
   * set is empty.
   */
  private static final String SHARED =
      "local t = redis.call('TIME')\n"
          + "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
          + "local function keep(key, with, also)\n"
          + "  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')\n"
          + "  if last[2] then\n"
          + "    local ttl = math.max(1, tonumber(last[2]) - now)\n"
          + "    redis.call('PEXPIRE', key, ttl)\n"
          + "    if with then redis.call('PEXPIRE', with, ttl) end\n"
          + "    if also then redis.call('PEXPIRE', also, ttl) end\n"
          + "  else\n"
          + "    if with then redis.call('DEL', with) end\n"
          + "    if also then redis.call('DEL', also) end\n"
          + "  end\n"
          + "end\n"
          + "local function prune(key, tokens)\n"
          + "  if not tokens then\n"
          + "    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)\n"
          + "    return\n"
          + "  end\n"
          + "  while true do\n"
          + "    local gone = redis.call('ZRANGEBYSCORE', key, '-inf', now, 'LIMIT', 0, 500)\n"
          + "    if #gone == 0 then return end\n"
          + "    redis.call('ZREM', key, unpack(gone))\n"
          + "    redis.call('HDEL', tokens, unpack(gone))\n"
          + "  end\n"
          + "end\n"
          + "local function mark(key, life)\n"
          + "  if redis.call('PTTL', key) < life then\n"
          + "    redis.call('SET', key, '1', 'PX', life)\n"
          + "  end\n"
          + "end\n"
          + "local function earliest(key, than)\n"
          + "  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')\n"
          + "  local at = first[2] and tonumber(first[2])\n"
          + "  if at and (not than or at < than) then return at end\n"
          + "  return than\n"
          + "end\n";

  /**
   * KEYS: the semaphore's leases (sorted set: owner id, score = expiry), its permit count, the
   * fence counter of its slot, its waiting mark, its tokens (hash: owner id to token). ARGV: owner
   * id, lease in ms, the permits asked for, how long the waiting mark lives (ms). Drops expired
   * leases, then grants one permit if fewer leases than permits are live (or the owner already
   * holds one: a retry after a lost reply, renewed): {1, token from the slot's counter}, the token
   * kept as the owner's field of the tokens hash (for a listing; it expires with the leases). A
   * count other than the live leases' is refused: {-1, their count}, nothing taken. Else marks that
   * someone waits and answers {0, ms until the earliest live lease ends}.
   */
  public static final Script SEMAPHORE_ACQUIRE =
      new Script(
          "semaphore-acquire",
          SHARED
              + "prune(KEYS[1], KEYS[5])\n"
              + "local want = tonumber(ARGV[3])\n"
              + "local held = redis.call('ZCARD', KEYS[1])\n"
              + "if held > 0 then\n"
              + "  local inUse = redis.call('GET', KEYS[2])\n"
              + "  if inUse and tonumber(inUse) ~= want then\n"
              + "    return {-1, tonumber(inUse)}\n"
              + "  end\n"
              + "end\n"
              + "if held < want or redis.call('ZSCORE', KEYS[1], ARGV[1]) then\n"
              + "  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\n"
              + "  redis.call('SET', KEYS[2], want)\n"
              + "  local token = redis.call('INCR', KEYS[3])\n"
              + "  redis.call('HSET', KEYS[5], ARGV[1], token)\n"
              + "  keep(KEYS[1], KEYS[2], KEYS[5])\n"
              + "  return {1, token}\n"
              + "end\n"
              + "mark(KEYS[4], tonumber(ARGV[4]))\n"
              + "return {0, earliest(KEYS[1]) - now}\n");

  /**
   * KEYS: the semaphore's leases, its permit count, its waiting mark, its tokens. ARGV: owner id,
   * channel. The release of a permit, and the withdrawal of an attempt that may have been granted
   * unseen: drops the owner's lease (and its token), and if it had one and someone waits, publishes
   * the owner id on the channel. Returns 1 if the lease was live, 0 if it was gone or past its
   * expiry.
   */
  public static final Script SEMAPHORE_RELEASE =
      new Script(
          "semaphore-release",
          SHARED
              + "local score = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
              + "if not score then return 0 end\n"
              + "redis.call('ZREM', KEYS[1], ARGV[1])\n"
              + "redis.call('HDEL', KEYS[4], ARGV[1])\n"
              + "prune(KEYS[1], KEYS[4])\n"
              + "keep(KEYS[1], KEYS[2], KEYS[4])\n"
              + "if redis.call('EXISTS', KEYS[3]) == 1 then\n"
              + "  redis.call('PUBLISH', ARGV[2], ARGV[1])\n"
              + "end\n"
              + "if tonumber(score) > now then return 1 end\n"
              + "return 0\n");

  /**
   * KEYS: the read-write lock's read leases, its write lease, its waiting writers (score = when the
   * mark lapses), the fence counter of its slot, its waiting mark, its read tokens, its write
   * tokens (hashes: owner id to token). ARGV: owner id, lease in ms, {@code read} or {@code write},
   * how long a mark lives without a poll (ms). Drops expired leases and marks. A writer is granted
   * when no lease is live, a reader when no write lease is live and no writer waits (writer
   * preference), and an owner that already holds the side asked for (a retry after a lost reply)
   * has it renewed: {1, token from the slot's counter}, kept as the owner's field of the side's
   * tokens hash (for a listing); a granted writer's mark goes at once. Else a writer marks itself
   * waiting (or refreshes its mark), both mark that someone waits, and the answer is {0, ms until
   * the earliest lease in the way ends, or for a reader held back only by waiting writers, until
   * the first of their marks lapses}.
   */
  public static final Script READ_WRITE_ACQUIRE =
      new Script(
          "read-write-acquire",
          SHARED
              + "prune(KEYS[1], KEYS[6])\n"
              + "prune(KEYS[2], KEYS[7])\n"
              + "prune(KEYS[3])\n"
              + "local write = ARGV[3] == 'write'\n"
              + "local mine = write and KEYS[2] or KEYS[1]\n"
              + "local tokens = write and KEYS[7] or KEYS[6]\n"
              + "local free\n"
              + "if redis.call('ZSCORE', mine, ARGV[1]) then\n"
              + "  free = true\n"
              + "elseif write then\n"
              + "  free = redis.call('EXISTS', KEYS[1]) == 0 and redis.call('EXISTS', KEYS[2]) =="
              + " 0\n"
              + "else\n"
              + "  free = redis.call('EXISTS', KEYS[2]) == 0 and redis.call('EXISTS', KEYS[3]) =="
              + " 0\n"
              + "end\n"
              + "if free then\n"
              + "  redis.call('ZADD', mine, now + tonumber(ARGV[2]), ARGV[1])\n"
              + "  local token = redis.call('INCR', KEYS[4])\n"
              + "  redis.call('HSET', tokens, ARGV[1], token)\n"
              + "  keep(mine, tokens)\n"
              + "  if write and redis.call('ZREM', KEYS[3], ARGV[1]) == 1 then\n"
              + "    keep(KEYS[3])\n"
              + "  end\n"
              + "  return {1, token}\n"
              + "end\n"
              + "local life = tonumber(ARGV[4])\n"
              + "mark(KEYS[5], life)\n"
              + "if write then\n"
              + "  redis.call('ZADD', KEYS[3], now + life, ARGV[1])\n"
              + "  keep(KEYS[3])\n"
              + "  return {0, earliest(KEYS[1], earliest(KEYS[2])) - now}\n"
              + "end\n"
              + "return {0, (earliest(KEYS[2]) or earliest(KEYS[3])) - now}\n");

  /**
   * KEYS: the leases of one side of a read-write lock (read or write), its waiting writers, its
   * waiting mark, the side's tokens. ARGV: owner id, channel. The release of a side, and the
   * withdrawal of an attempt: drops the owner's lease (and its token) and its waiting writer's
   * mark, and if either was there and someone waits, publishes the owner id on the channel (a
   * writer that stops waiting may let readers in). Returns 1 if the lease was live, 0 if it was
   * gone or past its expiry.
   */
  public static final Script READ_WRITE_RELEASE =
      new Script(
          "read-write-release",
          SHARED
              + "redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)\n"
              + "local withdrew = redis.call('ZREM', KEYS[2], ARGV[1]) == 1\n"
              + "if withdrew then keep(KEYS[2]) end\n"
              + "local score = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
              + "if score then\n"
              + "  redis.call('ZREM', KEYS[1], ARGV[1])\n"
              + "  redis.call('HDEL', KEYS[4], ARGV[1])\n"
              + "  prune(KEYS[1], KEYS[4])\n"
              + "  keep(KEYS[1], KEYS[4])\n"
              + "end\n"
              + "if (score or withdrew) and redis.call('EXISTS', KEYS[3]) == 1 then\n"
              + "  redis.call('PUBLISH', ARGV[2], ARGV[1])\n"
              + "end\n"
              + "if score and tonumber(score) > now then return 1 end\n"
              + "return 0\n");

  /**
   * KEYS: the sorted set that holds the lease (a semaphore's leases, or one side of a read-write
   * lock), its tokens hash, and optionally a key that lives as long as it (the semaphore's permit
   * count). ARGV: owner id, lease in ms. Renewal and extend of a semaphore's or read-write lock's
   * lease: sets its expiry to the lease from now, longer or shorter, only if it is live; an expired
   * lease is never brought back. Returns {@link #RENEWED} or {@link #GONE}; only the first changed
   * anything.
   */
  public static final Script SHARED_RENEW =
      new Script(
          "shared-renew",
          SHARED
              + "local score = redis.call('ZSCORE', KEYS[1], ARGV[1])\n"
              + "if not score or tonumber(score) <= now then\n"
              + "  return -1\n"
              + "end\n"
              + "redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])\n"
              + "prune(KEYS[1], KEYS[2])\n"
              + "keep(KEYS[1], KEYS[2], KEYS[3])\n"
              + "return 1\n");

  /**
   * KEYS: pairs of a sorted set of leases (a semaphore's, or one side of a read-write lock) and its
   * tokens hash. Reads only (the server's clock, no write): for each pair, in order, a flat list of
   * its live leases (score past now), three entries each: owner id, remaining ms (at least 1), and
   * the token the lease was granted (0 if the hash has none for it: granted by a version that kept
   * no tokens).
   */
  public static final Script SHARED_HOLDERS =
      new Script(
          "shared-holders",
          "local t = redis.call('TIME')\n"
              + "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
              + "local out = {}\n"
              + "for i = 1, #KEYS, 2 do\n"
              + "  local live = redis.call('ZRANGEBYSCORE', KEYS[i], '(' .. now, '+inf',"
              + " 'WITHSCORES')\n"
              + "  local side = {}\n"
              + "  for j = 1, #live, 2 do\n"
              + "    side[#side + 1] = live[j]\n"
              + "    side[#side + 1] = math.max(1, math.ceil(tonumber(live[j + 1]) - now))\n"
              + "    side[#side + 1] = tonumber(redis.call('HGET', KEYS[i + 1], live[j]) or '0')\n"
              + "  end\n"
              + "  out[#out + 1] = side\n"
              + "end\n"
              + "return out\n");

  /**
   * {@link #SEMAPHORE_RELEASE} for a Redis Cluster: {@code SPUBLISH}, as {@link
   * #RELEASE_QUEUED_SHARDED}.
   */
  public static final Script SEMAPHORE_RELEASE_SHARDED =
      new Script(
          "semaphore-release-sharded", SEMAPHORE_RELEASE.text.replace("'PUBLISH'", "'SPUBLISH'"));

  /**
   * {@link #READ_WRITE_RELEASE} for a Redis Cluster: {@code SPUBLISH}, as {@link
   * #RELEASE_QUEUED_SHARDED}.
   */
  public static final Script READ_WRITE_RELEASE_SHARDED =
      new Script(
          "read-write-release-sharded", READ_WRITE_RELEASE.text.replace("'PUBLISH'", "'SPUBLISH'"));

  /**
   * KEYS: the six keys of {@link #ACQUIRE_QUEUED} for each lock of a set, lock after lock. ARGV:
   * lease in ms, then one owner id per lock. Takes every lock of the set in one step, or none: a
   * lock whose owner key exists (held, or held after release), or whose queue still has a live
   * entry once lapsed entries are dropped, makes the set busy, and nothing is written but the
   * dropping of lapsed entries. Otherwise each lock is taken as by {@link #ACQUIRE_QUEUED}'s grant:
   * its owner key and token key with the lease, its token from its slot's fence counter (the legacy
   * counter folded in first). Returns {1, token of each lock in order}, or {0, the busy lock's
   * position from 1, its holder's remaining ms (0 when it is free but waited for; -1 without a
   * TTL)}.
   */
  public static final Script ACQUIRE_ALL =
      new Script(
          "acquire-all",
          "local now\n"
              + "local function clock()\n"
              + "  if not now then\n"
              + "    local t = redis.call('TIME')\n"
              + "    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
              + "  end\n"
              + "  return now\n"
              + "end\n"
              + "local n = #KEYS / 6\n"
              // how many of the n keys at offset `at` of each lock exist: one EXISTS per 1000
              // keys (unpack's limit), not one per lock
              + "local function existing(at)\n"
              + "  local c = 0\n"
              + "  for from = 0, n - 1, 1000 do\n"
              + "    local batch = {}\n"
              + "    for i = from, math.min(from + 999, n - 1) do\n"
              + "      batch[#batch + 1] = KEYS[i * 6 + at]\n"
              + "    end\n"
              + "    c = c + redis.call('EXISTS', unpack(batch))\n"
              + "  end\n"
              + "  return c\n"
              + "end\n"
              // the usual case, a free set, with two EXISTS; the lock-by-lock look only if a
              // lock is held or has a queue
              + "if existing(1) > 0 or existing(5) > 0 then\n"
              + "  for i = 0, n - 1 do\n"
              + "    local k = i * 6\n"
              + "    if redis.call('EXISTS', KEYS[k + 1]) == 1 then\n"
              + "      return {0, i + 1, redis.call('PTTL', KEYS[k + 1])}\n"
              + "    end\n"
              + "    if redis.call('EXISTS', KEYS[k + 5]) == 1 then\n"
              + "      local lapsed = redis.call('ZRANGEBYSCORE', KEYS[k + 6], '-inf', clock(),"
              + " 'LIMIT', 0, 100)\n"
              + "      if #lapsed > 0 then\n"
              + "        redis.call('ZREM', KEYS[k + 5], unpack(lapsed))\n"
              + "        redis.call('ZREM', KEYS[k + 6], unpack(lapsed))\n"
              + "      end\n"
              + "      if redis.call('ZCARD', KEYS[k + 5]) > 0 then\n"
              + "        return {0, i + 1, 0}\n"
              + "      end\n"
              + "    end\n"
              + "  end\n"
              + "end\n"
              + "local legacy = existing(4) > 0\n"
              + "local out = {1}\n"
              + "for i = 0, n - 1 do\n"
              + "  local k = i * 6\n"
              + "  redis.call('SET', KEYS[k + 1], ARGV[i + 2], 'PX', ARGV[1])\n"
              + "  if legacy then\n"
              + "    local old = redis.call('GET', KEYS[k + 4])\n"
              + "    if old then\n"
              + "      if tonumber(old) > tonumber(redis.call('GET', KEYS[k + 3]) or '0') then\n"
              + "        redis.call('SET', KEYS[k + 3], old)\n"
              + "      end\n"
              + "      redis.call('DEL', KEYS[k + 4])\n"
              + "    end\n"
              + "  end\n"
              + "  local token = redis.call('INCR', KEYS[k + 3])\n"
              + "  redis.call('SET', KEYS[k + 2], token, 'PX', ARGV[1])\n"
              + "  out[i + 2] = token\n"
              + "end\n"
              + "return out\n");

  /**
   * KEYS: the three keys of {@link #RELEASE_QUEUED} for each lock of a set, lock after lock. ARGV:
   * per lock its owner id and its channel. {@link #RELEASE_QUEUED} for every lock in one step.
   * Returns one 1 (it was ours) or 0 per lock, in order.
   */
  public static final Script RELEASE_ALL =
      new Script(
          "release-all",
          "local n = #KEYS / 3\n"
              + "local out = {}\n"
              + "local gone = {}\n"
              + "local queues = {}\n"
              // one MGET, DEL and EXISTS per 1000 locks (unpack's limit), not one of each per lock
              + "for from = 0, n - 1, 1000 do\n"
              + "  local last = math.min(from + 999, n - 1)\n"
              + "  local owners = {}\n"
              + "  for i = from, last do\n"
              + "    owners[#owners + 1] = KEYS[i * 3 + 1]\n"
              + "  end\n"
              + "  local held = redis.call('MGET', unpack(owners))\n"
              + "  local del = {}\n"
              + "  local queued = {}\n"
              + "  for i = from, last do\n"
              + "    out[i + 1] = 0\n"
              + "    if held[i - from + 1] == ARGV[i * 2 + 1] then\n"
              + "      out[i + 1] = 1\n"
              + "      del[#del + 1] = KEYS[i * 3 + 1]\n"
              + "      del[#del + 1] = KEYS[i * 3 + 2]\n"
              + "      queued[#queued + 1] = KEYS[i * 3 + 3]\n"
              + "      gone[#gone + 1] = i\n"
              + "    end\n"
              + "  end\n"
              + "  if #del > 0 then\n"
              + "    redis.call('DEL', unpack(del))\n"
              + "    if redis.call('EXISTS', unpack(queued)) > 0 then\n"
              + "      queues[#queues + 1] = true\n"
              + "    end\n"
              + "  end\n"
              + "end\n"
              // tell the waiters of each lock that has a queue, as RELEASE_QUEUED does
              + "if #queues > 0 then\n"
              + "  for _, i in ipairs(gone) do\n"
              + "    if redis.call('EXISTS', KEYS[i * 3 + 3]) == 1 then\n"
              + "      redis.call('PUBLISH', ARGV[i * 2 + 2], ARGV[i * 2 + 1])\n"
              + "    end\n"
              + "  end\n"
              + "end\n"
              + "return out\n");

  /**
   * {@link #RELEASE_ALL} for a Redis Cluster, for the locks of a set that share one hash slot:
   * {@code SPUBLISH} instead of {@code PUBLISH}, as {@link #RELEASE_QUEUED_SHARDED}.
   */
  public static final Script RELEASE_ALL_SHARDED =
      new Script("release-all-sharded", RELEASE_ALL.text.replace("'PUBLISH'", "'SPUBLISH'"));

  static final Script[] ALL = {
    ACQUIRE,
    RELEASE,
    RENEW,
    HOLD,
    RAISE_FENCE,
    ACQUIRE_QUEUED,
    RELEASE_QUEUED,
    WITHDRAW,
    STATE,
    RELEASE_QUEUED_SHARDED,
    WITHDRAW_SHARDED,
    SEMAPHORE_ACQUIRE,
    SEMAPHORE_RELEASE,
    READ_WRITE_ACQUIRE,
    READ_WRITE_RELEASE,
    SHARED_RENEW,
    SHARED_HOLDERS,
    SEMAPHORE_RELEASE_SHARDED,
    READ_WRITE_RELEASE_SHARDED,
    ACQUIRE_ALL,
    RELEASE_ALL,
    RELEASE_ALL_SHARDED
  };

  /** {@link #RENEW} and {@link #RAISE_FENCE}: done, we hold the lock. */
  public static final long RENEWED = 1;

  /** {@link #RENEW} and {@link #RAISE_FENCE}: someone else holds the lock. */
  public static final long HELD_BY_ANOTHER = 0;

  /** {@link #RENEW} and {@link #RAISE_FENCE}: the lock's key is gone. */
  public static final long GONE = -1;

  /**
   * @param ownerId the owner id (or Redlock value) the hold replaces
   * @return the value of the owner key while the lock is held after release
   */
  public static String holdValue(String ownerId) {
    return HOLD_PREFIX + ownerId;
  }

  /**
   * A duration in whole milliseconds, rounded up and at least 1, for PX and PEXPIRE: a lock is
   * never kept shorter than asked.
   *
   * @param d a positive duration
   * @return its milliseconds, rounded up
   */
  public static long ceilMillis(java.time.Duration d) {
    long ms = d.toMillis();
    if (d.minusMillis(ms).isZero()) {
      return Math.max(1, ms);
    }
    return Math.max(1, ms + 1);
  }

  private RedisScripts() {}

  private static String sha1(String text) {
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8));
      StringBuilder hex = new StringBuilder(40);
      for (byte b : digest) {
        hex.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-1 is missing from this JVM", e);
    }
  }
}
