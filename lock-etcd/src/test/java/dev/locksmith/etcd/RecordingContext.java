package dev.locksmith.etcd;

import dev.locksmith.LeaseLostException;
import dev.locksmith.spi.BackendContext;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A {@link BackendContext} for driving the backend directly in tests: it records what it is told.
 */
final class RecordingContext implements BackendContext {
  final List<String> told = new CopyOnWriteArrayList<>();
  private final String clientId;
  private final Duration recheck;

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
    told.add(ownerId + ": " + reason + " " + detail);
  }

  @Override
  public void allLeasesLost(String detail) {
    told.add("all: " + detail);
  }

  @Override
  public void leaseValidUntil(String ownerId, long validUntilNanos) {
    told.add(ownerId + ": valid until " + validUntilNanos);
  }
}
