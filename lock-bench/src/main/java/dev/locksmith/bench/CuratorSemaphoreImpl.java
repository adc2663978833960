package dev.locksmith.bench;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * Curator's {@link InterProcessSemaphoreV2}, the peer of a Locksmith semaphore on ZooKeeper, with
 * Curator's defaults as {@code curator-mutex} has them (30 s session): one instance per name on one
 * client, shared by threads; a lease is an ephemeral node, so a holder that dies frees its permit
 * when its session ends.
 */
final class CuratorSemaphoreImpl implements LockImpl {
  private final CuratorFramework curator;
  private final int permits;
  private final Map<String, InterProcessSemaphoreV2> semaphores = new ConcurrentHashMap<>();

  CuratorSemaphoreImpl(String endpoint, int permits) throws InterruptedException {
    this.curator =
        CuratorFrameworkFactory.newClient(
            endpoint, 30_000, 10_000, new ExponentialBackoffRetry(100, 3));
    curator.start();
    if (!curator.blockUntilConnected(20, TimeUnit.SECONDS)) {
      curator.close();
      throw new IllegalStateException("Curator did not connect to " + endpoint + " within 20 s");
    }
    this.permits = permits;
  }

  @Override
  public Held acquire(String name, Duration timeout) throws Exception {
    InterProcessSemaphoreV2 s =
        semaphores.computeIfAbsent(
            name, n -> new InterProcessSemaphoreV2(curator, "/curator-sem/" + n, permits));
    Lease lease =
        timeout == null ? s.acquire() : s.acquire(timeout.toMillis(), TimeUnit.MILLISECONDS);
    return lease == null ? null : lease::close;
  }

  @Override
  public void close() {
    curator.close();
  }
}
