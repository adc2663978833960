package dev.locksmith.redis;

import java.time.Duration;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * a primary, its replicas and three sentinels on free loopback ports ({@link RedisSentinelSet}) for
 * a test class, started before the class's tests and stopped after them. Register it on a static
 * field:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final RedisSentinelExtension REDIS = new RedisSentinelExtension("kit", Duration.ofSeconds(60));
 * }</pre>
 *
 * Without redis-server the class fails; it is never skipped.
 */
public final class RedisSentinelExtension implements BeforeAllCallback, AfterAllCallback {
  private final String name;
  private final Duration downAfter;
  private RedisSentinelSet set;

  /**
   * @param name a short name for its processes and work directories
   * @param downAfter how long the sentinels wait before they call a primary down
   */
  public RedisSentinelExtension(String name, Duration downAfter) {
    this.name = name;
    this.downAfter = downAfter;
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    set = RedisSentinelSet.start(name, downAfter);
    started.push(set);
  }

  /**
   * The servers started for the class and for each of its {@code @Nested} classes (which get
   * BeforeAll/AfterAll calls of their own), innermost first: each is stopped when its class ends,
   * and the enclosing class's is current again. Without it the enclosing class's servers were
   * overwritten by the first nested class's and never stopped.
   */
  private final java.util.Deque<RedisSentinelSet> started = new java.util.ArrayDeque<>();

  @Override
  public void afterAll(ExtensionContext context) {
    RedisSentinelSet ended = started.poll();
    set = started.peek();
    if (ended != null) {
      ended.close();
    }
  }

  /**
   * @return the lock URI over the servers, without options
   */
  public String uri() {
    return set().uri();
  }

  /**
   * @return the servers, for their admin connections and for pausing, killing and promoting
   */
  public RedisSentinelSet set() {
    if (set == null) {
      throw new IllegalStateException(
          "Redis sentinel " + name + " runs only between the class's BeforeAll and AfterAll");
    }
    return set;
  }
}
