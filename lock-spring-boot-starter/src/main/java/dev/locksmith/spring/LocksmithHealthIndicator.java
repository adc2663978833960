package dev.locksmith.spring;

import dev.locksmith.Guarantees;
import dev.locksmith.LockClient;
import dev.locksmith.LockState;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * Health of the lock backend: UP when a state read of one lock reaches the server, DOWN with the
 * error otherwise. The URI is shown redacted. Backends that cannot read lock state (redlock) are
 * reported UP with {@code checked: false}, since nothing was asked of the server.
 */
final class LocksmithHealthIndicator implements HealthIndicator {
  static final String PROBE = "locksmith.health";

  private final LockClient client;

  LocksmithHealthIndicator(LockClient client) {
    this.client = client;
  }

  @Override
  public Health health() {
    String uri = client.config().uri().toString();
    boolean reads = client.guarantees().has(Guarantees.Feature.STATE_READS);
    try {
      LockState state = client.lock(PROBE).state();
      return Health.up()
          .withDetail("uri", uri)
          .withDetail("checked", reads && state.isKnown())
          .build();
    } catch (RuntimeException e) {
      return Health.down()
          .withDetail("uri", uri)
          .withDetail("error", e.getClass().getSimpleName() + ": " + e.getMessage())
          .build();
    }
  }
}
