package dev.locksmith.etcd;

import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.LockCompatibilityKit;
import dev.locksmith.tck.TckTimeouts;
import io.etcd.jetcd.options.DeleteOption;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The whole kit against a real etcd started on free loopback ports. */
class EtcdLockCompatibilityIT extends LockCompatibilityKit {
  /** The etcd lease TTL the kit's clients use: short, so expiry rules run fast. */
  static final Duration TTL = Duration.ofSeconds(2);

  @RegisterExtension static final EtcdServerExtension ETCD = EtcdServerExtension.oneMember("tck");

  @Override
  protected String uri() {
    return "etcd://" + ETCD.hosts() + "?ttl=" + TTL.getSeconds() + "s";
  }

  @Override
  protected TckTimeouts timeouts() {
    TckTimeouts t = TckTimeouts.fromEnvironment();
    // A vanished holder's locks go when its etcd lease runs out: the TTL after its last
    // keep-alive, plus etcd's half-second expiry sweep. Locks held without renewal and holds after
    // release go with an etcd lease of their own: their time rounded up to whole seconds plus the
    // sweep (about 0.1-0.4 s measured), inside the 2 s that rule 17.9 caps this slack at.
    long slackMillis = Math.round((TTL.toMillis() + 1000) * t.scale());
    return t.withExpirySlack(Duration.ofMillis(slackMillis));
  }

  @Override
  protected FaultHooks faults() {
    return EtcdComparisonTarget.hooks(ETCD.cluster(), ETCD.admin())
        .withRevoke(
            lockName -> {
              try {
                ETCD.admin()
                    .getKVClient()
                    .delete(
                        KeyNames.bytes(KeyNames.lockPrefix(EtcdSettings.DEFAULT_PREFIX, lockName)),
                        DeleteOption.builder().isPrefix(true).build())
                    .get(10, TimeUnit.SECONDS);
              } catch (Exception e) {
                throw new IllegalStateException(
                    "revoking lock '" + lockName + "' in etcd failed", e);
              }
            });
  }
}
