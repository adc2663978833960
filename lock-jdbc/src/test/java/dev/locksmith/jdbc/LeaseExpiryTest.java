package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The database's wall clock, read in whole milliseconds and stepped by time sync, judges expiry,
 * while the holder counts its lease on a monotonic clock: a row is taken over only once the
 * database clock is past {@code expires_at} by more than the allowance.
 */
class LeaseExpiryTest {
  @Test
  void aRowIsHeldUntilTheClockIsPastItsExpiryByMoreThanTheAllowance() {
    long expiresAt = 1_000_000;
    assertThat(LeaseTable.heldAt(expiresAt, expiresAt - 1)).isTrue();
    assertThat(LeaseTable.heldAt(expiresAt, expiresAt))
        .as("clock reading equal to expires_at")
        .isTrue();
    assertThat(LeaseTable.heldAt(expiresAt, expiresAt + LeaseTable.CLOCK_ALLOWANCE_MILLIS))
        .isTrue();
    assertThat(LeaseTable.heldAt(expiresAt, expiresAt + LeaseTable.CLOCK_ALLOWANCE_MILLIS + 1))
        .isFalse();
    assertThat(LeaseTable.CLOCK_ALLOWANCE_MILLIS)
        .as("allowance, ms: covers rounding and small clock steps")
        .isBetween(2L, 100L);
  }

  /**
   * A state read that says "held" must say for how long more, above zero: never "held, 0 ms left"
   * while not takeable.
   */
  @Test
  void aHeldRowsRemainingIsTheTimeUntilItCanBeTakenAboveZero() {
    long expiresAt = 1_000_000;
    for (long now = expiresAt - 5; LeaseTable.heldAt(expiresAt, now); now++) {
      long left = LeaseTable.untilTakeable(expiresAt, now);
      assertThat(left).as("remaining at %d ms past expiry", now - expiresAt).isPositive();
      assertThat(LeaseTable.heldAt(expiresAt, now + left))
          .as("held %d ms later, when the remaining ran out", left)
          .isFalse();
      assertThat(LeaseTable.heldAt(expiresAt, now + left - 1))
          .as("free before the remaining ran out")
          .isTrue();
    }
  }
}
