package dev.locksmith.spring;

import dev.locksmith.LeaseLostException;
import dev.locksmith.LockEvents;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Keeps the client's held leases from its events, for the actuator endpoint. Not itself a
 * {@link LockEvents} (a bean of that type would be taken for the application's own listener):
 * {@link #then(LockEvents)} gives the listener, which passes every event on.
 */
final class HeldLeaseTracker {
  record Held(String name, long fencingToken, Instant since) {}

  private record Key(String name, long token) {}

  private final Map<Key, Held> held = new ConcurrentHashMap<>();
  /**
   * @param then the listener that hears every event after this tracker
   * @return the client's listener
   */
  LockEvents then(LockEvents then) {
    return new Listener(then);
  }

  /** @return the leases held now, oldest first */
  List<Held> held() {
    List<Held> all = new ArrayList<>(held.values());
    all.sort(Comparator.comparing(Held::since).thenComparing(Held::name));
    return all;
  }

  private final class Listener implements LockEvents {
    private final LockEvents then;

    Listener(LockEvents then) {
      this.then = then;
    }

    @Override
    public void acquired(String name, long fencingToken, Duration waited) {
      held.put(new Key(name, fencingToken), new Held(name, fencingToken, Instant.now()));
      then.acquired(name, fencingToken, waited);
    }

    @Override
    public void released(String name, long fencingToken, Duration heldFor, boolean stillHeld) {
      held.remove(new Key(name, fencingToken));
      then.released(name, fencingToken, heldFor, stillHeld);
    }

    @Override
    public void lost(String name, long fencingToken, LeaseLostException cause) {
      held.remove(new Key(name, fencingToken));
      then.lost(name, fencingToken, cause);
    }

    @Override
    public void gaveUp(String name, Duration waited, GiveUpReason reason) {
      then.gaveUp(name, waited, reason);
    }

    @Override
    public void renewed(String name, long fencingToken, Duration took) {
      then.renewed(name, fencingToken, took);
    }

    @Override
    public void renewalFailed(String name, long fencingToken, Throwable cause) {
      then.renewalFailed(name, fencingToken, cause);
    }
  }
}
