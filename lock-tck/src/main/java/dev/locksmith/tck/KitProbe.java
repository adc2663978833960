package dev.locksmith.tck;

import dev.locksmith.Guarantees;
import dev.locksmith.LockState;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * What the kit sees of the backend under test: it wraps the provider so that every call passes
 * through unchanged while the kit counts polls and withdrawals per lock, learns the owner id of
 * each grant, and can act at the instant a poll or a release reaches the backend (to aim a race
 * at the window inside it). One per test.
 */
final class KitProbe {
  private final Map<String, AtomicInteger> polls = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> abandons = new ConcurrentHashMap<>();
  private final Map<String, String> owners = new ConcurrentHashMap<>();
  private volatile Consumer<String> onPoll;
  private volatile Consumer<String> onRelease;
  private volatile long lastPollNanos = 200_000;
  private volatile long lastReleaseNanos = 200_000;

  /**
   * @param provider the backend's provider
   * @return a provider whose backends report to this probe
   */
  LockProvider wrap(LockProvider provider) {
    return new LockProvider() {
      @Override
      public Set<String> schemes() {
        return provider.schemes();
      }

      @Override
      public Set<String> optionNames() {
        return provider.optionNames();
      }

      @Override
      public boolean acceptsOption(String key) {
        return provider.acceptsOption(key);
      }

      @Override
      public LockBackend open(BackendConfig config, BackendContext context) {
        return new Probed(provider.open(config, context));
      }

      @Override
      public String toString() {
        return provider.toString();
      }
    };
  }

  /** @return polls of attempts on this lock so far, by every client of the test */
  int polls(String name) {
    AtomicInteger n = polls.get(name);
    return n == null ? 0 : n.get();
  }

  /** @return attempts on this lock withdrawn so far */
  int abandons(String name) {
    AtomicInteger n = abandons.get(name);
    return n == null ? 0 : n.get();
  }

  /** @return the owner id the lease with this token was granted to */
  Optional<String> ownerOf(String name, long token) {
    return Optional.ofNullable(owners.get(name + "#" + token));
  }

  /** Runs {@code action} with the lock's name as each poll reaches the backend, before it is sent; null stops it. */
  void onPoll(Consumer<String> action) {
    onPoll = action;
  }

  /** Runs {@code action} with the lock's name as each release reaches the backend, before it is sent; null stops it. */
  void onRelease(Consumer<String> action) {
    onRelease = action;
  }

  /** @return how long the last poll took in the backend */
  long lastPollNanos() {
    return lastPollNanos;
  }

  /** @return how long the last release took in the backend */
  long lastReleaseNanos() {
    return lastReleaseNanos;
  }

  private static void count(Map<String, AtomicInteger> counts, String name) {
    counts.computeIfAbsent(name, k -> new AtomicInteger()).incrementAndGet();
  }

  /** Passes every call through. */
  private final class Probed implements LockBackend {
    private final LockBackend backend;

    Probed(LockBackend backend) {
      this.backend = backend;
    }

    @Override
    public Guarantees guarantees() {
      return backend.guarantees();
    }

    @Override
    public LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake) {
      return attempt(name, Claim.exclusive(), ownerId, lease, wake);
    }

    @Override
    public LockAttempt attempt(String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
      LockAttempt attempt = claim.isExclusive() ? backend.attempt(name, ownerId, lease, wake)
          : backend.attempt(name, claim, ownerId, lease, wake);
      return new LockAttempt() {
        @Override
        public Poll poll() throws InterruptedException {
          Consumer<String> hook = onPoll;
          if (hook != null) {
            hook.accept(name);
          }
          long start = System.nanoTime();
          Poll p = attempt.poll();
          lastPollNanos = System.nanoTime() - start;
          count(polls, name);
          if (p.isGranted()) {
            owners.put(name + "#" + p.fencingToken(), ownerId);
          }
          return p;
        }

        @Override
        public void abandon() {
          count(abandons, name);
          attempt.abandon();
        }
      };
    }

    @Override
    public boolean renewsBySession() {
      return backend.renewsBySession();
    }

    @Override
    public List<Renewal> renew(List<BackendLease> leases) {
      return backend.renew(leases);
    }

    @Override
    public String toString() {
      return backend.toString();
    }

    @Override
    public boolean extend(BackendLease lease, java.time.Duration newLease) {
      return backend.extend(lease, newLease);
    }

    @Override
    public boolean releaseAfter(BackendLease lease, java.time.Duration keep) {
      return backend.releaseAfter(lease, keep);
    }

    @Override
    public boolean release(BackendLease lease) {
      Consumer<String> hook = onRelease;
      if (hook != null) {
        hook.accept(lease.name());
      }
      long start = System.nanoTime();
      try {
        return backend.release(lease);
      } finally {
        lastReleaseNanos = System.nanoTime() - start;
      }
    }

    @Override
    public LockState inspect(String name) {
      return backend.inspect(name);
    }

    @Override
    public void abandon() {
      backend.abandon();
    }

    @Override
    public void close() {
      backend.close();
    }
  }
}
