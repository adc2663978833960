package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectNestedMethod;

import dev.locksmith.tck.LockCompatibilityKit.BadInput;
import dev.locksmith.tck.LockCompatibilityKit.BreakGlass;
import dev.locksmith.tck.LockCompatibilityKit.Elections;
import dev.locksmith.tck.LockCompatibilityKit.Expiry;
import dev.locksmith.tck.LockCompatibilityKit.Fairness;
import dev.locksmith.tck.LockCompatibilityKit.Fencing;
import dev.locksmith.tck.LockCompatibilityKit.LeaderLatches;
import dev.locksmith.tck.LockCompatibilityKit.LeaseControl;
import dev.locksmith.tck.LockCompatibilityKit.Listing;
import dev.locksmith.tck.LockCompatibilityKit.LockSets;
import dev.locksmith.tck.LockCompatibilityKit.LossDetection;
import dev.locksmith.tck.LockCompatibilityKit.MutualExclusion;
import dev.locksmith.tck.LockCompatibilityKit.Ownership;
import dev.locksmith.tck.LockCompatibilityKit.ReadWriteLocks;
import dev.locksmith.tck.LockCompatibilityKit.Renewal;
import dev.locksmith.tck.LockCompatibilityKit.Semaphores;
import dev.locksmith.tck.LockCompatibilityKit.StateReads;
import dev.locksmith.tck.LockCompatibilityKit.WakeUp;
import dev.locksmith.tck.MemoryBackends.Defect;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

/**
 * The kit is only worth something if it fails broken backends by the rule meant for each defect,
 * and says what broke. Each case runs exactly that rule against the in-memory backend with one
 * defect (written against the public SPI only) and requires it to fail with a message that names
 * the defect; {@link MemoryLockCompatibilityTest} runs the whole kit against the same backend
 * without a defect, which must pass.
 */
class KitCatchesBrokenBackendsTest {

  static List<Arguments> cases() {
    return List.of(
        // 1. mutual exclusion
        Arguments.of(
            Defect.TWO_HOLDERS,
            MutualExclusion.class,
            "rule1_1_atMostOneHolderUnderContention",
            "mutual exclusion broken: "),
        Arguments.of(
            Defect.TWO_HOLDERS_FLAKY,
            MutualExclusion.class,
            "rule1_1_atMostOneHolderUnderContention",
            "increments were lost"),
        Arguments.of(
            Defect.WEDGES_UNDER_CONTENTION,
            MutualExclusion.class,
            "rule1_1_atMostOneHolderUnderContention",
            "while contenders waited"),
        Arguments.of(
            Defect.CHECK_THEN_SET,
            MutualExclusion.class,
            "rule1_2_simultaneousRaceHasOneWinner",
            "at the same instant were all granted"),
        // 2. ownership
        Arguments.of(
            Defect.NO_OWNER_CHECK,
            Ownership.class,
            "rule2_5_releaseAfterTakeoverIsOwnerChecked",
            "ownership broken: "),
        Arguments.of(
            Defect.RELEASE_TRUE_WHEN_FREE,
            Ownership.class,
            "rule2_6_releaseOfAForgottenLockIsFalse",
            "no longer held for this lease"),
        Arguments.of(
            Defect.OWNER_PER_CLIENT,
            Ownership.class,
            "rule2_7_ownershipIsPerLease",
            "not per client"),
        Arguments.of(
            Defect.READ_THEN_DELETE,
            Ownership.class,
            "rule2_8_releaseIsAtomicUnderATakeoverRace",
            "must be one atomic step"),
        // 3. expiry
        Arguments.of(
            Defect.NEVER_EXPIRES, Expiry.class, "rule3_1_unrenewedLeaseExpires", "expiry broken: "),
        Arguments.of(
            Defect.TRUNCATES_LEASE,
            Expiry.class,
            "rule3_4_fractionalLeaseEndsOnTime",
            "ended the lease early"),
        Arguments.of(
            Defect.EXPIRES_LATE,
            Expiry.class,
            "rule3_4_fractionalLeaseEndsOnTime",
            "kept it too long"),
        // 4. renewal
        Arguments.of(
            Defect.RENEW_UNITS,
            Renewal.class,
            "rule4_3_renewalExtendsByTheLease",
            "extend the lease by the lease time"),
        Arguments.of(
            Defect.RENEW_NO_OWNER_CHECK,
            Renewal.class,
            "rule4_4_renewalOfATakenOverLeaseIsLost",
            "must check the owner per lease"),
        Arguments.of(
            Defect.RENEW_RETRY_WHEN_TAKEN,
            Renewal.class,
            "rule4_4_renewalOfATakenOverLeaseIsLost",
            "must answer lost, not retry"),
        Arguments.of(
            Defect.RENEW_BATCH_MISATTRIBUTED,
            Renewal.class,
            "rule4_5_batchedRenewalAttributesOutcomes",
            "renewal broken: "),
        // 5. fencing
        Arguments.of(
            Defect.TOKENS_GO_BACK,
            Fencing.class,
            "rule5_1_tokensIncreaseAcrossHolders",
            "fencing broken: "),
        // 10. FIFO
        Arguments.of(
            Defect.FIFO_STRING_ORDER,
            Fairness.class,
            "rule10_1_firstComeFirstServed",
            "FIFO broken: waiters that queued in order 0..11"),
        Arguments.of(
            Defect.REPOLL_LOSES_PLACE,
            Fairness.class,
            "rule10_2_repollingKeepsItsPlace",
            "lost their place"),
        Arguments.of(Defect.BARGING, Fairness.class, "rule10_3_noBarging", "(barging"),
        Arguments.of(
            Defect.GHOST_WAITER,
            Fairness.class,
            "rule10_4_withdrawnWaiterLeavesTheQueue",
            "still stood in line"),
        // 11. notified wake-up
        Arguments.of(
            Defect.NEVER_WAKES,
            WakeUp.class,
            "rule11_1_waiterIsWokenByTheRelease",
            "notified wake-up broken: median hand-off"),
        Arguments.of(
            Defect.POLLS_50MS, WakeUp.class, "rule11_2_waiterDoesNotPoll", "not poll in a loop"),
        Arguments.of(
            Defect.POLLS_20MS, WakeUp.class, "rule11_2_waiterDoesNotPoll", "not poll in a loop"),
        Arguments.of(Defect.LOST_WAKEUP, WakeUp.class, "rule11_3_noLostWakeUp", "lost wake-up"),
        // 12. names
        Arguments.of(
            Defect.NAME_CASE,
            BadInput.class,
            "rule12_6_nearlyEqualNamesAreDistinct",
            "differ only by case"),
        Arguments.of(
            Defect.NAME_TRIM,
            BadInput.class,
            "rule12_6_nearlyEqualNamesAreDistinct",
            "differ only by a trailing space"),
        Arguments.of(
            Defect.NAME_NFC,
            BadInput.class,
            "rule12_6_nearlyEqualNamesAreDistinct",
            "differ only by Unicode normal form"),
        Arguments.of(
            Defect.NAME_LATIN1,
            BadInput.class,
            "rule12_6_nearlyEqualNamesAreDistinct",
            "differ only by one Cyrillic letter"),
        Arguments.of(
            Defect.NAME_191,
            BadInput.class,
            "rule12_6_nearlyEqualNamesAreDistinct",
            "differ only by the 192nd character"),
        Arguments.of(
            Defect.NAME_200,
            BadInput.class,
            "rule12_6_nearlyEqualNamesAreDistinct",
            "differ only by the 201st character"),
        // 17. lease control
        Arguments.of(
            Defect.EXTEND_CLIENT_ONLY,
            LeaseControl.class,
            "rule17_1_extendLonger",
            "the server's expiry did not move"),
        Arguments.of(
            Defect.EXTEND_ONLY_LONGER,
            LeaseControl.class,
            "rule17_2_extendShorter",
            "must move the server's expiry both ways"),
        Arguments.of(
            Defect.EXTEND_NO_OWNER_CHECK,
            LeaseControl.class,
            "rule17_3_extendOfALeaseNoLongerOurs",
            "extend must check the owner on the server"),
        Arguments.of(
            Defect.HOLD_IS_RELEASE,
            LeaseControl.class,
            "rule17_5_holdAfterRelease",
            "let another client take the lock after only"),
        Arguments.of(
            Defect.HOLD_IN_CLIENT,
            LeaseControl.class,
            "rule17_6_holdSurvivesClose",
            "holder's client closed"),
        Arguments.of(
            Defect.HOLD_NO_OWNER_CHECK,
            LeaseControl.class,
            "rule17_10_holdOfALeaseNoLongerOurs",
            "it must check the owner on the server"),
        Arguments.of(
            Defect.SESSION_EXTEND_IGNORED,
            LeaseControl.class,
            "rule17_9_unrenewedLeaseOfAVanishedHolderEndsOnTheServer",
            "not when a session times out"),
        Arguments.of(
            Defect.EXTEND_REVIVES_EXPIRED,
            LeaseControl.class,
            "rule17_12_extendOfAnExpiredLease",
            "the server's extend must check the lease's expiry as well as its owner"),
        Arguments.of(
            Defect.HOLD_COUNTS_FROM_GRANT,
            LeaseControl.class,
            "rule17_13_holdCountsFromTheCall",
            "keep must count from the releaseAfter() call, not from the grant"),
        Arguments.of(
            Defect.EXTEND_RESETS_FENCE,
            LeaseControl.class,
            "rule17_14_tokensIncreaseAfterAnExtend",
            "fencing broken: the holder after an extended lease"),
        // 14. loss detection
        Arguments.of(
            Defect.SESSION_UNBOUNDED,
            LossDetection.class,
            "rule14_3_unreachableServerIsSignalled",
            "loss detection broken: the server was unreachable"),
        // 16. state reads
        Arguments.of(
            Defect.STALE_STATE,
            StateReads.class,
            "rule16_1_stateFollowsTheHolder",
            "state reads broken: a released lock read as"),
        Arguments.of(
            Defect.WRONG_HOLDER,
            StateReads.class,
            "rule16_1_stateFollowsTheHolder",
            "state reads broken: holder() read"),
        Arguments.of(
            Defect.REMAINING_FROZEN,
            StateReads.class,
            "rule16_4_remainingCountsDown",
            "must count down"),
        Arguments.of(
            Defect.EXPIRED_READS_HELD,
            StateReads.class,
            "rule16_5_expiredLeaseReadsFree",
            "still read as held"),
        Arguments.of(
            Defect.WAITING_COUNTS_HOLDER,
            StateReads.class,
            "rule16_7_waitingCountIsTheCallersWaiting",
            "the holder is not a waiter"),
        Arguments.of(
            Defect.GHOST_WAITER,
            StateReads.class,
            "rule16_7_waitingCountIsTheCallersWaiting",
            "a waiter that gave up must leave the count"),
        // 18. semaphores
        Arguments.of(
            Defect.SEM_OVER_GRANT,
            Semaphores.class,
            "rule18_1_atMostNHoldersUnderContention",
            "semaphores broken: a semaphore of 3 permits had 4 holders at once"),
        Arguments.of(
            Defect.SEM_OVER_GRANT,
            Semaphores.class,
            "rule18_2_exactlyNPermits",
            "one permit too many (N+1)"),
        Arguments.of(
            Defect.SEM_RELEASE_LEAKS,
            Semaphores.class,
            "rule18_2_exactlyNPermits",
            "(a permit leak)"),
        Arguments.of(
            Defect.SHARED_RELEASE_COUNTED,
            Semaphores.class,
            "rule18_2_exactlyNPermits",
            "must be owner-checked per lease on the server, not counted"),
        Arguments.of(
            Defect.SEM_NEVER_EXPIRES,
            Semaphores.class,
            "rule18_3_permitsOfVanishedHoldersComeBack",
            "a permit must be freed by its lease when its holder is gone"),
        Arguments.of(
            Defect.SEM_GHOST_WAITER,
            Semaphores.class,
            "rule18_4_withdrawnWaitersLeaveNoGhost",
            "left a ghost behind"),
        Arguments.of(
            Defect.SEM_TOKENS_GO_BACK,
            Semaphores.class,
            "rule18_5_tokensIncreaseAcrossGrants",
            "fencing broken: grant 3 of a semaphore of 2 permits got token"),
        Arguments.of(
            Defect.SEM_COUNT_MISMATCH_ACCEPTED,
            Semaphores.class,
            "rule18_6_mismatchedCount",
            "answered normally instead of throwing IllegalStateException"),
        Arguments.of(
            Defect.SEM_NEVER_WAKES,
            Semaphores.class,
            "rule18_9_waiterIsWokenByARelease",
            "a release of a permit must wake the semaphore's waiters"),
        Arguments.of(
            Defect.SEM_CHECK_THEN_TAKE,
            Semaphores.class,
            "rule18_1_atMostNHoldersUnderContention",
            "the server granted more permits than the count"),
        Arguments.of(
            Defect.SEM_COUNT_STICKS,
            Semaphores.class,
            "rule18_6_mismatchedCount",
            "once every permit was released, a new count (1) was refused"),
        Arguments.of(
            Defect.SHARED_ONE_TTL,
            Semaphores.class,
            "rule18_3_permitsOfVanishedHoldersComeBack",
            "a permit must be freed by its lease when its holder is gone"),
        Arguments.of(
            Defect.SHARED_ONE_KEY,
            Semaphores.class,
            "rule18_7_resourcesOfOneNameAreSeparate",
            "they must be separate resources"),
        Arguments.of(
            Defect.SEM_OVER_GRANT,
            Semaphores.class,
            "rule18_7_resourcesOfOneNameAreSeparate",
            "before anything was released (an over-grant)"),
        Arguments.of(
            Defect.SEM_IDLE_RESETS_FENCE,
            Semaphores.class,
            "rule18_11_tokensIncreaseAcrossIdleSemaphores",
            "the semaphore's counter must outlive its last permit"),
        // 19. read-write locks
        Arguments.of(
            Defect.RW_READ_DURING_WRITE,
            ReadWriteLocks.class,
            "rule19_1_readersShareWritersExclude",
            "a reader was granted while a writer held the lock"),
        Arguments.of(
            Defect.RW_READ_DURING_WRITE,
            ReadWriteLocks.class,
            "rule19_2_mixedContention",
            "a write lease must exclude every other lease"),
        Arguments.of(
            Defect.RW_NO_WRITER_PREFERENCE,
            ReadWriteLocks.class,
            "rule19_3_noWriterStarvation",
            "a writer waiting behind a steady stream of overlapping readers never got the lock"),
        Arguments.of(
            Defect.RW_MARK_NEVER_EXPIRES,
            ReadWriteLocks.class,
            "rule19_7_vanishedWaitingWriterLetsReadersIn",
            "a waiting writer's mark must end by itself"),
        Arguments.of(
            Defect.RW_WITHDRAW_NO_WAKE,
            ReadWriteLocks.class,
            "rule19_8_withdrawnWriterLetsReadersIn",
            "a writer's withdrawal must end its mark and wake the readers"),
        Arguments.of(
            Defect.SHARED_RELEASE_COUNTED,
            ReadWriteLocks.class,
            "rule19_9_releasesAreOwnerChecked",
            "releases must be owner-checked per lease, not counted"),
        Arguments.of(
            Defect.RW_WRITE_DURING_READ,
            ReadWriteLocks.class,
            "rule19_1_readersShareWritersExclude",
            "a writer was granted while 2 readers held the lock"),
        Arguments.of(
            Defect.RW_SEPARATE_COUNTERS,
            ReadWriteLocks.class,
            "rule19_5_tokens",
            "a write token must be above every earlier lease's"),
        Arguments.of(
            Defect.RW_MARK_STAYS_AFTER_GRANT,
            ReadWriteLocks.class,
            "rule19_3_noWriterStarvation",
            "a writer's mark must go when it is granted"),
        Arguments.of(
            Defect.RW_RELEASE_NO_WAKE,
            ReadWriteLocks.class,
            "rule19_10_waitersAreWokenByARelease",
            "a release of either side must wake the read-write lock's waiters"),
        Arguments.of(
            Defect.RW_RENEW_MOVES_NOTHING,
            ReadWriteLocks.class,
            "rule19_12_renewedReaderHoldsBeyondTheLease",
            "a read lease's renewal must move its expiry on the server"),
        // wake-up per primitive: polling fast enough to pass the hand-off medians of 18.9 and 19.10
        Arguments.of(
            Defect.SEM_POLLS_20MS,
            Semaphores.class,
            "rule18_10_waiterDoesNotPoll",
            "semaphores broken: a PERMIT waiter polled"),
        Arguments.of(
            Defect.RW_POLLS_20MS,
            ReadWriteLocks.class,
            "rule19_11_waitersDoNotPoll",
            "read-write locks broken: a READ waiter polled"),
        // an over-grant caught where the wake-up rules set up their waiter, named as such
        Arguments.of(
            Defect.SEM_OVER_GRANT,
            Semaphores.class,
            "rule18_9_waiterIsWokenByARelease",
            "(an over-grant)"),
        // state reads at the expiry boundary
        Arguments.of(
            Defect.STATE_HIDES_MARGIN,
            StateReads.class,
            "rule16_6_stateAgreesWithAnAcquireAtTheLeasesEnd",
            "left: while a lock cannot be taken its remaining lease is the time until it can, above"
                + " zero"),
        Arguments.of(
            Defect.STATE_FREE_EARLY,
            StateReads.class,
            "rule16_6_stateAgreesWithAnAcquireAtTheLeasesEnd",
            "but a tryAcquire() right after that read was refused"),
        // 20. lock sets
        Arguments.of(
            Defect.TWO_HOLDERS,
            LockSets.class,
            "rule20_1_setsExcludePerName",
            "was granted to a single lock while a set held it"),
        Arguments.of(
            Defect.TWO_HOLDERS,
            LockSets.class,
            "rule20_2_oppositeOrdersNeverDeadlock",
            "held by two holders at once"),
        Arguments.of(
            Defect.RELEASE_LATE,
            LockSets.class,
            "rule20_3_nothingHeldAfterGivingUp",
            "was still held when the timed-out acquire of the set returned"),
        Arguments.of(
            Defect.TOKENS_GO_BACK, LockSets.class, "rule20_4_tokensPerName", "lock sets broken: "),
        Arguments.of(
            Defect.RENEW_REVIVES_FORGOTTEN,
            LockSets.class,
            "rule20_5_losingOneNameLosesTheSet",
            "was not reported lost"),
        Arguments.of(
            Defect.SETS_ONE_BY_ONE,
            LockSets.class,
            "rule20_6_aBusySetTakesNoneOfItsNames",
            "a busy set takes none of its names"),
        // 21. leader latches
        Arguments.of(
            Defect.TWO_HOLDERS,
            LeaderLatches.class,
            "rule21_1_oneLeaderAtATimeAndCloseHandsOver",
            "both lead at once"),
        Arguments.of(
            Defect.NEVER_WAKES,
            LeaderLatches.class,
            "rule21_1_oneLeaderAtATimeAndCloseHandsOver",
            "the hand-over waited"),
        Arguments.of(
            Defect.RENEW_NO_OWNER_CHECK,
            LeaderLatches.class,
            "rule21_2_aLostLeaseRevokesTheLeader",
            "was not told (onRevoked)"),
        Arguments.of(
            Defect.NEVER_WAKES,
            LeaderLatches.class,
            "rule21_3_resignHandsOverAndCampaignsAgain",
            "after the leader resigned, the waiting latch did not lead"),
        Arguments.of(
            Defect.BREAK_RESETS_FENCE,
            BreakGlass.class,
            "rule22_1_breakingIsSafe",
            "is not above the broken holder's"),
        Arguments.of(
            Defect.BREAK_WAKES_NOBODY,
            BreakGlass.class,
            "rule22_1_breakingIsSafe",
            "a break must wake the waiters as a release does"),
        Arguments.of(
            Defect.RENEW_NO_OWNER_CHECK,
            BreakGlass.class,
            "rule22_1_breakingIsSafe",
            "the broken holder was not told"),
        Arguments.of(
            Defect.LIST_STOPS_AT_FIRST_PAGE,
            Listing.class,
            "rule23_1_listingIsCompleteAndConsistent",
            "every held lock must be on some page"),
        Arguments.of(
            Defect.LIST_RENEWS,
            Listing.class,
            "rule23_2_listingRenewsNothing",
            "a listing must not renew what it lists"),
        Arguments.of(
            Defect.LIST_FIRST_HOLDER_ONLY,
            Listing.class,
            "rule23_3_listingShowsEverySemaphoreHolding",
            "every holding must be listed"),
        Arguments.of(
            Defect.LIST_READERS_AS_WRITER,
            Listing.class,
            "rule23_4_listingShowsReadersAndWriters",
            "was listed as WRITE, not READ"),
        // 24. elections
        Arguments.of(
            Defect.TWO_HOLDERS,
            Elections.class,
            "rule24_1_oneLeaderAtATimeAndResigningHandsOver",
            "two leaderships at once"),
        Arguments.of(
            Defect.NEVER_WAKES,
            Elections.class,
            "rule24_1_oneLeaderAtATimeAndResigningHandsOver",
            "the hand-over waited"),
        Arguments.of(
            Defect.STATE_TOKEN_LAGS,
            Elections.class,
            "rule24_1_oneLeaderAtATimeAndResigningHandsOver",
            "a lagging state read"),
        Arguments.of(
            Defect.WRONG_HOLDER,
            Elections.class,
            "rule24_1_oneLeaderAtATimeAndResigningHandsOver",
            "which is not the owner id the client gave the backend"),
        Arguments.of(
            Defect.STALE_STATE,
            Elections.class,
            "rule24_1_oneLeaderAtATimeAndResigningHandsOver",
            "after the last leader resigned, leader() still read a leader"),
        Arguments.of(
            Defect.STALE_STATE,
            Elections.class,
            "rule24_2_observersSeeEachLeaderInOrder",
            "the observer was not told 'no leader'"),
        Arguments.of(
            Defect.STATE_TOKEN_LAGS,
            Elections.class,
            "rule24_2_observersSeeEachLeaderInOrder",
            "a lagging state read"),
        Arguments.of(
            Defect.STATE_FREE_WHEN_UNRENEWED,
            Elections.class,
            "rule24_3_aCrashedLeaderStaysReadableUntilItsLeaseEnds",
            "a crashed leader must be read until its lease ends"),
        Arguments.of(
            Defect.WRONG_HOLDER,
            Elections.class,
            "rule24_3_aCrashedLeaderStaysReadableUntilItsLeaseEnds",
            "which is not the owner id the crashed leader's client gave the backend"),
        Arguments.of(
            Defect.WATCH_NEVER_CALLED,
            Elections.class,
            "rule24_4_holderWatchesAreCalled",
            "holder watch was not called once in place"),
        Arguments.of(
            Defect.WATCH_MISSES_GRANTS,
            Elections.class,
            "rule24_4_holderWatchesAreCalled",
            "says it sees grants, but was not called"),
        Arguments.of(
            Defect.WATCH_CALLED_AFTER_CLOSE,
            Elections.class,
            "rule24_4_holderWatchesAreCalled",
            "a closed holder watch was still called"));
  }

  @org.junit.jupiter.api.Test
  @DisplayName(
      "a session backend whose grants carry a bound from the start passes the rule the unbounded"
          + " one fails")
  void boundedSessionGrantPasses() {
    MemoryKit.defect = Defect.SESSION_BOUNDED;
    Events tests;
    try {
      tests =
          EngineTestKit.engine("junit-jupiter")
              .selectors(
                  selectNestedMethod(
                      List.of(MemoryKit.class),
                      LossDetection.class,
                      "rule14_3_unreachableServerIsSignalled"))
              .execute()
              .testEvents();
    } finally {
      MemoryKit.defect = Defect.NONE;
    }
    assertThat(tests.succeeded().count())
        .as(
            "rule 14.3 passed by a session backend that bounds its grants; failures: %s",
            tests.failed().list())
        .isEqualTo(1);
  }

  @org.junit.jupiter.api.Test
  @DisplayName(
      "a backend whose readers holding together share one token passes rule 19.9 (its stale release"
          + " is the right lease's)")
  void readersSharingATokenPass() {
    MemoryKit.defect = Defect.RW_READERS_SHARE_TOKEN;
    Events tests;
    try {
      tests =
          EngineTestKit.engine("junit-jupiter")
              .selectors(
                  selectNestedMethod(
                      List.of(MemoryKit.class),
                      ReadWriteLocks.class,
                      "rule19_9_releasesAreOwnerChecked"))
              .execute()
              .testEvents();
    } finally {
      MemoryKit.defect = Defect.NONE;
    }
    assertThat(tests.succeeded().count())
        .as(
            "rule 19.9 passed by a backend whose readers share a token; failures: %s",
            tests.failed().list())
        .isEqualTo(1);
  }

  @ParameterizedTest(name = "{0} fails {2} with \"{3}\"")
  @MethodSource("cases")
  @DisplayName(
      "the kit fails a broken backend by the rule meant for its defect, with a message that says"
          + " what broke")
  void kitCatchesDefect(Defect defect, Class<?> group, String rule, String expected) {
    MemoryKit.defect = defect;
    Events tests;
    try {
      tests =
          EngineTestKit.engine("junit-jupiter")
              .selectors(selectNestedMethod(List.of(MemoryKit.class), group, rule))
              .execute()
              .testEvents();
    } finally {
      MemoryKit.defect = Defect.NONE;
    }
    List<String> failures =
        tests.failed().stream()
            .map(
                e ->
                    e.getPayload(TestExecutionResult.class)
                        .flatMap(TestExecutionResult::getThrowable)
                        .map(Throwable::getMessage)
                        .orElse(""))
            .collect(Collectors.toList());
    assertThat(tests.started().count())
        .as("rule %s ran against the backend with defect %s", rule, defect)
        .isEqualTo(1);
    assertThat(tests.skipped().count())
        .as("rule %s skipped against defect %s", rule, defect)
        .isZero();
    assertThat(failures)
        .as("failure of %s against the backend with defect %s", rule, defect)
        .hasSize(1);
    assertThat(failures.get(0))
        .as("failure message of %s against defect %s", rule, defect)
        .contains(expected);
  }
}
