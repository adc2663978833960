package dev.locksmith.tck.compare;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.compare.Comparison.Scenario;
import dev.locksmith.tck.compare.Comparison.Target;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A comparison target says how it injects a fault, and which scenarios it runs. */
class TargetTest {
  private final Target target =
      Target.of("mystore", "mystore://127.0.0.1:1", FaultHooks.NONE, Duration.ZERO);

  @Test
  void aTargetNamesHowItInjectsAFault() {
    Target viaProxy =
        target.injects(
            Scenario.SERVER_PAUSE, "lock server cut off by a silent TCP proxy past the lease");
    assertThat(viaProxy.description(Scenario.SERVER_PAUSE))
        .isEqualTo("lock server cut off by a silent TCP proxy past the lease");
    assertThat(target.description(Scenario.SERVER_PAUSE)).contains("SIGSTOP");
    assertThat(viaProxy.description(Scenario.HOLDER_PAUSE))
        .isEqualTo(target.description(Scenario.HOLDER_PAUSE));
    assertThat(viaProxy.only(Scenario.SERVER_PAUSE).description(Scenario.SERVER_PAUSE))
        .contains("silent TCP proxy");
    assertThatThrownBy(() -> target.injects(Scenario.SERVER_PAUSE, " "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`how`");
  }

  @Test
  void onlyKeepsTheChosenScenarios() {
    Target one = target.only(Scenario.CLOCK_JUMP);
    assertThat(one.scenarios).containsExactly(Scenario.CLOCK_JUMP);
    assertThat(target.scenarios).contains(Scenario.values());
  }

  @Test
  void aScenarioCoveredByAnotherTargetSaysWhere() {
    Target single = target.coveredBy("mystore-3", Scenario.LEADER_FAILOVER, Scenario.MAJORITY_DOWN);
    assertThat(single.scenarios)
        .doesNotContain(Scenario.LEADER_FAILOVER, Scenario.MAJORITY_DOWN)
        .contains(Scenario.HOLDER_PAUSE);
    assertThat(single.elsewhere.get(Scenario.LEADER_FAILOVER)).contains("'mystore-3'");
    assertThat(single.withPrediction(dev.locksmith.Guarantees.Fault.HOLDER_PAUSE, "F").elsewhere)
        .as("kept by a copy")
        .containsKey(Scenario.MAJORITY_DOWN);
    assertThatThrownBy(() -> target.coveredBy("other"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`other`");
  }
}
