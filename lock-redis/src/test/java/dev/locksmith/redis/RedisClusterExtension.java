package dev.locksmith.redis;

import java.time.Duration;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * a Redis Cluster of six nodes (three primaries, three replicas) on free loopback ports ({@link
 * RedisClusterSet}) for a test class, started before the class's tests and stopped after them.
 * Register it on a static field:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final RedisClusterExtension REDIS = new RedisClusterExtension("kit", Duration.ofSeconds(60));
 * }</pre>
 *
 * Without redis-server the class fails; it is never skipped.
 */
public final class RedisClusterExtension implements BeforeAllCallback, AfterAllCallback {
  private final String name;
  private final Duration nodeTimeout;
  private RedisClusterSet cluster;

  /**
   * The servers started for the class and for each of its {@code @Nested} classes (which get
   * BeforeAll/AfterAll calls of their own), innermost first: each is stopped when its class ends,
   * and the enclosing class's is current again. Without it the enclosing class's servers were
   * overwritten by the first nested class's and never stopped.
   */
  private final java.util.Deque<RedisClusterSet> started = new java.util.ArrayDeque<>();

  /**
   * @param name a short name for its processes and work directories
   * @param nodeTimeout the cluster's node timeout (a failover starts after it)
   */
  public RedisClusterExtension(String name, Duration nodeTimeout) {
    this.name = name;
    this.nodeTimeout = nodeTimeout;
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    cluster = RedisClusterSet.start(name, nodeTimeout);
    started.push(cluster);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    RedisClusterSet ended = started.poll();
    cluster = started.peek();
    if (ended != null) {
      ended.close();
    }
  }

  /**
   * @return the lock URI over the servers, without options
   */
  public String uri() {
    return cluster().uri();
  }

  /**
   * @return the servers, for their admin connections and for pausing, killing and promoting
   */
  public RedisClusterSet cluster() {
    if (cluster == null) {
      throw new IllegalStateException(
          "Redis cluster " + name + " runs only between the class's BeforeAll and AfterAll");
    }
    return cluster;
  }
}
