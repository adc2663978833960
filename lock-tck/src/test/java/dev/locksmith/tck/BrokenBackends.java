package dev.locksmith.tck;

import dev.locksmith.Guarantees;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockOptions;
import dev.locksmith.LockState;
import dev.locksmith.Locks;
import dev.locksmith.local.LocalLockProvider;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Backends with one deliberate defect each, built on the local: backend, for checking that the
 * kit catches them. Each kit subclass here is run by {@link KitCatchesBrokenBackendsTest}, never
 * directly (their names do not end in Test).
 */
final class BrokenBackends {
  private BrokenBackends() {}

  enum Defect {
    /** Release frees the lock whoever holds it. */
    NO_OWNER_CHECK,
    /** Every third grant gets token 1. */
    TOKENS_GO_BACK,
    /** The server never expires a lease. */
    NEVER_EXPIRES,
    /** Every acquire is granted, held or not. */
    TWO_HOLDERS,
    /** Releases never wake waiters, although NOTIFIED_WAKEUP is declared. */
    NEVER_WAKES,
    /** State reads report the lock held until the lease would have ended, after a release too (a cached read). */
    STALE_STATE
  }

  /** Every client of one defect shares one local: space, as clients of one server share its locks. */
  static String space(Defect defect) {
    return "broken-" + defect.name().toLowerCase(java.util.Locale.ROOT);
  }

  static final class Provider implements LockProvider {
    private final Defect defect;

    Provider(Defect defect) {
      this.defect = defect;
    }

    @Override
    public Set<String> schemes() {
      return Set.of("broken");
    }

    @Override
    public Set<String> optionNames() {
      return Set.of();
    }

    @Override
    public LockBackend open(BackendConfig config, BackendContext context) {
      String space = space(defect);
      LockBackend local = new LocalLockProvider().open(new BackendConfig(LockUri.parse("local:" + space), Map.of(), List.of()), context);
      return new Backend(defect, local, space);
    }
  }

  private static final class Backend implements LockBackend {
    private static final AtomicLong TOKENS = new AtomicLong();
    private final Defect defect;
    private final LockBackend local;
    private final String space;
    private final AtomicLong grants = new AtomicLong();

    Backend(Defect defect, LockBackend local, String space) {
      this.defect = defect;
      this.local = local;
      this.space = space;
    }

    @Override
    public Guarantees guarantees() {
      return local.guarantees();
    }

    @Override
    public LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake) {
      Duration asked = defect == Defect.NEVER_EXPIRES ? Duration.ofDays(7) : lease;
      Runnable waker = defect == Defect.NEVER_WAKES ? () -> { } : wake;
      LockAttempt real = local.attempt(name, ownerId, asked, waker);
      return new LockAttempt() {
        @Override
        public Poll poll() throws InterruptedException {
          if (defect == Defect.TWO_HOLDERS) {
            return Poll.granted(TOKENS.incrementAndGet(), null);
          }
          Poll p = real.poll();
          if (defect == Defect.TOKENS_GO_BACK && p.isGranted() && grants.incrementAndGet() % 3 == 0) {
            return Poll.granted(1, p.state());
          }
          return p;
        }

        @Override
        public void abandon() {
          real.abandon();
        }
      };
    }

    @Override
    public List<Renewal> renew(List<BackendLease> leases) {
      if (defect == Defect.TWO_HOLDERS) {
        return leases.stream().map(l -> Renewal.renewed()).collect(java.util.stream.Collectors.toList());
      }
      return local.renew(leases);
    }

    @Override
    public boolean release(BackendLease lease) {
      if (defect == Defect.NO_OWNER_CHECK) {
        LocalLockProvider.revoke(space, lease.name());
        return true;
      }
      if (defect == Defect.TWO_HOLDERS) {
        return true;
      }
      return local.release(lease);
    }

    @Override
    public LockState inspect(String name) {
      LockState now = local.inspect(name);
      if (defect == Defect.STALE_STATE) {
        LockState cached = lastHeld.get(name);
        if (now.isHeld()) {
          lastHeld.put(name, now);
        } else if (cached != null) {
          return cached;
        }
      }
      return now;
    }

    private final Map<String, LockState> lastHeld = new java.util.concurrent.ConcurrentHashMap<>();

    @Override
    public void close() {
      local.close();
    }
  }

  /** The kit run against one broken backend. */
  abstract static class BrokenKit extends LockCompatibilityKit {
    private final Defect defect;

    BrokenKit(Defect defect) {
      this.defect = defect;
    }

    @Override
    protected String uri() {
      return "broken:";
    }

    @Override
    protected LockClient newClient(LockOptions options) {
      return Locks.connect(LockConfig.builder().uri(uri()).defaults(options).build(), new Provider(defect));
    }

    @Override
    protected FaultHooks faults() {
      return new FaultHooks() {
        @Override
        public void revoke(String lockName) {
          LocalLockProvider.revoke(space(defect), lockName);
        }
      };
    }
  }

  static final class NoOwnerCheckKit extends BrokenKit {
    NoOwnerCheckKit() {
      super(Defect.NO_OWNER_CHECK);
    }
  }

  static final class TokensGoBackKit extends BrokenKit {
    TokensGoBackKit() {
      super(Defect.TOKENS_GO_BACK);
    }
  }

  static final class NeverExpiresKit extends BrokenKit {
    NeverExpiresKit() {
      super(Defect.NEVER_EXPIRES);
    }
  }

  static final class TwoHoldersKit extends BrokenKit {
    TwoHoldersKit() {
      super(Defect.TWO_HOLDERS);
    }
  }

  static final class NeverWakesKit extends BrokenKit {
    NeverWakesKit() {
      super(Defect.NEVER_WAKES);
    }
  }

  static final class StaleStateKit extends BrokenKit {
    StaleStateKit() {
      super(Defect.STALE_STATE);
    }
  }
}
