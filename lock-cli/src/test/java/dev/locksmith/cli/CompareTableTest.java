package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The word wrapping that keeps {@code lockctl compare}'s table within 100 columns. */
class CompareTableTest {

  @Test
  void wrapsAtSpacesAndCutsOnlyWordsLongerThanTheColumn() {
    assertThat(CompareTable.wrap("holder frozen (SIGSTOP) past its lease, then writes", 42))
        .containsExactly("holder frozen (SIGSTOP) past its lease,", "then writes");
    assertThat(CompareTable.wrap("abcdefghij kl", 4)).containsExactly("abcd", "efgh", "ij", "kl");
    assertThat(CompareTable.wrap("", 8)).containsExactly("");
  }
}
