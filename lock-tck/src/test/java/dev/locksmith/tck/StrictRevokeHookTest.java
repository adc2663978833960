package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectNestedMethod;

import dev.locksmith.tck.LockCompatibilityKit.Ownership;
import dev.locksmith.tck.LockCompatibilityKit.Renewal;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

/**
 * A revoke hook may throw for a lock nobody holds ({@link FaultHooks#revoke}): the rules that
 * revoke pass the session backend with such a strict hook, which the kit never asks to revoke a
 * lock nobody took.
 */
class StrictRevokeHookTest {

  /**
   * The session backend with a revoke hook that throws when there is nothing to revoke. Run one
   * rule at a time.
   */
  static class StrictSessionKit extends SessionLockCompatibilityTest {
    @Override
    protected FaultHooks faults() {
      return new FaultHooks() {
        @Override
        public void revoke(String lockName) {
          if (!SessionBackends.SERVER.revoke(lockName)) {
            throw new IllegalStateException("no session holds lock '" + lockName + "'");
          }
        }
      };
    }
  }

  static List<Arguments> rules() {
    return List.of(
        Arguments.of(Ownership.class, "rule2_5_releaseAfterTakeoverIsOwnerChecked"),
        Arguments.of(Ownership.class, "rule2_6_releaseOfAForgottenLockIsFalse"),
        Arguments.of(Ownership.class, "rule2_7_ownershipIsPerLease"),
        Arguments.of(Ownership.class, "rule2_8_releaseIsAtomicUnderATakeoverRace"),
        Arguments.of(Renewal.class, "rule4_4_renewalOfATakenOverLeaseIsLost"),
        Arguments.of(Renewal.class, "rule4_5_batchedRenewalAttributesOutcomes"));
  }

  @ParameterizedTest(name = "{1}")
  @MethodSource("rules")
  void strictHookPasses(Class<?> group, String rule) {
    Events tests =
        EngineTestKit.engine("junit-jupiter")
            .selectors(selectNestedMethod(List.of(StrictSessionKit.class), group, rule))
            .execute()
            .testEvents();
    assertThat(tests.succeeded().count())
        .as(
            "rule %s with a revoke hook that throws for a free lock; failures: %s",
            rule, tests.failed().list())
        .isEqualTo(1);
  }
}
