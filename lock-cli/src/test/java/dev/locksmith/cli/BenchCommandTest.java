package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The ratio column of {@code lockctl bench} reads the same way on a row of times and on a row of
 * rates.
 */
class BenchCommandTest {

  @Test
  void aLongerTimeAndALowerRateAreBothSlower() {
    assertThat(BenchCommand.ratio(254, 1, false)).isEqualTo("254x slower");
    assertThat(BenchCommand.ratio(100, 10_000, true)).isEqualTo("100x slower");
    assertThat(BenchCommand.ratio(4, 2, false)).isEqualTo("2.0x slower");
  }

  @Test
  void aShorterTimeAndAHigherRateAreBothFaster() {
    assertThat(BenchCommand.ratio(800, 1000, false)).isEqualTo("1.3x faster");
    assertThat(BenchCommand.ratio(3000, 1000, true)).isEqualTo("3.0x faster");
  }

  @Test
  void equalOrMissingFigures() {
    assertThat(BenchCommand.ratio(1000, 1001, true)).isEqualTo("as fast");
    assertThat(BenchCommand.ratio(0, 1000, true)).isEqualTo("-");
  }
}
