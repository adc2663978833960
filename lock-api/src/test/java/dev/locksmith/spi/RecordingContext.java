package dev.locksmith.spi;

import dev.locksmith.LeaseLostException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The core's side of a backend, for tests that drive a backend directly: it records every callback
 * it is told, both as a {@link Call} in {@link #calls} and as a line in {@link #told}. One class
 * for every backend module's tests (lock-api's test-jar).
 */
public final class RecordingContext implements BackendContext {
  private static final AtomicInteger IDS = new AtomicInteger();

  /** One callback. */
  public static final class Call {
    /** {@code lost}, {@code allLost} or {@code validUntil}. */
    public final String kind;

    /** The lease's owner id; null for {@code allLost}. */
    public final String ownerId;

    /** Why it was lost ({@code SESSION_LOST} for {@code allLost}); null for {@code validUntil}. */
    public final LeaseLostException.Reason reason;

    /** What {@code validUntil} said; 0 for the others. */
    public final long validUntil;

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

  /** Every callback, in order. */
  public final List<Call> calls = new CopyOnWriteArrayList<>();

  /**
   * Every callback as a line, in order: {@code owner: REASON detail}, {@code all: detail} or {@code
   * owner: valid until nanos}.
   */
  public final List<String> told = new CopyOnWriteArrayList<>();

  private final String clientId;
  private final Duration recheck;

  /** A context with a fresh id ({@code test-PID-N}) and a 1 s recheck. */
  public RecordingContext() {
    this("test-" + ProcessHandle.current().pid() + "-" + IDS.incrementAndGet());
  }

  /**
   * @param clientId the client's id; the recheck is 1 s
   */
  public RecordingContext(String clientId) {
    this(clientId, Duration.ofSeconds(1));
  }

  /**
   * @param clientId the client's id
   * @param recheck what {@link #recheck()} answers (a waiting writer's mark lives three of them, at
   *     least 500 ms)
   */
  public RecordingContext(String clientId, Duration recheck) {
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
    calls.add(new Call("lost", ownerId, reason, 0));
    told.add(ownerId + ": " + reason + " " + detail);
  }

  @Override
  public void allLeasesLost(String detail) {
    calls.add(new Call("allLost", null, LeaseLostException.Reason.SESSION_LOST, 0));
    told.add("all: " + detail);
  }

  @Override
  public void leaseValidUntil(String ownerId, long validUntilNanos) {
    calls.add(new Call("validUntil", ownerId, null, validUntilNanos));
    told.add(ownerId + ": valid until " + validUntilNanos);
  }

  /**
   * @param kind {@code lost}, {@code allLost} or {@code validUntil}
   * @param ownerId the owner, or null for any
   * @param unbounded for {@code validUntil}: whether the time was {@code Long.MAX_VALUE}
   * @return whether such a callback came
   */
  public boolean saw(String kind, String ownerId, boolean unbounded) {
    return calls.stream()
        .anyMatch(
            c ->
                c.kind.equals(kind)
                    && (ownerId == null || ownerId.equals(c.ownerId))
                    && (!kind.equals("validUntil")
                        || (c.validUntil == Long.MAX_VALUE) == unbounded));
  }

  /**
   * @return whether this owner's lease, or every lease, was reported lost
   */
  public boolean sawLoss(String ownerId) {
    return calls.stream()
        .anyMatch(
            c -> c.kind.equals("allLost") || c.kind.equals("lost") && ownerId.equals(c.ownerId));
  }
}
