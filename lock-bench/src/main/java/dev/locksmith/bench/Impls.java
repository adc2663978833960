package dev.locksmith.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * The implementations under test, by id. An id names what is measured and on which server:
 * {@code locksmith-redis}, {@code raw-redis}, {@code redisson-lock}, and so on.
 */
final class Impls {
  private Impls() {}

  /** @return a new client of the implementation */
  static LockImpl open(String id) throws Exception {
    switch (id) {
      case "locksmith-local":
        return new LocksmithImpl("local:bench");
      case "locksmith-redis":
        return new LocksmithImpl("redis://" + Endpoints.require("redis"));
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
        return new ZooKeeperImpl(Endpoints.require("zookeeper"), false);
      case "curator-mutex":
        return new ZooKeeperImpl(Endpoints.require("zookeeper"), true);
      case "locksmith-jdbc":
        return new LocksmithImpl("jdbc:mariadb://" + Endpoints.require("jdbc") + "/locks?user=root");
      case "raw-jdbc":
        return new JdbcImpl("jdbc:mysql://" + Endpoints.require("jdbc") + "/locks?user=root");
      // the jdbc-peers section (JdbcPeersRun): MariaDB as above, and PostgreSQL ("pg")
      case "jdbclockregistry-jdbc":
        return new SpringJdbcLockImpl("jdbc:mysql://" + Endpoints.require("jdbc") + "/locks?user=root");
      case "shedlock-jdbc":
        return new ShedLockJdbcImpl("jdbc:mysql://" + Endpoints.require("jdbc") + "/locks?user=root");
      case "locksmith-pg":
        return new LocksmithImpl("jdbc:postgresql://" + Endpoints.require("pg") + "/postgres?user=postgres");
      case "raw-pg":
        return new JdbcImpl("jdbc:postgresql://" + Endpoints.require("pg") + "/postgres?user=postgres");
      case "jdbclockregistry-pg":
        return new SpringJdbcLockImpl("jdbc:postgresql://" + Endpoints.require("pg") + "/postgres?user=postgres");
      case "shedlock-pg":
        return new ShedLockJdbcImpl("jdbc:postgresql://" + Endpoints.require("pg") + "/postgres?user=postgres");
      default:
        throw new IllegalArgumentException("unknown implementation '" + id + "'; known: " + all());
    }
  }

  /** @return every id, in report order */
  static List<String> all() {
    return List.of("locksmith-local", "locksmith-redis", "raw-redis", "redisson-lock", "redisson-trylock", "blogloop-redis",
        "locksmith-etcd", "raw-etcd", "jetcd-lock", "locksmith-zookeeper", "raw-zookeeper", "curator-mutex",
        "locksmith-jdbc", "raw-jdbc", "locksmith-redis-cluster", "redisson-lock-cluster", "jdbclockregistry-jdbc", "shedlock-jdbc",
        "locksmith-pg", "raw-pg", "jdbclockregistry-pg", "shedlock-pg");
  }

  /** @return the ids whose server has an endpoint (local always) */
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
