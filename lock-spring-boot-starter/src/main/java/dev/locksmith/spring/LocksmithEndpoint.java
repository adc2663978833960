package dev.locksmith.spring;

import dev.locksmith.Guarantees;
import dev.locksmith.HeldLock;
import dev.locksmith.LockClient;
import dev.locksmith.LockException;
import dev.locksmith.LockPage;
import dev.locksmith.LockState;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

/**
 * Actuator endpoint {@code locksmith}: the client's URI (redacted) and the leases it holds now,
 * each with its name, fencing token, since when it is held and, where the backend reads lock state,
 * the rest of its lease on the server; for each election of {@code locksmith.elections}, whether
 * this instance leads it and with which term; and, where the backend lists locks, every lock held
 * in the namespace by any application ({@code held}), with its holder.
 */
@Endpoint(id = "locksmith")
public class LocksmithEndpoint {
  private final LockClient client;
  private final HeldLeaseTracker tracker;
  private final LocksmithElections elections;

  LocksmithEndpoint(LockClient client, HeldLeaseTracker tracker) {
    this(client, tracker, null);
  }

  LocksmithEndpoint(LockClient client, HeldLeaseTracker tracker, LocksmithElections elections) {
    this.client = client;
    this.tracker = tracker;
    this.elections = elections;
  }

  /**
   * @return the client and its held leases
   */
  @ReadOperation
  public Map<String, Object> leases() {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("uri", client.config().uri().toString());
    out.put("application", client.config().application());
    List<Map<String, Object>> leases = new ArrayList<>();
    if (tracker != null) {
      Map<String, LockState> states = new HashMap<>();
      for (HeldLeaseTracker.Held h : tracker.held()) {
        LockState state = states.computeIfAbsent(h.name(), this::state);
        if (!tracker.isShared(h.name())
            && state != null
            && state.isHeld()
            && state.fencingToken().orElse(Long.MIN_VALUE) > h.fencingToken()) {
          continue; // a later holder has this exclusive lock: this holding's release event is still
          // on its way
        }
        Map<String, Object> lease = new LinkedHashMap<>();
        lease.put("name", h.name());
        lease.put("fencingToken", h.fencingToken());
        lease.put("heldSince", h.since().toString());
        lease.put("remainingMillis", remaining(h, state));
        if (state != null && state.fencingToken().orElse(Long.MIN_VALUE) == h.fencingToken()) {
          // who holds it, as the backend stored it: the thread that asked and when
          state.holderIdentity().ifPresent(who -> lease.put("holder", who.toString()));
        }
        leases.add(lease);
      }
    }
    out.put("leases", leases);
    if (elections != null && !elections.names().isEmpty()) {
      out.put("elections", elections.describe());
    }
    if (client.guarantees().has(Guarantees.Feature.LISTING)) {
      out.put("held", held());
    }
    return out;
  }

  /** The most locks of the whole namespace {@code held} shows. */
  static final int MAX_HELD = 500;

  /**
   * @return every lock, semaphore and read-write lock held in the backend's namespace, by any
   *     application (up to {@link #MAX_HELD}, then {@code truncated: true}): name, kind, token,
   *     remaining lease and holder, and every holder where there are several
   */
  private Map<String, Object> held() {
    Map<String, Object> out = new LinkedHashMap<>();
    List<Map<String, Object>> locks = new ArrayList<>();
    boolean truncated = false;
    try {
      String cursor = null;
      do {
        LockPage page = client.list("", cursor, 100);
        for (HeldLock l : page.locks()) {
          if (locks.size() == MAX_HELD) {
            truncated = true;
            break;
          }
          Map<String, Object> lock = new LinkedHashMap<>();
          lock.put("name", l.name());
          lock.put("kind", l.kind().name().toLowerCase(java.util.Locale.ROOT));
          putHolder(lock, l.state());
          l.waiting().ifPresent(n -> lock.put("waiting", n));
          if (l.holders().size() > 1) {
            // every holding of a semaphore or every reader; the first is also shown above
            List<Map<String, Object>> holders = new ArrayList<>();
            for (LockState s : l.holders()) {
              Map<String, Object> one = new LinkedHashMap<>();
              putHolder(one, s);
              holders.add(one);
            }
            lock.put("holders", holders);
          }
          locks.add(lock);
        }
        cursor = truncated ? null : page.next().orElse(null);
      } while (cursor != null);
    } catch (LockException | IllegalStateException e) {
      out.put("error", e.getMessage()); // a monitoring snapshot: health says DOWN
    }
    out.put("locks", locks);
    out.put("truncated", truncated);
    return out;
  }

  /** One holder's token, remaining lease and identity, where the backend read them. */
  private static void putHolder(Map<String, Object> into, LockState s) {
    s.fencingToken().ifPresent(t -> into.put("fencingToken", t));
    s.remaining().ifPresent(d -> into.put("remainingMillis", d.toMillis()));
    s.holderIdentity()
        .ifPresentOrElse(
            who -> into.put("holder", who.toString()),
            () -> s.holder().ifPresent(h -> into.put("holder", h)));
  }

  /**
   * @return the lock's state on the server where the backend reads it, else null
   */
  private LockState state(String name) {
    if (!client.guarantees().has(Guarantees.Feature.STATE_READS)) {
      return null;
    }
    try {
      return client.lock(name).state();
    } catch (LockException | IllegalStateException e) {
      return null; // a monitoring snapshot: an unreachable server shows as unknown here, and DOWN
      // in health
    }
  }

  /**
   * @return the rest of the holding's lease on the server; null where unknown (semaphores, read
   *     locks, no state reads)
   */
  private static Long remaining(HeldLeaseTracker.Held h, LockState state) {
    if (state == null) {
      return null;
    }
    boolean ours = state.isHeld() && state.fencingToken().orElse(-1) == h.fencingToken();
    return ours ? state.remaining().map(d -> d.toMillis()).orElse(null) : null;
  }
}
