package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 5: fencing, as tests: the rules of this group in {@code RULES.md}. The kit's {@code @Nested}
 * class {@link LockCompatibilityKit.Fencing} runs them against the backend under test. Every rule
 * here needs {@link Feature#FENCING}: without it each is skipped with that reason.
 */
@RequiresFeature(Feature.FENCING)
interface FencingRules extends KitRules {
  @Test
  @DisplayName(
      "5.1 MUST: tokens are above zero and strictly increase across successive holders of several"
          + " clients")
  default void rule5_1_tokensIncreaseAcrossHolders() throws Exception {
    String name = name("tokens");
    LockClient[] cs = {client(), client(), client()};
    long last = 0;
    for (int i = 0; i < 30; i++) {
      try (Lease lease = cs[i % cs.length].lock(name).acquire(Duration.ofSeconds(10))) {
        long token = lease.fencingToken();
        if (token <= last) {
          fail(
              "fencing broken: holder " + (i + 1) + " got token " + token + " after token " + last);
        }
        last = token;
      }
    }
  }

  @Test
  @DisplayName("5.2 MUST: a holder that takes over an expired lease gets a greater token")
  default void rule5_2_tokensIncreaseAfterExpiryTakeover() throws Exception {
    String name = name("takeover");
    Lease stale = client(expiring()).lock(name).acquire(Duration.ofSeconds(10));
    Lease fresh =
        client()
            .lock(name)
            .acquire(limits().lease().plus(limits().expirySlack()).plus(limits().tolerance()));
    assertThat(fresh.fencingToken())
        .withFailMessage(
            "fencing broken: token %d after an expiry takeover is not above the stale holder's"
                + " %d",
            fresh.fencingToken(), stale.fencingToken())
        .isGreaterThan(stale.fencingToken());
    assertThat(stale.fencingToken()).as("token").isPositive();
  }
}
