package dev.locksmith.zookeeper;

import dev.locksmith.LeaseLostException;
import dev.locksmith.spi.BackendContext;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The core's side of the backend, recording every callback, for tests that drive a backend
 * directly.
 */
final class RecordingContext implements BackendContext {
  private static final AtomicInteger IDS = new AtomicInteger();

  /** One callback. */
  static final class Call {
    final String kind;
    final String ownerId;
    final LeaseLostException.Reason reason;
    final long validUntil;

    Call(String kind, String ownerId, LeaseLostException.Reason reason, long validUntil) {
      this.kind = kind;
      this.ownerId = ownerId;
      this.reason = reason;
      this.validUntil = validUntil;
    }

    @Override
    public String toString() {
      return kind
          + "("
          + ownerId
          + (reason == null ? "" : ", " + reason)
          + (kind.equals("validUntil")
              ? ", " + (validUntil == Long.MAX_VALUE ? "MAX" : "finite")
              : "")
          + ")";
    }
  }

  final List<Call> calls = new CopyOnWriteArrayList<>();
  private final String id = "test-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet();

  @Override
  public String clientId() {
    return id;
  }

  @Override
  public Duration recheck() {
    return Duration.ofSeconds(1);
  }

  @Override
  public void leaseLost(String ownerId, LeaseLostException.Reason reason, String detail) {
    calls.add(new Call("lost", ownerId, reason, 0));
  }

  @Override
  public void allLeasesLost(String detail) {
    calls.add(new Call("allLost", null, LeaseLostException.Reason.SESSION_LOST, 0));
  }

  @Override
  public void leaseValidUntil(String ownerId, long validUntilNanos) {
    calls.add(new Call("validUntil", ownerId, null, validUntilNanos));
  }

  boolean saw(String kind, String ownerId, boolean unbounded) {
    return calls.stream()
        .anyMatch(
            c ->
                c.kind.equals(kind)
                    && (ownerId == null || ownerId.equals(c.ownerId))
                    && (!kind.equals("validUntil")
                        || (c.validUntil == Long.MAX_VALUE) == unbounded));
  }

  boolean sawLoss(String ownerId) {
    return calls.stream()
        .anyMatch(
            c -> c.kind.equals("allLost") || c.kind.equals("lost") && ownerId.equals(c.ownerId));
  }
}
