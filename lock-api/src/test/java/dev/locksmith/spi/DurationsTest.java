package dev.locksmith.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class DurationsTest {
  @Test
  void parsesTheFormsPeopleType() {
    assertThat(Durations.parse("30s")).isEqualTo(Duration.ofSeconds(30));
    assertThat(Durations.parse("250ms")).isEqualTo(Duration.ofMillis(250));
    assertThat(Durations.parse("2m")).isEqualTo(Duration.ofMinutes(2));
    assertThat(Durations.parse("1H")).isEqualTo(Duration.ofHours(1));
    assertThat(Durations.parse("1d")).isEqualTo(Duration.ofDays(1));
    assertThat(Durations.parse("PT1.5S")).isEqualTo(Duration.ofMillis(1500));
    assertThat(Durations.parse(" 5 s ")).isEqualTo(Duration.ofSeconds(5));
  }

  @Test
  void rejectsTheRestSayingWhatIsValid() {
    for (String bad : new String[] {"-5s", "5", "five seconds", "5 sec", "", "PTX"}) {
      assertThatThrownBy(() -> Durations.parse(bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("30s");
    }
  }

  @Test
  void formatsCompactly() {
    assertThat(Durations.format(Duration.ofSeconds(30))).isEqualTo("30s");
    assertThat(Durations.format(Duration.ofMillis(1500))).isEqualTo("1.500s");
    assertThat(Durations.format(Duration.ofMinutes(2))).isEqualTo("2m");
    assertThat(Durations.format(Duration.ofSeconds(-5))).isEqualTo("-5s");
    assertThat(Durations.toNanosSaturated(Duration.ofDays(365 * 1000L))).isEqualTo(Long.MAX_VALUE);
  }
}
