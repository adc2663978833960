package dev.locksmith.bench;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * ZooKeeper without Locksmith: either the raw floor on the plain ZooKeeper client (create an
 * ephemeral-sequential node under the lock's parent, then delete it: no ordering check, no
 * waiting), or Curator's {@link InterProcessMutex} with Curator's defaults. A third, diagnostic
 * form of the floor sends the transaction Locksmith's acquire sends instead of the create (the
 * create and a write of the lock's node, whose answer counts its children; FINDINGS 19), so that
 * what the transaction costs and what Locksmith adds to it can be told apart.
 */
final class ZooKeeperImpl implements LockImpl {
  private final ZooKeeper zk;
  private final CuratorFramework curator;
  private final Map<String, InterProcessMutex> mutexes = new ConcurrentHashMap<>();
  private final boolean transaction;

  /**
   * @param useCurator Curator's mutex, else the raw floor
   * @param transaction the floor sends Locksmith's transaction (create + the lock node's write)
   *     instead of the create
   */
  ZooKeeperImpl(String endpoint, boolean useCurator, boolean transaction) throws Exception {
    this.transaction = transaction;
    if (useCurator) {
      curator =
          CuratorFrameworkFactory.newClient(
              endpoint, 30_000, 10_000, new ExponentialBackoffRetry(100, 3));
      curator.start();
      if (!curator.blockUntilConnected(20, TimeUnit.SECONDS)) {
        curator.close();
        throw new IllegalStateException("Curator did not connect to " + endpoint + " within 20 s");
      }
      zk = null;
    } else {
      java.util.concurrent.CountDownLatch connected = new java.util.concurrent.CountDownLatch(1);
      zk =
          new ZooKeeper(
              endpoint,
              30_000,
              event -> {
                if (event.getState()
                    == org.apache.zookeeper.Watcher.Event.KeeperState.SyncConnected) {
                  connected.countDown();
                }
              });
      if (!connected.await(20, TimeUnit.SECONDS)) {
        zk.close();
        throw new IllegalStateException(
            "ZooKeeper did not connect to " + endpoint + " within 20 s");
      }
      curator = null;
    }
  }

  @Override
  public Held acquire(String name, Duration timeout) throws Exception {
    if (curator != null) {
      InterProcessMutex mutex =
          mutexes.computeIfAbsent(name, n -> new InterProcessMutex(curator, "/curator/" + n));
      if (timeout == null) {
        mutex.acquire();
      } else if (!mutex.acquire(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        return null;
      }
      return mutex::release;
    }
    String parent = "/raw/" + name;
    String node;
    try {
      node = create(parent);
    } catch (KeeperException.NoNodeException e) {
      createParents(parent);
      node = create(parent);
    }
    String created = node;
    return () -> zk.delete(created, -1);
  }

  private String create(String parent) throws Exception {
    if (!transaction) {
      return zk.create(
          parent + "/lock-",
          new byte[0],
          ZooDefs.Ids.OPEN_ACL_UNSAFE,
          CreateMode.EPHEMERAL_SEQUENTIAL);
    }
    List<OpResult> results =
        zk.multi(
            List.of(
                Op.create(
                    parent + "/lock-",
                    new byte[0],
                    ZooDefs.Ids.OPEN_ACL_UNSAFE,
                    CreateMode.EPHEMERAL_SEQUENTIAL),
                Op.setData(parent, new byte[0], -1)));
    return ((OpResult.CreateResult) results.get(0)).getPath();
  }

  private void createParents(String path) throws Exception {
    StringBuilder at = new StringBuilder();
    for (String part : path.substring(1).split("/")) {
      at.append('/').append(part);
      try {
        zk.create(
            at.toString(),
            "".getBytes(StandardCharsets.UTF_8),
            ZooDefs.Ids.OPEN_ACL_UNSAFE,
            CreateMode.PERSISTENT);
      } catch (KeeperException.NodeExistsException e) {
        // made by another thread or an earlier run
      }
    }
  }

  @Override
  public void close() {
    try {
      if (zk != null) {
        zk.close();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      if (curator != null) {
        curator.close();
      }
    }
  }
}
