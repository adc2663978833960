package dev.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.Guarantees.Feature;
import dev.locksmith.local.LocalLockProvider;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.Renewal;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What the core does around extend and releaseAfter that the kit cannot see: the call it makes
 * after a session grant, the features it requires, and how it logs a lease that runs out.
 */
class LeaseControlTest {

  /** local: behind a backend that grants for a session and declares only some features. */
  static final class Wrapped implements LockProvider {
    final boolean session;
    final Set<Feature> dropped;
    final List<Duration> extendCalls = new CopyOnWriteArrayList<>();

    /** When set, the first grant's session ends while the grant is on its way back. */
    volatile boolean loseSessionOnFirstGrant;

    final List<String> released = new CopyOnWriteArrayList<>();

    Wrapped(boolean session, Feature... dropped) {
      this.session = session;
      this.dropped =
          dropped.length == 0 ? EnumSet.noneOf(Feature.class) : EnumSet.copyOf(List.of(dropped));
    }

    @Override
    public Set<String> schemes() {
      return Set.of("local");
    }

    @Override
    public Set<String> optionNames() {
      return Set.of();
    }

    @Override
    public LockBackend open(BackendConfig config, BackendContext context) {
      LockBackend local = new LocalLockProvider().open(config, context);
      Guarantees.Builder g = Guarantees.builder();
      EnumSet<Feature> features = EnumSet.copyOf(local.guarantees().features());
      features.removeAll(dropped);
      g.features(features.toArray(new Feature[0]));
      for (Guarantees.Fault f : Guarantees.Fault.values()) {
        g.promise(f, local.guarantees().promise(f), local.guarantees().note(f));
      }
      Guarantees guarantees = g.build();
      return new LockBackend() {
        @Override
        public Guarantees guarantees() {
          return guarantees;
        }

        @Override
        public boolean renewsBySession() {
          return session;
        }

        @Override
        public LockAttempt attempt(String name, String ownerId, Duration lease, Runnable wake) {
          LockAttempt inner = local.attempt(name, ownerId, lease, wake);
          return new LockAttempt() {
            @Override
            public Poll poll() throws InterruptedException {
              Poll p = inner.poll();
              if (p.isGranted() && loseSessionOnFirstGrant) {
                loseSessionOnFirstGrant = false;
                context.allLeasesLost("the session ended (simulated)");
              }
              return session && p.isGranted()
                  ? Poll.grantedForSession(p.fencingToken(), p.state())
                  : p;
            }

            @Override
            public void abandon() {
              inner.abandon();
            }
          };
        }

        @Override
        public List<Renewal> renew(List<BackendLease> leases) {
          return local.renew(leases);
        }

        @Override
        public boolean extend(BackendLease lease, Duration newLease) {
          extendCalls.add(newLease);
          return local.extend(lease, newLease);
        }

        @Override
        public boolean releaseAfter(BackendLease lease, Duration keep) {
          return local.releaseAfter(lease, keep);
        }

        @Override
        public boolean release(BackendLease lease) {
          released.add(lease.ownerId());
          return local.release(lease);
        }

        @Override
        public void close() {
          local.close();
        }
      };
    }
  }

  private static LockClient connect(Wrapped provider) {
    return Locks.connect(LockConfig.fromUri("local:lease-control-" + UUID.randomUUID()), provider);
  }

  private static LockOptions unrenewed(Duration lease) {
    return LockOptions.builder().lease(lease).autoRenew(false).build();
  }

  @Test
  void aSessionGrantWithoutAutoRenewHasTheServerEndItAtItsLease() throws Exception {
    Wrapped provider = new Wrapped(true);
    try (LockClient client = connect(provider)) {
      try (Lease lease =
          client
              .lock("unrenewed", unrenewed(Duration.ofSeconds(5)))
              .acquire(Duration.ofSeconds(1))) {
        assertThat(provider.extendCalls)
            .as("extend calls after a session grant without auto-renew")
            .hasSize(1);
        assertThat(provider.extendCalls.get(0))
            .isBetween(Duration.ofSeconds(4), Duration.ofSeconds(5));
        assertThat(lease.isValid()).isTrue();
      }
      try (Lease lease = client.lock("renewed").acquire(Duration.ofSeconds(1))) {
        assertThat(provider.extendCalls)
            .as("extend calls after a session grant with auto-renew: the session keeps it")
            .hasSize(1);
      }
    }
  }

  @Test
  void aGrantWhoseSessionEndedOnTheWayIsGivenBackAndTheLockAskedForAgain() throws Exception {
    Wrapped provider = new Wrapped(true);
    provider.loseSessionOnFirstGrant = true;
    try (LockClient client = connect(provider)) {
      Lease lease = client.lock("raced").acquire(Duration.ofSeconds(5));
      assertThat(lease.isValid())
          .as("the lease acquire() returned after the first grant's session ended")
          .isTrue();
      assertThat(provider.released).as("owner ids given back: the void first grant").hasSize(1);
      assertThat(lease.release()).as("its release").isTrue();
      assertThat(provider.released).hasSize(2).doesNotHaveDuplicates();
    }
  }

  @Test
  void aLeasedGrantIsNotExtendedAfterTheGrant() throws Exception {
    Wrapped provider = new Wrapped(false);
    try (LockClient client = connect(provider);
        Lease lease =
            client
                .lock("leased", unrenewed(Duration.ofSeconds(5)))
                .acquire(Duration.ofSeconds(1))) {
      assertThat(provider.extendCalls)
          .as("extend calls after a leased grant: the server already has its lease")
          .isEmpty();
      assertThat(lease.extend(Duration.ofSeconds(2))).isTrue();
      assertThat(provider.extendCalls).containsExactly(Duration.ofSeconds(2));
    }
  }

  @Test
  void withoutTheFeaturesBothCallsThrowAndChangeNothing() throws Exception {
    Wrapped provider = new Wrapped(false, Feature.EXTEND, Feature.HOLD_AFTER_RELEASE);
    try (LockClient client = connect(provider)) {
      Lease lease =
          client.lock("plain", unrenewed(Duration.ofSeconds(5))).acquire(Duration.ofSeconds(1));
      assertThatThrownBy(() -> lease.extend(Duration.ofSeconds(2)))
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessageContaining("extend()")
          .hasMessageContaining("EXTEND")
          .hasMessageContaining("local:lease-control-");
      assertThatThrownBy(() -> lease.releaseAfter(Duration.ofSeconds(2)))
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessageContaining("releaseAfter()")
          .hasMessageContaining("HOLD_AFTER_RELEASE");
      assertThat(provider.extendCalls).isEmpty();
      assertThat(lease.isValid()).as("the lease after both refusals").isTrue();
      assertThat(lease.release()).as("its release after both refusals").isTrue();
    }
  }

  @Test
  void aLeaseRunningOutWithoutRenewalIsNotAWarningButALostRenewedOneIs() throws Exception {
    PrintStream original = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    String space = "log-levels-" + UUID.randomUUID();
    try (LockClient client = Locks.connect("local:" + space)) {
      Lease expiring =
          client.lock("runs-out", unrenewed(Duration.ofMillis(50))).acquire(Duration.ofSeconds(1));
      LeaseLostException out = expiring.lost().toCompletableFuture().get(5, TimeUnit.SECONDS);
      assertThat(out.reason()).isEqualTo(LeaseLostException.Reason.EXPIRED);

      Lease renewed =
          client
              .lock("taken", LockOptions.builder().lease(Duration.ofMillis(300)).build())
              .acquire(Duration.ofSeconds(1));
      LocalLockProvider.revoke(space, "taken");
      LeaseLostException taken = renewed.lost().toCompletableFuture().get(15, TimeUnit.SECONDS);
      assertThat(taken.reason()).isNotEqualTo(LeaseLostException.Reason.EXPIRED);
    } finally {
      System.setErr(original);
    }
    String log = captured.toString(StandardCharsets.UTF_8);
    assertThat(log)
        .as("the log of a lease held without renewal that ran out, as asked")
        .doesNotContain("'runs-out'");
    assertThat(log)
        .as("the log of a renewed lease that was lost")
        .contains("WARN")
        .contains("'taken'");
  }
}
