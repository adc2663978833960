package dev.locksmith.jdbc;

import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.LockState;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * The JDBC provider with {@link Feature#SEMAPHORES} and {@link Feature#READ_WRITE_LOCKS} added
 * to what its backend declares, so that {@link JdbcClaimsIT} can reach semaphores and read-write
 * locks through the client before the backend declares them itself (it does so only once the
 * compatibility kit's rules for them pass on every database). Everything else is passed through.
 */
final class ClaimsDeclared implements LockProvider {
  private final JdbcLockProvider jdbc = new JdbcLockProvider();

  @Override
  public Set<String> schemes() {
    return jdbc.schemes();
  }

  @Override
  public Set<String> optionNames() {
    return jdbc.optionNames();
  }

  @Override
  public boolean acceptsOption(String key) {
    return jdbc.acceptsOption(key);
  }

  @Override
  public LockBackend open(BackendConfig config, BackendContext context) {
    LockBackend b = jdbc.open(config, context);
    Guarantees declared = b.guarantees();
    Set<Feature> features = EnumSet.of(Feature.SEMAPHORES, Feature.READ_WRITE_LOCKS);
    features.addAll(declared.features());
    Guarantees.Builder g = Guarantees.builder().features(features.toArray(new Feature[0]));
    for (Fault f : Fault.values()) {
      g.promise(f, declared.promise(f), declared.note(f));
    }
    Guarantees guarantees = g.build();
    return new LockBackend() {
      @Override
      public Guarantees guarantees() {
        return guarantees;
      }

      @Override
      public LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake) {
        return b.attempt(name, ownerId, lease, wake);
      }

      @Override
      public LockAttempt attempt(String name, Claim claim, String ownerId, Duration lease, Runnable wake) {
        return b.attempt(name, claim, ownerId, lease, wake);
      }

      @Override
      public List<Renewal> renew(List<BackendLease> leases) {
        return b.renew(leases);
      }

      @Override
      public boolean release(BackendLease lease) {
        return b.release(lease);
      }

      @Override
      public boolean extend(BackendLease lease, Duration newLease) {
        return b.extend(lease, newLease);
      }

      @Override
      public boolean releaseAfter(BackendLease lease, Duration keep) {
        return b.releaseAfter(lease, keep);
      }

      @Override
      public LockState inspect(String name) {
        return b.inspect(name);
      }

      @Override
      public void abandon() {
        b.abandon();
      }

      @Override
      public void close() {
        b.close();
      }
    };
  }
}
