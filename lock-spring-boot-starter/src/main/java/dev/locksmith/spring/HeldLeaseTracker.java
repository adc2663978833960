package dev.locksmith.spring;

import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.LockEvents;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Keeps the client's held leases from its events, for the actuator endpoint. Not itself a {@link
 * LockEvents} (a bean of that type would be taken for the application's own listener): {@link
 * #then(LockEvents)} gives the listener, which passes every event on.
 *
 * <p>A lock taken by one thread of the client as another releases it can be granted before the
 * release's event is sent, so the next holder's {@code acquired} may arrive first. A name the
 * client only locks exclusively has one holder: its newer grant replaces the older holding at once.
 * Names the client also uses for semaphores or read-write locks (seen through {@link
 * #track(LockClient)}) may have several holders, and keep every one until its own event.
 */
final class HeldLeaseTracker {
  record Held(String name, long fencingToken, Instant since) {}

  private record Key(String name, long token) {}

  /**
   * Past this many shared names, every name is taken for shared: the view stays right, only less
   * prompt.
   */
  static final int MAX_SHARED_NAMES = 10_000;

  private final Map<Key, Held> held = new ConcurrentHashMap<>();
  private final Set<String> shared = ConcurrentHashMap.newKeySet();
  private volatile boolean allShared;

  /**
   * @param then the listener that hears every event after this tracker
   * @return the client's listener
   */
  LockEvents then(LockEvents then) {
    return new Listener(then);
  }

  /**
   * @param client the starter's client
   * @return the same client, telling this tracker which names it uses for semaphores and read-write
   *     locks
   */
  LockClient track(LockClient client) {
    return new TrackingLockClient(client, this);
  }

  /**
   * @param name a name used for a semaphore or a read-write lock, which can have several holders
   */
  void shared(String name) {
    if (!allShared && !shared.contains(name)) {
      if (shared.size() >= MAX_SHARED_NAMES) {
        allShared = true;
      } else {
        shared.add(name);
      }
    }
  }

  /**
   * @param name the name of {@code lock}, valid since the client made it
   * @param lock a semaphore or read-write lock the client made
   * @return {@code lock}
   */
  <T> T sharedName(String name, T lock) {
    shared(name);
    return lock;
  }

  /**
   * @return whether the name may have several holders at once
   */
  boolean isShared(String name) {
    return allShared || shared.contains(name);
  }

  /**
   * @return the leases held now, oldest first
   */
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
      if (!isShared(name)) {
        // an exclusive lock has one holder: an older holding of this client whose release event is
        // still on its way is over
        held.keySet().removeIf(k -> k.name().equals(name) && k.token() < fencingToken);
      }
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
