package dev.locksmith.micrometer;

import dev.locksmith.LeaseLostException;
import dev.locksmith.LockEvents;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The {@link LockEvents} of one lock client as Micrometer meters. Give it to the client's
 * configuration; it needs no Spring:
 *
 * <pre>{@code
 * LockMetrics metrics = LockMetrics.builder(registry).backend("redis").client("orders").build();
 * LockClient client = Locks.connect(LockConfig.builder().uri("redis://localhost:6379").events(metrics).build());
 * }</pre>
 *
 * <p>Meters (every one tagged {@code backend} = the URI scheme and {@code client} = the client's
 * name, plus {@code lock} = the lock name only when {@link Builder#lockNameTag(boolean)} is on,
 * since lock names are often unbounded):
 *
 * <ul>
 *   <li>{@value #ACQUIRE} (timer): from the acquire call to the grant or to giving up, tag {@code
 *       outcome} = {@code acquired}, {@code timeout}, {@code interrupted}, {@code cancelled} or
 *       {@code error};
 *   <li>{@value #HELD} (gauge): leases this client holds now;
 *   <li>{@value #HOLD} (timer): from grant to the end of a lease, tag {@code outcome} = {@code
 *       released} (released while still ours), {@code lapsed} (released, but it had already run out
 *       on the server) or {@code lost};
 *   <li>{@value #LOST} (counter): leases lost while held, tag {@code reason} = {@code expired},
 *       {@code taken}, {@code renewal_failed}, {@code session_lost} or {@code client_closed};
 *   <li>{@value #RENEWALS} (counter): background renewals, tag {@code outcome} = {@code success} or
 *       {@code failure} (a failed attempt, retried until the lease would expire).
 * </ul>
 *
 * Events arrive on the client's event thread, shortly after the fact. One instance per client: its
 * gauge counts that client's leases. Without lock names as tags, every meter above exists from the
 * start, at zero, with each of its outcomes and reasons: a dashboard or alert built on day one
 * finds them before the first event.
 */
public final class LockMetrics implements LockEvents {
  /** Timer of acquire waits. */
  public static final String ACQUIRE = "locksmith.acquire";

  /** Gauge of leases held now. */
  public static final String HELD = "locksmith.leases.held";

  /** Timer of how long leases were held. */
  public static final String HOLD = "locksmith.hold";

  /** Counter of leases lost while held. */
  public static final String LOST = "locksmith.leases.lost";

  /** Counter of background renewals. */
  public static final String RENEWALS = "locksmith.renewals";

  private static final String ALL_LOCKS = "\u0000all";

  private final MeterRegistry registry;
  private final Tags common;
  private final boolean lockNameTag;
  private final LockEvents then;
  private final Map<String, AtomicLong> held = new ConcurrentHashMap<>();
  private final Map<LeaseKey, Long> grantedAt = new ConcurrentHashMap<>();

  private record LeaseKey(String name, long token) {}

  private LockMetrics(Builder b) {
    this.registry = b.registry;
    this.common = Tags.of(Tag.of("backend", b.backend), Tag.of("client", b.client));
    this.lockNameTag = b.lockNameTag;
    this.then = b.then;
    heldCount(null); // the gauge exists, at 0, before the first lease
    if (!lockNameTag) {
      registerAtZero();
    }
  }

  /**
   * Registers every meter with every outcome and reason at zero, so that a dashboard or an alert
   * built before the first renewal or loss finds its series (a meter that appears only with its
   * first event reads as "no data", which an alert on {@value #LOST} cannot tell from "none lost").
   * Not with lock names as tags: those meters exist per lock name, and a registry such as
   * Prometheus's needs every series of a name to carry the same tag keys.
   */
  private void registerAtZero() {
    acquireTimer(null, "acquired");
    for (GiveUpReason reason : GiveUpReason.values()) {
      acquireTimer(null, reason.name().toLowerCase(Locale.ROOT));
    }
    for (String outcome : new String[] {"released", "lapsed", "lost"}) {
      holdTimer(null, outcome);
    }
    for (LeaseLostException.Reason reason : LeaseLostException.Reason.values()) {
      lostCounter(null, reason);
    }
    renewalCounter(null, "success");
    renewalCounter(null, "failure");
  }

  private Timer acquireTimer(String name, String outcome) {
    return Timer.builder(ACQUIRE)
        .description("Time from an acquire call to the grant or to giving up")
        .tags(tags(name))
        .tag("outcome", outcome)
        .register(registry);
  }

  private Timer holdTimer(String name, String outcome) {
    return Timer.builder(HOLD)
        .description("How long leases were held, from grant to release or loss")
        .tags(tags(name))
        .tag("outcome", outcome)
        .register(registry);
  }

  private Counter lostCounter(String name, LeaseLostException.Reason reason) {
    return Counter.builder(LOST)
        .description("Leases lost while held")
        .tags(tags(name))
        .tag("reason", reason.name().toLowerCase(Locale.ROOT))
        .register(registry);
  }

  private Counter renewalCounter(String name, String outcome) {
    return Counter.builder(RENEWALS)
        .description("Background lease renewals")
        .tags(tags(name))
        .tag("outcome", outcome)
        .register(registry);
  }

  /**
   * @param registry where the meters go
   * @return a builder
   * @throws NullPointerException if {@code registry} is null
   */
  public static Builder builder(MeterRegistry registry) {
    return new Builder(
        Objects.requireNonNull(
            registry,
            "`registry` was null but it must be the MeterRegistry the lock meters are registered"
                + " in"));
  }

  private Tags tags(String name) {
    return lockNameTag && name != null ? common.and("lock", name) : common;
  }

  private AtomicLong heldCount(String name) {
    String key = lockNameTag && name != null ? name : ALL_LOCKS;
    return held.computeIfAbsent(
        key,
        k -> {
          AtomicLong count = new AtomicLong();
          Gauge.builder(HELD, count, AtomicLong::get)
              .description("Leases this lock client holds now")
              .tags(k.equals(ALL_LOCKS) ? common : common.and("lock", k))
              .register(registry);
          return count;
        });
  }

  private void recordHold(String name, Duration held, String outcome) {
    holdTimer(name, outcome).record(held);
  }

  @Override
  public void acquired(String name, long fencingToken, Duration waited) {
    acquireTimer(name, "acquired").record(waited);
    grantedAt.put(new LeaseKey(name, fencingToken), System.nanoTime());
    heldCount(name).incrementAndGet();
    then.acquired(name, fencingToken, waited);
  }

  @Override
  public void gaveUp(String name, Duration waited, GiveUpReason reason) {
    acquireTimer(name, reason.name().toLowerCase(Locale.ROOT)).record(waited);
    then.gaveUp(name, waited, reason);
  }

  @Override
  public void renewed(String name, long fencingToken, Duration took) {
    renewal(name, "success");
    then.renewed(name, fencingToken, took);
  }

  @Override
  public void renewalFailed(String name, long fencingToken, Throwable cause) {
    renewal(name, "failure");
    then.renewalFailed(name, fencingToken, cause);
  }

  private void renewal(String name, String outcome) {
    renewalCounter(name, outcome).increment();
  }

  @Override
  public void lost(String name, long fencingToken, LeaseLostException cause) {
    lostCounter(name, cause.reason()).increment();
    Long since = grantedAt.remove(new LeaseKey(name, fencingToken));
    if (since != null) {
      recordHold(name, Duration.ofNanos(System.nanoTime() - since), "lost");
    }
    heldCount(name).decrementAndGet();
    then.lost(name, fencingToken, cause);
  }

  @Override
  public void released(String name, long fencingToken, Duration held, boolean stillHeld) {
    grantedAt.remove(new LeaseKey(name, fencingToken));
    recordHold(name, held, stillHeld ? "released" : "lapsed");
    heldCount(name).decrementAndGet();
    then.released(name, fencingToken, held, stillHeld);
  }

  @Override
  public String toString() {
    return "LockMetrics" + common + (lockNameTag ? " with lock names" : "");
  }

  /** Builds {@link LockMetrics}; each setter checks its value at once. */
  public static final class Builder {
    private final MeterRegistry registry;
    private String backend = "unknown";
    private String client = "default";
    private boolean lockNameTag;
    private LockEvents then = LockEvents.NONE;

    private Builder(MeterRegistry registry) {
      this.registry = registry;
    }

    /**
     * @param scheme the backend's URI scheme, such as {@code redis} or {@code jdbc:postgresql} (tag
     *     {@code backend}); default {@code unknown}
     * @return this builder
     */
    public Builder backend(String scheme) {
      this.backend = tagValue("backend", scheme, "the backend's URI scheme, such as redis");
      return this;
    }

    /**
     * @param name the client's name (tag {@code client}), to tell several clients apart; default
     *     {@code default}
     * @return this builder
     */
    public Builder client(String name) {
      this.client = tagValue("client", name, "a name for the lock client, such as orders");
      return this;
    }

    /**
     * @param on whether meters carry the lock name as tag {@code lock}; off by default, since one
     *     time series per lock name can be too many
     * @return this builder
     */
    public Builder lockNameTag(boolean on) {
      this.lockNameTag = on;
      return this;
    }

    /**
     * @param events another listener that hears every event after the meters are updated
     * @return this builder
     */
    public Builder then(LockEvents events) {
      this.then =
          Objects.requireNonNull(
              events, "`events` was null but it must be a LockEvents (LockEvents.NONE for none)");
      return this;
    }

    /**
     * @return the metrics listener
     */
    public LockMetrics build() {
      return new LockMetrics(this);
    }

    private static String tagValue(String param, String value, String valid) {
      if (value == null) {
        throw new NullPointerException("`" + param + "` was null but it must be " + valid);
      }
      if (value.isBlank()) {
        throw new IllegalArgumentException(
            "`" + param + "` was '" + value + "' but it must be " + valid + ", not blank");
      }
      return value;
    }
  }
}
