package dev.locksmith.redlock;

import dev.locksmith.redis.RedisServer;
import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import redis.clients.jedis.Jedis;

/** N real redis-servers on free loopback ports, started at once, for Redlock tests. */
final class RedlockServers implements AutoCloseable {
  static final RedisKeys KEYS = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE);

  private final List<RedisServer> servers;

  private RedlockServers(List<RedisServer> servers) {
    this.servers = servers;
  }

  static RedlockServers start(String name, int count) {
    List<CompletableFuture<RedisServer>> starting = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      int index = i;
      starting.add(CompletableFuture.supplyAsync(() -> startOne(name + "-" + index)));
    }
    List<RedisServer> started = new ArrayList<>();
    RuntimeException failure = null;
    for (CompletableFuture<RedisServer> f : starting) {
      try {
        started.add(f.join());
      } catch (RuntimeException e) {
        failure = e;
      }
    }
    if (failure != null) {
      started.forEach(RedisServer::close);
      throw failure;
    }
    return new RedlockServers(started);
  }

  /**
   * Starts one server; again on another free port if the one picked was taken before the server
   * bound it.
   */
  private static RedisServer startOne(String name) {
    for (int attempt = 1; ; attempt++) {
      try {
        return RedisServer.start(name);
      } catch (IllegalStateException e) {
        if (attempt == 3 || !String.valueOf(e.getMessage()).contains("Address already in use")) {
          throw e;
        }
      }
    }
  }

  RedisServer get(int i) {
    return servers.get(i);
  }

  int size() {
    return servers.size();
  }

  /**
   * @return {@code redlock://127.0.0.1:p1,127.0.0.1:p2,...}
   */
  String uri() {
    return "redlock://"
        + servers.stream().map(s -> "127.0.0.1:" + s.port()).collect(Collectors.joining(","));
  }

  /**
   * @return {@code 127.0.0.1:port} of server i, as messages name it
   */
  String endpoint(int i) {
    return "127.0.0.1:" + servers.get(i).port();
  }

  static final ClaimScripts.Keys CLAIM_KEYS = new ClaimScripts.Keys(KEYS);

  /**
   * Deletes a lock's owner key, and the keys of the semaphore and the read-write lock of that name,
   * on every server that runs.
   */
  void revoke(String lockName) {
    for (RedisServer s : servers) {
      try (Jedis admin = s.admin()) {
        admin.del(KEYS.owner(lockName));
        admin.del(CLAIM_KEYS.all(lockName).toArray(new String[0]));
      } catch (RuntimeException e) {
        // a killed server holds no key
      }
    }
  }

  /**
   * @return the fence counter of a lock's hash slot on server i (0 if absent)
   */
  long fence(int i, String lockName) {
    try (Jedis admin = servers.get(i).admin()) {
      String v = admin.get(KEYS.fenceCounter(lockName));
      return v == null ? 0 : Long.parseLong(v);
    }
  }

  /**
   * @return whether server i holds a lock's owner key
   */
  boolean holds(int i, String lockName) {
    try (Jedis admin = servers.get(i).admin()) {
      return admin.exists(KEYS.owner(lockName));
    }
  }

  void pause(int... which) {
    for (int i : which) {
      servers.get(i).pause();
    }
  }

  void resume(int... which) {
    for (int i : which) {
      servers.get(i).resume();
    }
  }

  void kill(int... which) {
    for (int i : which) {
      servers.get(i).kill();
    }
  }

  void restart(int... which) {
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (int i : which) {
      RedisServer s = servers.get(i);
      all.add(CompletableFuture.runAsync(s::restart));
    }
    all.forEach(CompletableFuture::join);
  }

  int[] all() {
    int[] a = new int[servers.size()];
    for (int i = 0; i < a.length; i++) {
      a[i] = i;
    }
    return a;
  }

  @Override
  public void close() {
    servers.forEach(RedisServer::close);
  }
}
