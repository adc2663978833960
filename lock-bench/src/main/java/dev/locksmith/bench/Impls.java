package dev.locksmith.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * The implementations under test, by id. An id names what is measured and on which server: {@code
 * locksmith-redis}, {@code raw-redis}, {@code redisson-lock}, and so on; a semaphore's id ends in
 * its permits, {@code redisson-semaphore@5}.
 */
final class Impls {
  private Impls() {}

  /**
   * Semaphore implementations, named {@code <id>@<permits>}: one permit of a semaphore of that many
   * per acquire.
   */
  static final List<String> SEMAPHORES =
      List.of(
          "locksmith-semaphore-local",
          "locksmith-semaphore-redis",
          "redisson-semaphore",
          "redisson-expirable-semaphore",
          "locksmith-semaphore-zookeeper",
          "curator-semaphore");

  /**
   * @param base a semaphore implementation of {@link #SEMAPHORES}
   * @param permits the semaphore's permits
   * @return its id, {@code base@permits}
   */
  static String semaphore(String base, int permits) {
    return base + "@" + permits;
  }

  /**
   * @return a new client of the implementation
   */
  static LockImpl open(String id) throws Exception {
    int hash = id.indexOf('#');
    if (hash >= 0) {
      return openSet(id.substring(0, hash), Integer.parseInt(id.substring(hash + 1)));
    }
    int at = id.indexOf('@');
    if (at >= 0) {
      return openSemaphore(id.substring(0, at), permits(id));
    }
    switch (id) {
      case "locksmith-local":
        return new LocksmithImpl("local:bench");
      case "locksmith-redis":
        return new LocksmithImpl("redis://" + Endpoints.require("redis"));
      // the reactive section (ReactiveRun): ReactiveLocks and Redisson's RLockReactive
      case "locksmith-reactive-local":
        return ReactiveImpl.locksmith("local:bench");
      case "locksmith-reactive-redis":
        return ReactiveImpl.locksmith("redis://" + Endpoints.require("redis"));
      case "redisson-reactive":
        return ReactiveImpl.redisson(Endpoints.require("redis"));
      case "raw-redis":
        return new RawRedisImpl(Endpoints.require("redis"), false);
      case "raw-redis-pooled":
        return new PooledRawRedisImpl(Endpoints.require("redis"));
      case "blogloop-redis":
        return new RawRedisImpl(Endpoints.require("redis"), true);
      case "redisson-lock":
        return new RedissonImpl(Endpoints.require("redis"), true);
      case "locksmith-redis-cluster":
        return new LocksmithImpl("redis-cluster://" + Endpoints.require("redis_cluster"));
      case "redisson-lock-cluster":
        return RedissonImpl.cluster(Endpoints.require("redis_cluster"));
      case "redisson-trylock":
        return new RedissonImpl(Endpoints.require("redis"), false);
      case "locksmith-etcd":
        return new LocksmithImpl("etcd://" + Endpoints.require("etcd"));
      case "raw-etcd":
        return new EtcdImpl(Endpoints.require("etcd"), false);
      case "jetcd-lock":
        return new EtcdImpl(Endpoints.require("etcd"), true);
      case "locksmith-zookeeper":
        return new LocksmithImpl("zookeeper://" + Endpoints.require("zookeeper"));
      case "raw-zookeeper":
        return new ZooKeeperImpl(Endpoints.require("zookeeper"), false, false);
      case "raw-zookeeper-transaction":
        // a diagnostic, not a row of the record run: the raw floor sending Locksmith's transaction
        // (FINDINGS 19)
        return new ZooKeeperImpl(Endpoints.require("zookeeper"), false, true);
      case "curator-mutex":
        return new ZooKeeperImpl(Endpoints.require("zookeeper"), true, false);
      case "locksmith-jdbc":
        return new LocksmithImpl(
            "jdbc:mariadb://" + Endpoints.require("jdbc") + "/locks?user=root");
      case "raw-jdbc":
        return new JdbcImpl("jdbc:mysql://" + Endpoints.require("jdbc") + "/locks?user=root");
      // the jdbc-peers section (JdbcPeersRun): MariaDB as above, and PostgreSQL ("pg")
      case "jdbclockregistry-jdbc":
        return new SpringJdbcLockImpl(
            "jdbc:mysql://" + Endpoints.require("jdbc") + "/locks?user=root");
      case "shedlock-jdbc":
        return new ShedLockJdbcImpl(
            "jdbc:mysql://" + Endpoints.require("jdbc") + "/locks?user=root");
      case "locksmith-pg":
        return new LocksmithImpl(
            "jdbc:postgresql://" + Endpoints.require("pg") + "/postgres?user=postgres");
      case "raw-pg":
        return new JdbcImpl(
            "jdbc:postgresql://" + Endpoints.require("pg") + "/postgres?user=postgres");
      case "jdbclockregistry-pg":
        return new SpringJdbcLockImpl(
            "jdbc:postgresql://" + Endpoints.require("pg") + "/postgres?user=postgres");
      case "shedlock-pg":
        return new ShedLockJdbcImpl(
            "jdbc:postgresql://" + Endpoints.require("pg") + "/postgres?user=postgres");
      default:
        throw new IllegalArgumentException(
            "unknown implementation '"
                + id
                + "'; known: "
                + all()
                + ", and as ID@PERMITS: "
                + SEMAPHORES);
    }
  }

  /**
   * @return the permits of a semaphore id {@code base@permits}; 1 for a lock's id
   */
  static int permits(String id) {
    int at = id.indexOf('@');
    if (at < 0) {
      return 1;
    }
    try {
      int n = Integer.parseInt(id.substring(at + 1));
      if (n >= 1) {
        return n;
      }
    } catch (NumberFormatException e) {
      // named below
    }
    throw new IllegalArgumentException(
        "semaphore implementation '"
            + id
            + "' must end in @PERMITS with PERMITS a whole number from 1, "
            + "such as "
            + semaphore(SEMAPHORES.get(1), 5));
  }

  /** Lock-set implementations, named {@code <id>#<names>}: that many names taken all or none. */
  static final List<String> SETS =
      List.of(
          "locksmith-set-redis",
          "redisson-multilock",
          "locksmith-set-zookeeper",
          "curator-multilock");

  private static LockImpl openSet(String base, int size) throws Exception {
    switch (base) {
      case "locksmith-set-redis":
        return SetImpl.locksmith("redis://" + Endpoints.require("redis"), size);
      case "redisson-multilock":
        return SetImpl.redisson(Endpoints.require("redis"), size);
      case "locksmith-set-zookeeper":
        return SetImpl.locksmith("zookeeper://" + Endpoints.require("zookeeper"), size);
      case "curator-multilock":
        return SetImpl.curator(Endpoints.require("zookeeper"), size);
      default:
        throw new IllegalArgumentException(
            "unknown lock-set implementation '" + base + "'; known (each as ID#NAMES): " + SETS);
    }
  }

  private static LockImpl openSemaphore(String base, int permits) throws Exception {
    switch (base) {
      case "locksmith-semaphore-local":
        return new LocksmithSemaphoreImpl("local:bench", permits);
      case "locksmith-semaphore-redis":
        return new LocksmithSemaphoreImpl("redis://" + Endpoints.require("redis"), permits);
      case "redisson-semaphore":
        return new RedissonSemaphoreImpl(Endpoints.require("redis"), permits, false);
      case "redisson-expirable-semaphore":
        return new RedissonSemaphoreImpl(Endpoints.require("redis"), permits, true);
      case "locksmith-semaphore-zookeeper":
        return new LocksmithSemaphoreImpl("zookeeper://" + Endpoints.require("zookeeper"), permits);
      case "curator-semaphore":
        return new CuratorSemaphoreImpl(Endpoints.require("zookeeper"), permits);
      default:
        throw new IllegalArgumentException(
            "unknown semaphore implementation '"
                + base
                + "'; known (each as ID@PERMITS): "
                + SEMAPHORES);
    }
  }

  /**
   * @return every id, in report order
   */
  static List<String> all() {
    return List.of(
        "locksmith-local",
        "locksmith-redis",
        "raw-redis",
        "redisson-lock",
        "redisson-trylock",
        "blogloop-redis",
        "locksmith-etcd",
        "raw-etcd",
        "jetcd-lock",
        "locksmith-zookeeper",
        "raw-zookeeper",
        "curator-mutex",
        "locksmith-jdbc",
        "raw-jdbc",
        "locksmith-redis-cluster",
        "redisson-lock-cluster",
        "jdbclockregistry-jdbc",
        "shedlock-jdbc",
        "locksmith-pg",
        "raw-pg",
        "jdbclockregistry-pg",
        "shedlock-pg");
  }

  /**
   * @return the ids whose server has an endpoint (local always)
   */
  static List<String> available(List<String> ids) {
    List<String> out = new ArrayList<>();
    for (String id : ids) {
      String server = serverOf(id);
      if (server.equals("local") || Endpoints.get(server) != null) {
        out.add(id);
      }
    }
    return out;
  }

  static String serverOf(String id) {
    id = id.replaceFirst("@.*", "");
    if (id.endsWith("-redis-cluster") || id.endsWith("-lock-cluster")) {
      return "redis_cluster"; // BENCH_REDIS_CLUSTER: the Cluster's seed nodes
    }
    if (id.startsWith("redisson") || id.endsWith("-redis")) {
      return "redis";
    }
    if (id.startsWith("jetcd") || id.endsWith("-etcd")) {
      return "etcd";
    }
    if (id.endsWith("-zookeeper") || id.startsWith("curator")) {
      return "zookeeper";
    }
    if (id.endsWith("-jdbc")) {
      return "jdbc";
    }
    if (id.endsWith("-pg")) {
      return "pg";
    }
    return "local";
  }
}
