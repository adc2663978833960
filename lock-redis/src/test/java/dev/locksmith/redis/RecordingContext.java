package dev.locksmith.redis;

import dev.locksmith.LeaseLostException;
import dev.locksmith.spi.BackendContext;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** A {@link BackendContext} for driving a backend directly in tests: it records what it is told. */
final class RecordingContext implements BackendContext {
  final List<String> lost = new CopyOnWriteArrayList<>();
  private final String clientId;
  private final Duration recheck;

  RecordingContext(String clientId) {
    this(clientId, Duration.ofSeconds(1));
  }

  /**
   * @param clientId the client's id
   * @param recheck what {@link #recheck()} answers (a waiting writer's mark lives three of them, at
   *     least 500 ms)
   */
  RecordingContext(String clientId, Duration recheck) {
    this.clientId = clientId;
    this.recheck = recheck;
  }

  @Override
  public String clientId() {
    return clientId;
  }

  @Override
  public Duration recheck() {
    return recheck;
  }

  @Override
  public void leaseLost(String ownerId, LeaseLostException.Reason reason, String detail) {
    lost.add(ownerId + ": " + reason + " " + detail);
  }

  @Override
  public void allLeasesLost(String detail) {
    lost.add("all: " + detail);
  }

  @Override
  public void leaseValidUntil(String ownerId, long validUntilNanos) {
    // not used by a lease-renewed backend
  }
}
