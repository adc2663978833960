package dev.locksmith.redlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.spi.Claim;
import org.junit.jupiter.api.Test;

/**
 * A permit's token is its drawn counter and its slot, so two permits drawn at once never share one.
 */
class RedlockLeaseTokenTest {

  @Test
  void permitsOfOneDrawOnDifferentSlotsGetDifferentTokensAndALaterDrawIsHigherWhateverTheSlot() {
    Claim permit = Claim.permit(5);
    assertThat(RedlockBackend.leaseToken(permit, 7, 0))
        .isNotEqualTo(RedlockBackend.leaseToken(permit, 7, 4));
    assertThat(RedlockBackend.leaseToken(permit, 8, 0))
        .isGreaterThan(RedlockBackend.leaseToken(permit, 7, 4));
    assertThat(RedlockBackend.leaseToken(Claim.permit(Claim.MAX_PERMITS), 8, 0))
        .isGreaterThan(
            RedlockBackend.leaseToken(Claim.permit(Claim.MAX_PERMITS), 7, Claim.MAX_PERMITS - 1));
  }

  @Test
  void locksAndReadWriteSidesKeepTheDrawnCounter() {
    assertThat(RedlockBackend.leaseToken(Claim.exclusive(), 42, -1)).isEqualTo(42);
    assertThat(RedlockBackend.leaseToken(Claim.read(), 42, -1)).isEqualTo(42);
    assertThat(RedlockBackend.leaseToken(Claim.write(), 42, -1)).isEqualTo(42);
  }

  @Test
  void aCounterTooLargeToComposeIsAnErrorNotAWrappedToken() {
    assertThatThrownBy(() -> RedlockBackend.leaseToken(Claim.permit(2), Long.MAX_VALUE / 2, 1))
        .isInstanceOf(ArithmeticException.class);
  }
}
