package dev.locksmith.tck;

import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Guarantees.Promise;

/**
 * The guarantees the in-memory test doubles ({@link MemoryBackends}, {@link SessionBackends})
 * share: the same promises, built in the same order, but for what ends a vanished holder's lease
 * and what a paused server does.
 */
final class InMemoryGuarantees {
  private InMemoryGuarantees() {}

  /**
   * @param expiry what ends a paused or crashed holder's lease ("lease expiry", "session timeout")
   * @param serverPause the promise for {@link Fault#SERVER_PAUSE}
   * @param serverPauseWhy its reason
   * @param features the double's features
   * @return the guarantees
   */
  static Guarantees of(
      String expiry, Promise serverPause, String serverPauseWhy, Feature... features) {
    return Guarantees.builder()
        .features(features)
        .promise(Fault.HOLDER_PAUSE, Promise.SAFE_WITH_FENCING, expiry)
        .promise(Fault.HOLDER_CRASH, Promise.SAFE, expiry)
        .promise(Fault.PAUSE_DURING_ACQUIRE, Promise.SAFE_WITH_FENCING, expiry)
        .promise(Fault.SERVER_RESTART, Promise.NOT_APPLICABLE, "in memory")
        .promise(Fault.SERVER_PAUSE, serverPause, serverPauseWhy)
        .promise(Fault.PARTITION, Promise.NOT_APPLICABLE, "no network")
        .promise(Fault.LEADER_FAILOVER, Promise.NOT_APPLICABLE, "no replication")
        .promise(Fault.CLOCK_JUMP, Promise.SAFE, "nanoTime")
        .promise(Fault.RELEASE_AFTER_EXPIRY, Promise.SAFE, "owner-checked release")
        .promise(Fault.AMBIGUOUS_ACQUIRE, Promise.SAFE, "abandon frees a grant")
        .promise(Fault.TOKEN_MONOTONICITY, Promise.SAFE, "one counter per lock")
        .build();
  }
}
