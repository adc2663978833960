package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.spi.Abandonable;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 17: lease control, as tests: the rules of this group in {@code RULES.md}. The kit's
 * {@code @Nested} class {@link LockCompatibilityKit.LeaseControl} runs them against the backend
 * under test.
 */
interface LeaseControlRules extends KitRules {
  private LockOptions unrenewed(Duration lease) {
    return LockOptions.builder().lease(lease).autoRenew(false).reentrant(true).build();
  }

  @Test
  @DisplayName(
      "17.1 MUST: extend() to a longer lease keeps the lock past its old expiry, and a release"
          + " still frees it at once")
  default void rule17_1_extendLonger() throws Exception {
    requireFeature(Feature.EXTEND, "17.1");
    String name = name("extend-longer");
    Duration lease = limits().lease();
    Lease held = client(unrenewed(lease)).lock(name).acquire(Duration.ofSeconds(10));
    long granted = System.nanoTime();
    Thread.sleep(lease.dividedBy(2).toMillis());
    assertThat(held.extend(lease.multipliedBy(4)))
        .as("lease control broken: extend() of a lease held for half its lease")
        .isTrue();
    // watch well past the old expiry, and past the slack a vanished holder would get
    Duration watch =
        lease.plus(lease).plus(lease.dividedBy(2)).minusNanos(System.nanoTime() - granted);
    Optional<Lease> intruder = client().lock(name).tryAcquire(watch);
    assertThat(intruder)
        .withFailMessage(
            "lease control broken: another client got the lock %d ms after the grant, although"
                + " extend(%d ms) at %d ms had moved its expiry to %d ms: the server's expiry did"
                + " not move",
            ms(System.nanoTime() - granted),
            lease.multipliedBy(4).toMillis(),
            lease.dividedBy(2).toMillis(),
            lease.multipliedBy(4).plus(lease.dividedBy(2)).toMillis())
        .isEmpty();
    assertThat(held.isValid())
        .as("lease control broken: isValid() of an extended lease within its new expiry")
        .isTrue();
    assertThat(held.release()).as("lease control broken: release() of an extended lease").isTrue();
    assertThat(client().lock(name).tryAcquire(limits().tolerance()))
        .as("the lock after the extended lease was released")
        .isPresent();
  }

  @Test
  @DisplayName(
      "17.2 MUST: extend() to a shorter lease frees the lock at the new expiry, not sooner and"
          + " not much later")
  default void rule17_2_extendShorter() throws Exception {
    requireFeature(Feature.EXTEND, "17.2");
    String name = name("extend-shorter");
    Duration shorter = limits().lease().multipliedBy(5).dividedBy(4);
    Duration soon = limits().tolerance().dividedBy(4);
    Lease held =
        client(unrenewed(limits().lease().multipliedBy(20)))
            .lock(name)
            .acquire(Duration.ofSeconds(10));
    LockClient watcher = client();
    long asked = System.nanoTime();
    assertThat(held.extend(shorter))
        .as("lease control broken: extend() to a shorter lease")
        .isTrue();
    long answered = System.nanoTime();
    Optional<Lease> next =
        watcher
            .lock(name)
            .tryAcquire(shorter.plus(limits().tolerance()).plus(limits().tolerance()));
    long got = System.nanoTime();
    assertThat(next)
        .withFailMessage(
            "lease control broken: a lease shortened to %d ms still held the lock after %d ms: "
                + "extend() must move the server's expiry both ways",
            shorter.toMillis(), ms(got - answered))
        .isPresent();
    assertThat(ms(got - asked))
        .withFailMessage(
            "lease control broken: the lock was free %d ms after extend(%d ms) was called: "
                + "the server ended it early",
            ms(got - asked), shorter.toMillis())
        .isGreaterThanOrEqualTo(shorter.toMillis() - 15);
    assertThat(ms(got - answered))
        .withFailMessage(
            "lease control broken: a lease shortened to %d ms was free only %d ms after "
                + "extend() returned (bound: + %d ms)",
            shorter.toMillis(), ms(got - answered), soon.toMillis())
        .isLessThanOrEqualTo(shorter.plus(soon).toMillis());
    assertThat(held.isValid())
        .as("isValid() of the shortened lease after its new expiry")
        .isFalse();
  }

  @Test
  @DisplayName(
      "17.3 MUST: extend() of a released lease, or of one the server gave to another client,"
          + " answers false and leaves the new holder's expiry alone")
  default void rule17_3_extendOfALeaseNoLongerOurs() throws Exception {
    requireFeature(Feature.EXTEND, "17.3");
    String name = name("extend-released");
    Lease released = client(unrenewed(limits().lease())).lock(name).acquire(Duration.ofSeconds(10));
    assertThat(released.release()).isTrue();
    assertThat(released.extend(Duration.ofSeconds(30)))
        .as("lease control broken: extend() after release()")
        .isFalse();

    // a long lease without renewal: the client believes it holds the lock throughout, so its
    // extend
    // reaches the server and only the server's owner check protects the new holder
    String taken = name("extend-taken");
    Lease stale = client(longLease()).lock(taken).acquire(Duration.ofSeconds(10));
    hook("17.3", () -> faults().revoke(taken));
    Lease taker = client(unrenewed(limits().lease())).lock(taken).acquire(Duration.ofSeconds(10));
    long takenAt = System.nanoTime();
    assertThat(stale.extend(Duration.ofSeconds(30)))
        .withFailMessage(
            "lease control broken: extend() by a holder whose lock the server had given to"
                + " another client answered true: extend must check the owner on the server")
        .isFalse();
    assertThat(taker.isValid())
        .as("ownership broken: the taker's lease after the old holder's extend()")
        .isTrue();
    // the failed extend must not have moved the taker's expiry: a third client gets the lock when
    // the taker's lease ends
    Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
    Optional<Lease> third =
        client()
            .lock(taken)
            .tryAcquire(bound.plus(limits().tolerance()).minusNanos(System.nanoTime() - takenAt));
    assertThat(third)
        .withFailMessage(
            "lease control broken: the taker's lease of %d ms without renewal still held the lock"
                + " %d ms after it was taken: the old holder's extend() moved someone else's"
                + " expiry",
            limits().lease().toMillis(), ms(System.nanoTime() - takenAt))
        .isPresent();
    assertThat(ms(System.nanoTime() - takenAt))
        .as("ms until the taker's lease ended")
        .isLessThanOrEqualTo(bound.toMillis());
  }

  @Test
  @DisplayName(
      "17.4 MUST: extend() of an auto-renewed lease and bad durations throw at once, changing"
          + " nothing")
  default void rule17_4_extendMisuse() throws Exception {
    requireFeature(Feature.EXTEND, "17.4");
    String name = name("extend-misuse");
    Lease renewed = client().lock(name).acquire(Duration.ofSeconds(10));
    assertThatThrownBy(() -> renewed.extend(Duration.ofSeconds(5)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(name);
    Lease unrenewed =
        client(unrenewed(limits().lease().multipliedBy(10)))
            .lock(name("extend-args"))
            .acquire(Duration.ofSeconds(10));
    assertThatThrownBy(() -> unrenewed.extend(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`lease`");
    assertThatThrownBy(() -> unrenewed.extend(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`lease`");
    assertThatThrownBy(() -> unrenewed.extend(Duration.ofDays(8)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`lease`");
    assertThatThrownBy(() -> unrenewed.releaseAfter(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`keep`");
    assertThatThrownBy(() -> unrenewed.releaseAfter(Duration.ofDays(8)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`keep`");
    assertThat(renewed.isValid() && unrenewed.isValid())
        .as("both leases after the refused calls")
        .isTrue();
    assertThat(renewed.release() && unrenewed.release())
        .as("both leases released after the refused calls")
        .isTrue();
  }

  /**
   * Takes {@code name}, gives it up with a hold of {@code keep}, and returns [asked, answered] in
   * nanos.
   */
  private long[] holdAfterRelease(LockClient holder, String name, Duration keep) throws Exception {
    Lease lease = holder.lock(name).acquire(Duration.ofSeconds(10));
    long asked = System.nanoTime();
    assertThat(lease.releaseAfter(keep))
        .as("lease control broken: releaseAfter() of a lease just taken")
        .isTrue();
    long answered = System.nanoTime();
    assertThat(lease.isValid()).as("isValid() after releaseAfter()").isFalse();
    assertThat(lease.release()).as("release() after releaseAfter()").isFalse();
    return new long[] {asked, answered};
  }

  private void assertHeldUntil(String name, Duration keep, long[] at, Duration late, String how)
      throws Exception {
    Optional<Lease> next =
        client().lock(name).tryAcquire(keep.plus(late).plus(limits().tolerance()));
    long got = System.nanoTime();
    assertThat(next)
        .withFailMessage(
            "lease control broken: a hold of %d ms after release (%s) still held the lock %d ms"
                + " later",
            keep.toMillis(), how, ms(got - at[1]))
        .isPresent();
    assertThat(ms(got - at[0]))
        .withFailMessage(
            "lease control broken: a hold of %d ms after release (%s) let another client "
                + "take the lock after only %d ms",
            keep.toMillis(), how, ms(got - at[0]))
        .isGreaterThanOrEqualTo(keep.toMillis() - 15);
    assertThat(ms(got - at[1]))
        .withFailMessage(
            "lease control broken: a hold of %d ms after release (%s) was free only %d ms "
                + "later (bound: + %d ms)",
            keep.toMillis(), how, ms(got - at[1]), late.toMillis())
        .isLessThanOrEqualTo(keep.plus(late).toMillis());
  }

  @Test
  @DisplayName(
      "17.5 MUST: releaseAfter(keep) keeps the lock held until keep, then frees it by itself")
  default void rule17_5_holdAfterRelease() throws Exception {
    requireFeature(Feature.HOLD_AFTER_RELEASE, "17.5");
    String name = name("hold");
    Duration keep = limits().lease().multipliedBy(5).dividedBy(4);
    long[] at = holdAfterRelease(client(unrenewed(limits().lease().multipliedBy(10))), name, keep);
    assertHeldUntil(name, keep, at, limits().tolerance().dividedBy(4), "holder alive");
  }

  @Test
  @DisplayName("17.6 MUST: a hold after release survives closing the holder's client")
  default void rule17_6_holdSurvivesClose() throws Exception {
    requireFeature(Feature.HOLD_AFTER_RELEASE, "17.6");
    String name = name("hold-close");
    Duration keep = limits().lease().multipliedBy(2);
    LockClient holder = client();
    long[] at = holdAfterRelease(holder, name, keep);
    holder.close();
    assertHeldUntil(
        name,
        keep,
        at,
        limits().expirySlack().plus(limits().tolerance()),
        "holder's client closed");
  }

  @Test
  @DisplayName(
      "17.7 MUST: a hold after release survives the holder vanishing (abandon: nothing released,"
          + " connections dropped)")
  default void rule17_7_holdSurvivesAbandon() throws Exception {
    requireFeature(Feature.HOLD_AFTER_RELEASE, "17.7");
    String name = name("hold-abandon");
    Duration keep = limits().lease().multipliedBy(2);
    LockClient holder = client();
    long[] at = holdAfterRelease(holder, name, keep);
    ((Abandonable) holder).abandon();
    assertHeldUntil(
        name, keep, at, limits().expirySlack().plus(limits().tolerance()), "holder abandoned");
  }

  @Test
  @DisplayName("17.8 MUST: a hold after release survives SIGKILL of the holding process")
  default void rule17_8_holdSurvivesKill() throws Exception {
    requireFeature(Feature.HOLD_AFTER_RELEASE, "17.8");
    requireFeature(Feature.SHARED_ACROSS_PROCESSES, "17.8");
    String name = name("hold-killed");
    Duration keep = limits().lease().multipliedBy(3);
    Process child = holdInChild(name, Long.toString(keep.toMillis()));
    long seen = System.nanoTime();
    child.destroyForcibly();
    assertThat(child.waitFor(10, TimeUnit.SECONDS)).as("child exited after SIGKILL").isTrue();
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage(
            "lease control broken: the hold of %d ms a process set before it "
                + "was killed was gone %d ms later",
            keep.toMillis(), ms(System.nanoTime() - seen))
        .isEmpty();
    Duration late = limits().expirySlack().plus(limits().tolerance());
    Optional<Lease> next =
        client().lock(name).tryAcquire(keep.plus(late).plus(limits().tolerance()));
    assertThat(next)
        .withFailMessage(
            "lease control broken: the hold of %d ms of a killed process still held the lock %d"
                + " ms later",
            keep.toMillis(), ms(System.nanoTime() - seen))
        .isPresent();
    assertThat(ms(System.nanoTime() - seen))
        .as("ms until the killed process's hold ended")
        .isLessThanOrEqualTo(keep.plus(late).toMillis());
  }

  @Test
  @DisplayName(
      "17.9 MUST: a lease without auto-renew whose holder vanishes is ended by the server at its"
          + " expiry, not at a session's end")
  default void rule17_9_unrenewedLeaseOfAVanishedHolderEndsOnTheServer() throws Exception {
    requireFeature(Feature.EXTEND, "17.9");
    String name = name("unrenewed-vanished");
    LockClient holder = client(expiring());
    holder.lock(name).acquire(Duration.ofSeconds(10));
    long start = System.nanoTime();
    ((Abandonable) holder).abandon();
    Duration slack =
        limits().expirySlack().compareTo(Duration.ofSeconds(2)) < 0
            ? limits().expirySlack()
            : Duration.ofSeconds(2);
    Duration bound = limits().lease().plus(slack).plus(limits().tolerance());
    Optional<Lease> next = client().lock(name).tryAcquire(bound.plus(limits().tolerance()));
    assertThat(next)
        .withFailMessage(
            "lease control broken: a lease of %d ms without renewal whose holder vanished still"
                + " held the lock %d ms later: the server must end it at its expiry, not when a"
                + " session times out",
            limits().lease().toMillis(), ms(System.nanoTime() - start))
        .isPresent();
    assertThat(ms(System.nanoTime() - start))
        .as(
            "ms until a vanished holder's unrenewed lease ended (bound: lease + %d ms slack + "
                + "tolerance)",
            slack.toMillis())
        .isLessThanOrEqualTo(bound.toMillis());
  }

  @Test
  @DisplayName(
      "17.10 MUST: releaseAfter() of a lease the server gave to another client answers false and"
          + " puts no hold on the new holder's lock")
  default void rule17_10_holdOfALeaseNoLongerOurs() throws Exception {
    requireFeature(Feature.HOLD_AFTER_RELEASE, "17.10");
    String name = name("hold-foreign");
    Lease stale = client(longLease()).lock(name).acquire(Duration.ofSeconds(10));
    hook("17.10", () -> faults().revoke(name));
    Lease taker = client().lock(name).acquire(Duration.ofSeconds(10));
    assertThat(stale.releaseAfter(Duration.ofSeconds(30)))
        .withFailMessage(
            "lease control broken: releaseAfter() by a holder whose lock the server had given to"
                + " another client answered true: it must check the owner on the server")
        .isFalse();
    assertThat(taker.isValid())
        .as("ownership broken: the taker's lease after the old holder's releaseAfter()")
        .isTrue();
    assertThat(taker.release())
        .as("ownership broken: the taker's release after the old holder's releaseAfter()")
        .isTrue();
    assertThat(client().lock(name).tryAcquire(limits().tolerance()))
        .withFailMessage(
            "lease control broken: the taker released the lock, but it stayed held: the old"
                + " holder's releaseAfter() put a hold on a lock that was no longer its own")
        .isPresent();
  }

  @Test
  @DisplayName(
      "17.11 MUST: releaseAfter() of a lock held twice by one thread throws and keeps it held;"
          + " releaseAfter(0) is release()")
  default void rule17_11_holdMisuse() throws Exception {
    requireFeature(Feature.HOLD_AFTER_RELEASE, "17.11");
    String name = name("hold-reentrant");
    DistributedLock lock = client().lock(name);
    Lease outer = lock.acquire(Duration.ofSeconds(10));
    Lease inner = lock.acquire(Duration.ofSeconds(10));
    assertThatThrownBy(() -> inner.releaseAfter(Duration.ofSeconds(5)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(name);
    assertThat(client().lock(name).tryAcquire())
        .as("the lock after a refused releaseAfter()")
        .isEmpty();
    assertThat(inner.release())
        .as("the inner holding's release after the refused releaseAfter()")
        .isTrue();
    assertThat(outer.releaseAfter(Duration.ZERO))
        .as("releaseAfter(0) of the last holding")
        .isTrue();
    assertThat(client().lock(name).tryAcquire(limits().tolerance()))
        .as("the lock after releaseAfter(0)")
        .isPresent();
  }

  @Test
  @DisplayName(
      "17.12 MUST: extend() of a lease that ran out on the server, with nobody holding the lock"
          + " since, answers false and does not bring it back")
  default void rule17_12_extendOfAnExpiredLease() throws Exception {
    requireFeature(Feature.EXTEND, "17.12");
    String name = name("extend-expired");
    Lease lapsed = client(expiring()).lock(name).acquire(Duration.ofSeconds(10));
    long granted = System.nanoTime();
    BackendLease sent = granted(name, Claim.Kind.EXCLUSIVE, lapsed);
    // past the bound by which every backend has ended an unrenewed lease (rule 3.1); nobody asks
    // for the lock meanwhile
    Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
    Thread.sleep(Math.max(0, bound.toMillis() - ms(System.nanoTime() - granted)));
    Duration asked = limits().lease().multipliedBy(30);
    assertThat(lapsed.extend(asked))
        .as("lease control broken: extend() of a lease past its lease")
        .isFalse();
    // the core asks the server only while its own clock says the lease is valid: this is an
    // extend sent in time and
    // delivered late (a delayed or repeated request), so only the server's own check decides
    boolean answered;
    try {
      answered = probe().extendAgain(sent, asked);
    } catch (RuntimeException e) {
      answered =
          false; // refused: the next client's tryAcquire() below tells whether it moved anything
    }
    long sentAt = System.nanoTime();
    assertThat(answered)
        .withFailMessage(
            "lease control broken: extend(%d ms) of a lease of %d ms without renewal, reaching"
                + " the server %d ms after the grant (the lease had run out and nobody had taken"
                + " the lock since), answered true: the server's extend must check the lease's"
                + " expiry as well as its owner, or it brings an expired lease back to life",
            asked.toMillis(), limits().lease().toMillis(), ms(sentAt - granted))
        .isFalse();
    Optional<Lease> next = client().lock(name).tryAcquire(limits().tolerance());
    assertThat(next)
        .withFailMessage(
            "lease control broken: after an extend(%d ms) of a lease that had run out %d ms"
                + " before (answered false), another client could not take the lock within %d ms:"
                + " the extend brought the expired lease back on the server",
            asked.toMillis(),
            ms(sentAt - granted) - limits().lease().toMillis(),
            limits().tolerance().toMillis())
        .isPresent();
    next.get().release();
  }

  @Test
  @DisplayName(
      "17.13 MUST: releaseAfter(keep) called a while after the grant keeps the lock held until"
          + " keep after the call")
  default void rule17_13_holdCountsFromTheCall() throws Exception {
    requireFeature(Feature.HOLD_AFTER_RELEASE, "17.13");
    String name = name("hold-late");
    Duration keep = limits().lease().multipliedBy(5).dividedBy(4);
    Duration before = limits().lease().dividedBy(2);
    Lease lease =
        client(unrenewed(limits().lease().multipliedBy(10)))
            .lock(name)
            .acquire(Duration.ofSeconds(10));
    long granted = System.nanoTime();
    Thread.sleep(before.toMillis());
    long asked = System.nanoTime();
    assertThat(lease.releaseAfter(keep))
        .as("lease control broken: releaseAfter() of a lease held for %d ms", before.toMillis())
        .isTrue();
    long answered = System.nanoTime();
    Duration late = limits().tolerance().dividedBy(4);
    Optional<Lease> next =
        client().lock(name).tryAcquire(keep.plus(late).plus(limits().tolerance()));
    long got = System.nanoTime();
    assertThat(next)
        .withFailMessage(
            "lease control broken: a hold of %d ms after release, set %d ms after the grant,"
                + " still held the lock %d ms after the call",
            keep.toMillis(), ms(asked - granted), ms(got - answered))
        .isPresent();
    next.get().release();
    assertThat(ms(got - asked))
        .withFailMessage(
            "lease control broken: releaseAfter(%d ms), called %d ms after the grant, let another"
                + " client take the lock %d ms after the call (%d ms after the grant): keep must"
                + " count from the releaseAfter() call, not from the grant",
            keep.toMillis(), ms(asked - granted), ms(got - asked), ms(got - granted))
        .isGreaterThanOrEqualTo(keep.toMillis() - 15);
    assertThat(ms(got - answered))
        .withFailMessage(
            "lease control broken: a hold of %d ms after release, set %d ms after the "
                + "grant, was free only %d ms after the call returned (bound: + %d ms)",
            keep.toMillis(), ms(asked - granted), ms(got - answered), late.toMillis())
        .isLessThanOrEqualTo(keep.plus(late).toMillis());
  }

  @Test
  @DisplayName(
      "17.14 MUST: the holder after an extended lease is released gets a greater token than the"
          + " extended lease's")
  default void rule17_14_tokensIncreaseAfterAnExtend() throws Exception {
    requireFeature(Feature.EXTEND, "17.14");
    requireFeature(Feature.FENCING, "17.14");
    String name = name("extend-fence");
    LockClient holder = client(unrenewed(limits().lease().multipliedBy(10)));
    for (int i = 0; i < 2; i++) {
      assertThat(holder.lock(name).acquire(Duration.ofSeconds(10)).release())
          .as("a release before the extended lease")
          .isTrue();
    }
    Lease extended = holder.lock(name).acquire(Duration.ofSeconds(10));
    assertThat(extended.extend(limits().lease().multipliedBy(20)))
        .as("lease control broken: extend() of a lease just taken")
        .isTrue();
    assertThat(extended.release()).as("release() of the extended lease").isTrue();
    Lease next = client().lock(name).acquire(Duration.ofSeconds(10));
    long token = next.fencingToken();
    next.release();
    if (token <= extended.fencingToken()) {
      fail(
          "fencing broken: the holder after an extended lease (token "
              + extended.fencingToken()
              + ") was released got token "
              + token
              + ": an extend must keep the lock's fence counter (a write that creates the lock's"
              + " record anew resets it), so that every later holder's token is above every"
              + " earlier one's");
    }
  }
}
