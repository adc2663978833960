package dev.locksmith.tck.compare;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Promise;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * How a lock scenario's holds are read off the contenders' reports: a turn ends when its release
 * starts, so a release that never returns (a call stuck on a frozen server until the run ends) is
 * not a hold that overlaps every later one.
 */
class LockResultTest extends HandWrittenEvents {
  private void hold(int contender, long token, long fromMs, long toMs) {
    event(contender, "HELD", Long.toString(token), at(fromMs));
    event(contender, "WROTE", "OK", Long.toString(token));
    event(contender, "RELEASING", Long.toString(token), at(toMs));
    event(contender, "RELEASED", "true", at(toMs));
  }

  private Result measure() throws Exception {
    try (ResourceServer server = new ResourceServer()) {
      Result r = new Result("store", Fault.SERVER_PAUSE, "server frozen", Promise.UNAVAILABLE, "A");
      r.measure(
          events,
          server,
          base + 100_000_000L,
          base + 3_000_000_000L,
          base + 5_000_000_000L,
          Duration.ofSeconds(1));
      return r;
    }
  }

  @Test
  void aReleaseThatNeverReturnedEndsItsTurnWhenItStarted() throws Exception {
    event(0, "HELD", "1", at(0));
    event(0, "WROTE", "OK", "1");
    event(
        0,
        "RELEASING",
        "1",
        at(50)); // and no RELEASED: the release was still waiting when the run ended
    hold(1, 2, 3_100, 3_150);
    hold(2, 3, 3_200, 3_250);
    Result r = measure();
    assertThat(r.overlaps()).as("holds overlapping").isZero();
    assertThat(r.observed()).isEqualTo("S");
    assertThat(r.agrees()).isTrue();
    assertThat(r.note())
        .as("the row says a release was left waiting")
        .contains("1 release(s) had not returned");
  }

  @Test
  void aTurnThatNeverStartedToReleaseLastsToTheEndAndOverlapsTheLaterOnes() throws Exception {
    event(0, "HELD", "1", at(0));
    hold(1, 2, 3_100, 3_150);
    hold(2, 3, 3_200, 3_250);
    Result r = measure();
    assertThat(r.overlaps()).as("holds overlapping").isEqualTo(2);
    assertThat(r.agrees()).as("overlaps where the backend declares the lock unavailable").isFalse();
  }

  @Test
  void theTimelineShowsEveryEventAndTheFault() {
    event(0, "HELD", "1", at(0));
    event(0, "RELEASING", "1", at(50));
    String timeline = Comparison.timeline(events, base + 10_000_000L, base + 20_000_000L);
    assertThat(timeline.lines()).hasSize(4);
    assertThat(timeline)
        .contains("0 HELD 1")
        .contains("-- fault starts")
        .contains("-- fault ends")
        .contains("0 RELEASING 1");
  }

  /** A turn whose acquire began at {@code askedMs} and was reported held at {@code fromMs}. */
  private void hold(int contender, long token, long askedMs, long fromMs, long toMs) {
    event(contender, "HELD", Long.toString(token), at(fromMs), at(askedMs));
    event(contender, "WROTE", "OK", Long.toString(token));
    event(contender, "RELEASING", Long.toString(token), at(toMs));
    event(contender, "RELEASED", "true", at(toMs));
  }

  @Test
  void aHolderPausedBetweenItsGrantAndItsReportIsNoTokenRegression() throws Exception {
    // contender 0 is granted token 1 at about 10 ms but reports it only at 3,300 ms (frozen in
    // between), after contender 1 reported token 2: the server granted in order
    hold(0, 1, 0, 3_300, 3_350);
    hold(1, 2, 3_100, 3_150, 3_200);
    hold(2, 3, 3_360, 3_400, 3_450);
    Result r = measure();
    assertThat(r.tokenRegressions).as("token regressions").isZero();
  }

  @Test
  void aLowerTokenGrantedToAnAcquireBegunAfterAHigherOneWasHeldIsATokenRegression()
      throws Exception {
    hold(0, 5, 3_000, 3_050, 3_100);
    hold(1, 4, 3_150, 3_200, 3_250); // asked after token 5 was held, and got 4
    hold(2, 6, 3_260, 3_300, 3_350);
    Result r = measure();
    assertThat(r.tokenRegressions).as("token regressions").isEqualTo(1);
    assertThat(r.observed()).isEqualTo("U");
  }

  @Test
  void aContenderThatDoesNotSayWhenItAskedIsOrderedByItsReport() throws Exception {
    hold(0, 5, 3_050, 3_100);
    hold(1, 4, 3_200, 3_250);
    Result r = measure();
    assertThat(r.tokenRegressions).as("token regressions").isEqualTo(1);
  }
}
