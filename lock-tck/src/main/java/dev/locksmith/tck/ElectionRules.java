package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.Election;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.LockTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 24: elections ({@code client.election(name)}: campaign, leader, observe), as tests: the
 * rules of this group in {@code RULES.md}. The kit's {@code @Nested} class {@link
 * LockCompatibilityKit.Elections} runs them against the backend under test. An election is built on
 * the client's exclusive lock, so every backend has one; these rules check the election and the
 * backend together.
 */
interface ElectionRules extends KitRules {

  /** Leases far longer than any hand-over these rules allow, renewed. */
  private static LockOptions longRenewed() {
    return LockOptions.builder().lease(Duration.ofSeconds(60)).autoRenew(true).build();
  }

  /** Campaigns in the background; the future completes with the leadership, or its failure. */
  private CompletableFuture<Election.Leadership> campaigning(
      Election election, String identity, List<Election.Leadership> toClose) {
    CompletableFuture<Election.Leadership> f = new CompletableFuture<>();
    background(
        "campaign-" + identity,
        () -> {
          try {
            Election.Leadership l = election.campaign(identity, Duration.ofSeconds(60));
            toClose.add(l);
            f.complete(l);
          } catch (Throwable t) {
            f.completeExceptionally(t);
          }
        });
    return f;
  }

  /** The bound for a hand-over after a resignation: never the lease. */
  private Duration handOver(boolean notified, LockClient probe) {
    Duration d = limits().wakeUp().plus(limits().tolerance()).plus(limits().tolerance());
    return notified ? d : d.plus(probe.config().recheck());
  }

  /** Checks a state read of the election against the leadership that holds it. */
  private void assertLeaderIs(
      Election reader, Election.Leadership leading, boolean fencing, String when) {
    Optional<Election.Leader> read = reader.leader();
    if (read.isEmpty()) {
      fail(
          "elections broken: %s, leader() read no leader while '%s' led (term %d)",
          when, leading.identity(), leading.term());
    }
    Election.Leader l = read.get();
    if (l.identity().isPresent() && !l.identity().get().equals(leading.identity())) {
      fail(
          "elections broken: %s, leader() named '%s' but '%s' leads (a stale or wrong holder read)",
          when, l.identity().get(), leading.identity());
    }
    if (l.holder().isEmpty() && l.state().holder().isPresent()) {
      fail(
          "elections broken: %s, leader() read the holder '%s', which is not the owner id the"
              + " client gave the backend (it must be stored and read back as given)",
          when, l.state().holder().get());
    }
    if (fencing && l.term().isPresent() && l.term().getAsLong() != leading.term()) {
      fail(
          "elections broken: %s, leader() read term %d but the leader's term is %d (a lagging"
              + " state read)",
          when, l.term().getAsLong(), leading.term());
    }
  }

  @Test
  @DisplayName(
      "24.1 MUST: campaigns of three clients lead one at a time, each term above the last;"
          + " leader() names the leader and its term (STATE_READS); a resignation hands over"
          + " within the wake-up bound, not at the lease's end")
  default void rule24_1_oneLeaderAtATimeAndResigningHandsOver() throws Exception {
    String name = name("election");
    LockClient probe = client();
    boolean fencing = probe.guarantees().has(Feature.FENCING);
    boolean reads = probe.guarantees().has(Feature.STATE_READS);
    // a backend that wakes waiters on a release gets waiters that poll only every 30 s, so that a
    // hand-over by a poll is caught too; one that polls keeps its own recheck, and the bound has it
    boolean notified = probe.guarantees().has(Feature.NOTIFIED_WAKEUP);
    Duration recheck = notified ? Duration.ofSeconds(30) : null;
    long bound = handOver(notified, probe).toNanos();
    Election reader = client().election(name);
    List<Election.Leadership> toClose = new CopyOnWriteArrayList<>();
    try {
      Election first = client(longRenewed(), recheck).election(name);
      Election.Leadership leading;
      try {
        leading = first.campaign("kit-a", Duration.ofSeconds(10));
      } catch (LockTimeoutException e) {
        throw new AssertionError(
            "elections broken: a campaign in an election nobody led did not lead within 10 s", e);
      }
      toClose.add(leading);
      List<String> ids = new ArrayList<>(List.of("kit-b", "kit-c"));
      List<CompletableFuture<Election.Leadership>> waiting = new ArrayList<>();
      for (String id : ids) {
        waiting.add(campaigning(client(longRenewed(), recheck).election(name), id, toClose));
      }
      Thread.sleep(limits().tolerance().toMillis()); // both campaign, queued behind the leader
      long lastTerm = leading.term();
      for (int round = 0; round < 3; round++) {
        for (int i = 0; i < waiting.size(); i++) {
          if (waiting.get(i).isDone()) {
            fail(
                "elections broken: '%s' was elected while '%s' led (term %d): two leaderships at"
                    + " once",
                ids.get(i), leading.identity(), leading.term());
          }
        }
        if (reads) {
          assertLeaderIs(reader, leading, fencing, "in term " + (round + 1));
        }
        if (!leading.isValid()) {
          fail(
              "elections broken: '%s' lost its leadership with a 60 s renewed lease",
              leading.identity());
        }
        if (!leading.resign()) {
          fail(
              "elections broken: '%s' resigned a leadership it held, and resign() answered false",
              leading.identity());
        }
        if (round == 2) {
          break;
        }
        long from = System.nanoTime();
        int next = -1;
        while (next < 0) {
          for (int i = 0; i < waiting.size(); i++) {
            if (waiting.get(i).isDone()) {
              next = i;
            }
          }
          if (next < 0 && System.nanoTime() - from > bound) {
            fail(
                "elections broken: after '%s' resigned, no campaigner led within %d ms (wake-up"
                    + " bound + 2 tolerances%s; leases are 60 s): the hand-over waited, for a poll"
                    + " or for the lease",
                leading.identity(),
                TimeUnit.NANOSECONDS.toMillis(bound),
                notified ? "" : " + the recheck interval");
          }
          Thread.sleep(1);
        }
        leading = waiting.remove(next).join();
        ids.remove(next);
        if (fencing && leading.term() <= lastTerm) {
          fail(
              "elections broken: term %d of '%s' came after term %d (terms must rise: the term is"
                  + " the lock's fencing token)",
              leading.term(), leading.identity(), lastTerm);
        }
        lastTerm = leading.term();
      }
      if (reads) {
        await(
            limits().tolerance(),
            "elections broken: after the last leader resigned, leader() still read a leader",
            () -> reader.leader().isEmpty());
      }
    } finally {
      toClose.forEach(Election.Leadership::close);
    }
  }

  @Test
  @DisplayName(
      "24.2 MUST (STATE_READS): an observer is told no leader, then each leader once, in term"
          + " order, within the observe interval and a tolerance, then no leader")
  default void rule24_2_observersSeeEachLeaderInOrder() throws Exception {
    requireFeature(Feature.STATE_READS, "24.2");
    String name = name("observed");
    LockClient probe = client();
    boolean fencing = probe.guarantees().has(Feature.FENCING);
    List<Optional<Election.Leader>> seen = new CopyOnWriteArrayList<>();
    Duration within = Election.OBSERVE_EVERY.plus(limits().tolerance()).plus(limits().tolerance());
    Election campaigner = client(longRenewed()).election(name);
    List<Election.Leadership> terms = new ArrayList<>();
    try (Election.Observation o = client().election(name).observe(seen::add)) {
      await(
          within,
          "elections broken: an observer of an election nobody led was not told 'no leader'",
          () -> !seen.isEmpty());
      if (seen.get(0).isPresent()) {
        fail(
            "elections broken: an observer of an election nobody led was told %s leads",
            seen.get(0).get());
      }
      for (String id : List.of("kit-a", "kit-b", "kit-c")) {
        // counted before the campaign: an observer told by the backend's watch may hear of the
        // grant before the campaign returns
        int before = seen.size();
        Election.Leadership l = campaigner.campaign(id, Duration.ofSeconds(10));
        terms.add(l);
        await(
            within,
            "elections broken: the observer was not told that '" + id + "' leads",
            () -> seen.size() > before && seen.get(seen.size() - 1).isPresent());
        Election.Leader told = seen.get(seen.size() - 1).get();
        if (!told.identity().orElse(id).equals(id)) {
          fail(
              "elections broken: '%s' leads but the observer was told '%s'",
              id, told.identity().get());
        }
        if (fencing && told.term().isPresent() && told.term().getAsLong() != l.term()) {
          fail(
              "elections broken: '%s' leads in term %d but the observer was told term %d (a"
                  + " lagging state read)",
              id, l.term(), told.term().getAsLong());
        }
        Thread.sleep(3 * Election.OBSERVE_EVERY.toMillis()); // several reads of the same leader
        if (seen.size() != before + 1) {
          fail(
              "elections broken: the observer was told %d times while '%s' led, not once: %s",
              seen.size() - before, id, seen.subList(before, seen.size()));
        }
        l.resign();
        await(
            within,
            "elections broken: after '" + id + "' resigned, the observer was not told 'no leader'",
            () -> seen.get(seen.size() - 1).isEmpty());
      }
    } finally {
      terms.forEach(Election.Leadership::close);
    }
    long last = Long.MIN_VALUE;
    for (Optional<Election.Leader> s : seen) {
      if (s.isPresent() && s.get().term().isPresent() && fencing) {
        if (s.get().term().getAsLong() <= last) {
          fail("elections broken: the observer was told terms out of order: %s", seen);
        }
        last = s.get().term().getAsLong();
      }
    }
  }

  @Test
  @DisplayName(
      "24.3 MUST (STATE_READS): a leader that stops renewing, as a crashed one, stays the leader,"
          + " read with its process and term, until its lease ends; then a campaign leads with a"
          + " higher term")
  default void rule24_3_aCrashedLeaderStaysReadableUntilItsLeaseEnds() throws Exception {
    requireFeature(Feature.STATE_READS, "24.3");
    String name = name("crashed-leader");
    boolean fencing = guarantees().has(Feature.FENCING);
    Election reader = client().election(name);
    // the crashed leader: it holds the election's lock and never renews nor releases it
    long asked = System.nanoTime();
    Lease crashed = client(expiring()).lock(name).acquire(Duration.ofSeconds(10));
    long granted = System.nanoTime();
    long term = crashed.fencingToken();
    long lease = expiring().lease().toNanos();
    long bound = lease + limits().expirySlack().plus(limits().tolerance()).toNanos();
    long me = ProcessHandle.current().pid();
    while (true) {
      Optional<Election.Leader> read = reader.leader();
      long at = System.nanoTime(); // the read was served before this: free then means expired
      if (read.isEmpty()) {
        // the lease began no earlier than the acquire was asked, so it ends no earlier than a
        // lease after that (less 25 ms for clocks that tick a little apart)
        if (at - asked < lease - TimeUnit.MILLISECONDS.toNanos(25)) {
          fail(
              "elections broken: leader() read no leader %d ms after a leader with a lease of %d"
                  + " ms stopped renewing: a crashed leader must be read until its lease ends",
              ms(at - granted), ms(lease));
        }
        break;
      }
      Election.Leader l = read.get();
      if (l.holder().isPresent() && l.holder().get().pid() != me) {
        fail(
            "elections broken: leader() named process %d while the crashed leader of process %d"
                + " held the lease",
            l.holder().get().pid(), me);
      }
      if (l.holder().isEmpty() && l.state().holder().isPresent()) {
        fail(
            "elections broken: leader() read the holder '%s', which is not the owner id the"
                + " crashed leader's client gave the backend",
            l.state().holder().get());
      }
      if (fencing && l.term().isPresent() && l.term().getAsLong() != term) {
        fail(
            "elections broken: leader() read term %d, not the crashed leader's term %d",
            l.term().getAsLong(), term);
      }
      if (at - granted > bound) {
        fail(
            "elections broken: leader() still read the crashed leader %d ms after its grant"
                + " (lease %d ms + expiry slack + tolerance)",
            ms(at - granted), ms(lease));
      }
      Thread.sleep(5);
    }
    Election.Leadership next;
    try {
      next = client().election(name).campaign("kit-next", limits().tolerance());
    } catch (LockTimeoutException e) {
      throw new AssertionError(
          "elections broken: leader() read no leader, but a campaign did not lead within a"
              + " tolerance after it",
          e);
    }
    try {
      if (fencing && next.term() <= term) {
        fail(
            "elections broken: the term after the crashed leader's (%d) was %d: terms must rise",
            term, next.term());
      }
    } finally {
      next.close();
      Kept.keep(crashed);
    }
  }

  /** Whether the holder watch of {@code name} was called after {@code since}. */
  private boolean watchCalledAfter(String name, long since) {
    for (long t : probe().watchCalls(name)) {
      if (t - since > 0) {
        return true;
      }
    }
    return false;
  }

  @Test
  @DisplayName(
      "24.4 MUST (STATE_READS, where the backend watches a lock's holder): an observer's holder"
          + " watch is called once in place, after a resignation with a campaigner waiting, after a"
          + " grant where it says it sees grants, each within the wake-up bound; closed, it is not"
          + " called")
  default void rule24_4_holderWatchesAreCalled() throws Exception {
    requireFeature(Feature.STATE_READS, "24.4");
    String name = name("watched");
    long bound = limits().wakeUp().plus(limits().tolerance()).toNanos();
    long settle = limits().tolerance().toMillis();
    Election reader = client().election(name);
    List<Election.Leadership> toClose = new CopyOnWriteArrayList<>();
    Election.Observation o = reader.observe(l -> {});
    try {
      await(
          limits().tolerance(),
          "elections broken: an observer did not ask the backend for a holder watch as it started",
          () -> probe().watchKind(name).isPresent());
      String kind = probe().watchKind(name).get();
      org.junit.jupiter.api.Assumptions.assumeFalse(
          kind.equals("none"),
          "rule 24.4 skipped: the backend returns no holder watch (LockBackend.watchHolder);"
              + " its observers read every "
              + Election.OBSERVE_EVERY.toMillis()
              + " ms, which rule 24.2 checks");
      await(
          Duration.ofNanos(bound),
          "elections broken: the backend's holder watch was not called once in place (it must be,"
              + " since a change may have come before it was)",
          () -> !probe().watchCalls(name).isEmpty());
      Election.Leadership a =
          client(longRenewed()).election(name).campaign("kit-a", Duration.ofSeconds(10));
      toClose.add(a);
      CompletableFuture<Election.Leadership> b =
          campaigning(client(longRenewed()).election(name), "kit-b", toClose);
      Thread.sleep(settle); // b campaigns, queued behind a
      long resigned = System.nanoTime();
      a.resign();
      await(
          Duration.ofNanos(bound),
          "elections broken: the backend's holder watch was not called within "
              + ms(bound)
              + " ms after the leader resigned with a campaigner waiting: observers learn of a"
              + " hand-over late (a watch must be called after every release)",
          () -> watchCalledAfter(name, resigned));
      Election.Leadership next = b.get(ms(bound) + 10_000, TimeUnit.MILLISECONDS);
      if (kind.equals("grants")) {
        next.resign();
        await(
            limits().tolerance(),
            "elections broken: after the last leader resigned, leader() still read a leader",
            () -> reader.leader().isEmpty());
        Thread.sleep(settle); // calls for the resignation come in
        long asked = System.nanoTime();
        Election.Leadership c =
            client(longRenewed()).election(name).campaign("kit-c", Duration.ofSeconds(10));
        toClose.add(c);
        await(
            Duration.ofNanos(bound),
            "elections broken: the backend's holder watch says it sees grants, but was not called"
                + " within "
                + ms(bound)
                + " ms of a campaign that led an election nobody led (an observer that relies on"
                + " it reads a new leader a second late)",
            () -> watchCalledAfter(name, asked));
        next = c;
      }
      o.close();
      Thread.sleep(settle); // calls under way as it closed come in
      long closed = System.nanoTime();
      CompletableFuture<Election.Leadership> d =
          campaigning(client(longRenewed()).election(name), "kit-d", toClose);
      Thread.sleep(settle); // d campaigns, queued behind the leader
      next.resign();
      d.get(ms(bound) + 10_000, TimeUnit.MILLISECONDS).resign();
      Thread.sleep(settle);
      if (watchCalledAfter(name, closed)) {
        fail(
            "elections broken: a closed holder watch was still called (HolderWatch.close() must"
                + " stop the calls)");
      }
    } finally {
      o.close();
      toClose.forEach(Election.Leadership::close);
    }
  }
}
