package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectNestedClass;

import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

/**
 * The kit is only worth something if it fails broken backends, and says what broke. Each case
 * runs one rule group of the kit against a backend with one defect and expects a failure whose
 * message names the broken property.
 */
class KitCatchesBrokenBackendsTest {

  static List<Arguments> cases() {
    return List.of(
        Arguments.of(BrokenBackends.NoOwnerCheckKit.class, LockCompatibilityKit.Ownership.class, "ownership broken"),
        Arguments.of(BrokenBackends.TokensGoBackKit.class, LockCompatibilityKit.Fencing.class, "fencing broken"),
        Arguments.of(BrokenBackends.NeverExpiresKit.class, LockCompatibilityKit.Expiry.class, "expiry broken"),
        Arguments.of(BrokenBackends.TwoHoldersKit.class, LockCompatibilityKit.MutualExclusion.class, "mutual exclusion broken"),
        Arguments.of(BrokenBackends.NeverWakesKit.class, LockCompatibilityKit.WakeUp.class, "notified wake-up broken"),
        Arguments.of(BrokenBackends.StaleStateKit.class, LockCompatibilityKit.StateReads.class, "state reads broken"));
  }

  @ParameterizedTest(name = "{0} fails {1} with \"{2}\"")
  @MethodSource("cases")
  @DisplayName("the kit fails a broken backend with a message that says what broke")
  void kitCatchesDefect(Class<?> kit, Class<?> rules, String expected) {
    Events tests = EngineTestKit.engine("junit-jupiter")
        .selectors(selectNestedClass(List.of(kit), rules))
        .execute()
        .testEvents();
    List<String> failures = tests.failed().stream()
        .map(e -> e.getPayload(org.junit.platform.engine.TestExecutionResult.class)
            .flatMap(r -> r.getThrowable()).map(Throwable::getMessage).orElse(""))
        .collect(Collectors.toList());
    assertThat(tests.started().count()).as("rules of %s that ran against %s", rules.getSimpleName(), kit.getSimpleName()).isPositive();
    assertThat(failures).as("failure messages of %s against %s", rules.getSimpleName(), kit.getSimpleName())
        .anySatisfy(m -> assertThat(m).contains(expected));
  }
}
