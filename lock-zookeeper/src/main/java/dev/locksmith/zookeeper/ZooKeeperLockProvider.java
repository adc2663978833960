package dev.locksmith.zookeeper;

import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import java.util.Set;

/**
 * The {@code zookeeper://} backend: fair locks on Apache ZooKeeper through Apache Curator, one
 * ephemeral-sequential node per waiter, each waiter watching only its predecessor, fenced by the
 * {@code czxid} of the holder's node and held for as long as the client's ZooKeeper session lives.
 *
 * <pre>{@code
 * try (LockClient client = Locks.connect("zookeeper://zk1:2181,zk2:2181,zk3:2181/apps?session-timeout=10s")) {
 *   try (Lease lease = client.lock("orders/42").acquire(Duration.ofSeconds(5))) {
 *     store.write(order, lease.fencingToken());
 *   }
 * }
 * }</pre>
 *
 * <p>URI: {@code zookeeper://[user:password@]host[:port][,host[:port]...][/chroot]} (port 2181 by
 * default; the chroot is created if missing). Options: {@code session-timeout} (default 10s: a
 * crashed holder's locks are freed this long after its last contact), {@code connection-timeout}
 * (default 5s: how long connecting, and each call while disconnected, may take), {@code namespace}
 * (default {@code locksmith}: the node under the chroot that holds every lock) and {@code acl}
 * ({@code open}, {@code creator} or {@code creator-read}: the ACL of the nodes this client creates;
 * the last two need {@code user:password}, sent as digest authentication).
 */
public final class ZooKeeperLockProvider implements LockProvider {

  /** Made by {@link java.util.ServiceLoader}. */
  public ZooKeeperLockProvider() {}

  @Override
  public Set<String> schemes() {
    return Set.of("zookeeper");
  }

  @Override
  public Set<String> optionNames() {
    return Set.of(
        ZooKeeperSettings.SESSION_TIMEOUT,
        ZooKeeperSettings.CONNECTION_TIMEOUT,
        ZooKeeperSettings.NAMESPACE,
        ZooKeeperSettings.ACL_OPTION);
  }

  @Override
  public LockBackend open(BackendConfig config, BackendContext context) {
    ZooKeeperSettings settings = ZooKeeperSettings.read(config);
    config.check();
    return ZooKeeperBackend.connect(settings, context);
  }
}
