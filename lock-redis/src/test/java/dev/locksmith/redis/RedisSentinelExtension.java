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
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (set != null) {
      set.close();
      set = null;
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
