package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockException;
import dev.locksmith.spi.Abandonable;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 19: read-write locks (rules 19.6 to 19.12; the others in {@link ReadWriteLockRules}), as
 * tests: the rules of this group in {@code RULES.md}. The kit's {@code @Nested} class {@link
 * LockCompatibilityKit.ReadWriteLocks} runs them against the backend under test. Every rule here
 * needs {@link Feature#READ_WRITE_LOCKS}: without it each is skipped with that reason.
 */
@RequiresFeature(Feature.READ_WRITE_LOCKS)
interface ReadWriteLockReleaseRules extends KitRules {
  @Test
  @DisplayName(
      "19.6 MUST: readers that vanish or stop renewing free the lock for a writer within lease +"
          + " expiry slack, and a vanished writer frees it for readers")
  default void rule19_6_vanishedHoldersFreeTheLock() throws Exception {
    String name = name("rw-vanished");
    LockClient doomedReader = client();
    LockClient unrenewed = client(expiring());
    read(doomedReader, name).acquire(Duration.ofSeconds(10));
    read(unrenewed, name).acquire(Duration.ofSeconds(10));
    Duration bound = limits().lease().plus(limits().expirySlack()).plus(limits().tolerance());
    ((Abandonable) doomedReader).abandon();
    long start = System.nanoTime();
    LockClient doomedWriter = client();
    Optional<Lease> w = write(doomedWriter, name).tryAcquire(bound.plus(limits().tolerance()));
    long took = ms(System.nanoTime() - start);
    assertThat(w.isPresent() && took <= bound.toMillis())
        .withFailMessage(
            "read-write locks broken: a writer %s after one reader vanished and another stopped"
                + " renewing (bound: lease + expiry slack + tolerance = %d ms): a read lease must"
                + " end with its lease when its holder is gone",
            w.isPresent() ? "got the lock only " + took + " ms" : "never got " + "the lock",
            bound.toMillis())
        .isTrue();
    ((Abandonable) doomedWriter).abandon();
    start = System.nanoTime();
    Optional<Lease> r = read(client(), name).tryAcquire(bound.plus(limits().tolerance()));
    took = ms(System.nanoTime() - start);
    assertThat(r.isPresent() && took <= bound.toMillis())
        .withFailMessage(
            "read-write locks broken: a reader %s after the writer vanished (bound: lease +"
                + " expiry slack + tolerance = %d ms): a write lease must end with its lease when"
                + " its holder is gone",
            r.isPresent() ? "got the lock only " + took + " ms" : "never got the lock",
            bound.toMillis())
        .isTrue();
    r.get().release();
  }

  @Test
  @DisplayName(
      "19.7 MUST: a waiting writer that vanishes without withdrawing holds readers back only for"
          + " a few recheck intervals")
  default void rule19_7_vanishedWaitingWriterLetsReadersIn() throws Exception {
    String name = name("rw-ghost-writer");
    Duration recheck = Duration.ofMillis(200);
    Lease reader =
        read(client(), name)
            .acquire(Duration.ofSeconds(10)); // held throughout: the lock is never free
    LockClient doomed = client(renewing(), recheck);
    DistributedLock writer = write(doomed, name);
    int polled = probe().polls(name, Claim.Kind.WRITE);
    Thread waiting =
        background(
            "rw-doomed-writer",
            () -> {
              try {
                writer.acquire(Duration.ofSeconds(60)).release();
              } catch (LockException e) {
                // its client vanished while it waited
              }
            });
    awaitQueued(waiting, name, Claim.Kind.WRITE, polled, "the writer waits behind the reader");
    LockClient readers = client(renewing(), recheck);
    Optional<Lease> held = read(readers, name).tryAcquire();
    held.ifPresent(Lease::release);
    assertThat(held)
        .withFailMessage(
            "read-write locks broken: a new reader was granted while a writer waited (no writer "
                + "preference)")
        .isEmpty();
    // the writer's process dies: its withdrawal never reaches the server
    probe().dropWithdrawals(name, Claim.Kind.WRITE);
    ((Abandonable) doomed).abandon();
    long start = System.nanoTime();
    Duration bound =
        recheck.multipliedBy(4).plus(limits().expirySlack()).plus(limits().tolerance());
    Optional<Lease> got = read(readers, name).tryAcquire(bound.plus(limits().tolerance()));
    long took = ms(System.nanoTime() - start);
    got.ifPresent(Lease::release);
    assertThat(got.isPresent() && took <= bound.toMillis())
        .withFailMessage(
            "read-write locks broken: readers %s after a waiting writer vanished without"
                + " withdrawing (bound: 4 of its recheck intervals of %d ms + expiry slack +"
                + " tolerance = %d ms): a waiting writer's mark must end by itself when the"
                + " writer stops polling, or one crash blocks every reader for ever",
            got.isPresent() ? "got in only " + took + " ms" : "never got in",
            recheck.toMillis(),
            bound.toMillis())
        .isTrue();
    assertThat(reader.release()).isTrue();
  }

  @Test
  @DisplayName(
      "19.8 MUST: a waiting writer that gives up (interrupt, timeout) lets the readers it held"
          + " back in at once")
  default void rule19_8_withdrawnWriterLetsReadersIn() throws Exception {
    String name = name("rw-withdrawn-writer");
    boolean notified = guarantees().has(Feature.NOTIFIED_WAKEUP);
    // with notified wake-up only a wake-up can let the reader in within the bound
    LockClient readers = notified ? client(renewing(), Duration.ofMinutes(1)) : client();
    Duration bound =
        notified ? limits().tolerance() : readers.config().recheck().plus(limits().tolerance());
    Lease reader = read(client(longLease()), name).acquire(Duration.ofSeconds(10));
    for (String how : List.of("interrupted", "timed out")) {
      DistributedLock writer = write(client(), name);
      int polled = probe().polls(name, Claim.Kind.WRITE);
      AtomicReference<Throwable> outcome = new AtomicReference<>();
      Thread waiting =
          background(
              "rw-writer-" + how.replace(' ', '-'),
              () -> {
                try {
                  Optional<Lease> w =
                      how.equals("interrupted")
                          ? Optional.of(writer.acquire(Duration.ofSeconds(60)))
                          : writer.tryAcquire(limits().tolerance().dividedBy(2));
                  w.ifPresent(Lease::release);
                  outcome.set(
                      w.isPresent()
                          ? new AssertionError("the writer got the lock while a reader held it")
                          : null);
                } catch (Throwable e) {
                  outcome.set(e);
                }
              });
      awaitQueued(waiting, name, Claim.Kind.WRITE, polled, "the writer waits behind the reader");
      int readPolls = probe().polls(name, Claim.Kind.READ);
      CompletableFuture<Lease> heldBack = read(readers, name).acquireAsync(Duration.ofSeconds(60));
      await(
          Duration.ofSeconds(10),
          "the new reader polls",
          () -> probe().polls(name, Claim.Kind.READ) > readPolls);
      Thread.sleep(20);
      assertThat(heldBack)
          .withFailMessage(
              "read-write locks broken: a new reader was granted while a writer waited (no "
                  + "writer preference)")
          .isNotDone();
      int withdrawn = probe().abandons(name, Claim.Kind.WRITE);
      if (how.equals("interrupted")) {
        waiting.interrupt();
      }
      await(
          Duration.ofSeconds(10),
          "the writer withdraws",
          () -> probe().abandons(name, Claim.Kind.WRITE) > withdrawn);
      long start = System.nanoTime();
      Lease in;
      try {
        in =
            heldBack.get(bound.toMillis() + limits().tolerance().toMillis(), TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        in = null;
      }
      long took = ms(System.nanoTime() - start);
      assertThat(in != null && took <= bound.toMillis())
          .withFailMessage(
              "read-write locks broken: a reader held back by a waiting writer that %s %s (bound"
                  + " %d ms): a writer's withdrawal must end its mark and wake the readers it"
                  + " held back",
              how,
              in == null ? "was still waiting" : "got in only " + took + " ms later",
              bound.toMillis())
          .isTrue();
      in.release();
      waiting.join(limits().tolerance().toMillis());
      if (how.equals("interrupted")) {
        assertThat(outcome.get())
            .as("what the interrupted writer threw")
            .isInstanceOf(InterruptedException.class);
      }
    }
    assertThat(reader.release()).isTrue();
  }

  @Test
  @DisplayName(
      "19.9 MUST: releases are owner-checked per lease: a stale reader's or writer's release"
          + " frees nothing another lease holds")
  default void rule19_9_releasesAreOwnerChecked() throws Exception {
    String name = name("rw-owner");
    LockClient a = client();
    LockClient b = client();
    Lease r1 = read(a, name).acquire(Duration.ofSeconds(10));
    // r1's own grant (its owner id), taken before r2's: readers holding together may share a
    // token, so that a look-up
    // by token afterwards could find r2's grant and re-send the release of the lease that still
    // holds the lock
    BackendLease staleRead = granted(name, Claim.Kind.READ, r1);
    Lease r2 = read(b, name).acquire(Duration.ofSeconds(10));
    assertThat(r1.release()).isTrue();
    boolean again = releaseAgain(staleRead);
    Optional<Lease> w = write(client(), name).tryAcquire();
    w.ifPresent(Lease::release);
    assertThat(w)
        .withFailMessage(
            "read-write locks broken: the release of a read lease already released, sent to the"
                + " server again (a delayed or repeated request), freed the share another reader"
                + " holds, and a writer got in (it answered %s): releases must be owner-checked"
                + " per lease, not counted",
            again)
        .isEmpty();
    assertThat(again)
        .withFailMessage(
            "read-write locks broken: the release of a read lease already released, sent again, "
                + "answered true")
        .isFalse();
    assertThat(r2.release()).isTrue();
    Lease w1 = write(a, name).acquire(Duration.ofSeconds(10));
    assertThat(w1.release()).isTrue();
    Lease w2 = write(b, name).acquire(Duration.ofSeconds(10));
    boolean againW = releaseAgain(name, Claim.Kind.WRITE, w1);
    Optional<Lease> r = read(client(), name).tryAcquire();
    r.ifPresent(Lease::release);
    assertThat(r)
        .withFailMessage(
            "read-write locks broken: the release of a write lease already released, sent to the"
                + " server again, freed the write lock another writer holds (it answered %s):"
                + " releases must be owner-checked per lease",
            againW)
        .isEmpty();
    assertThat(againW)
        .withFailMessage(
            "read-write locks broken: the release of a write lease already released, sent again, "
                + "answered true")
        .isFalse();
    assertThat(w2.release()).isTrue();
  }

  @Test
  @DisplayName(
      "19.12 MUST: a reader with auto-renew keeps the lock for 3.5 leases while a writer of"
          + " another client waits, and the writer gets it once the reader releases")
  default void rule19_12_renewedReaderHoldsBeyondTheLease() throws Exception {
    requireFeature(Feature.RENEWAL, "19.12");
    String name = name("rw-renewed-reader");
    Lease reader = read(client(), name).acquire(Duration.ofSeconds(10));
    long grantedAt = System.nanoTime();
    LockClient writers = client();
    long watch =
        limits().lease().multipliedBy(7).dividedBy(2).toNanos() - (System.nanoTime() - grantedAt);
    Optional<Lease> intruder =
        write(writers, name).tryAcquire(Duration.ofNanos(Math.max(1, watch)));
    long at = ms(System.nanoTime() - grantedAt);
    intruder.ifPresent(Lease::release);
    assertThat(intruder)
        .withFailMessage(
            "read-write locks broken: a writer of another client got the lock %d ms after a"
                + " reader with auto-renew took it (lease %d ms), while that reader still held"
                + " it: a read lease's renewal must move its expiry on the server (a renewal that"
                + " answers renewed but moves nothing lets the lease run out)",
            at, limits().lease().toMillis())
        .isEmpty();
    assertThat(reader.isValid())
        .as("read-write locks broken: isValid() of a read lease renewed for 3.5 leases")
        .isTrue();
    assertThat(reader.release())
        .as("read-write locks broken: release() of a read lease renewed for 3.5 leases")
        .isTrue();
    Optional<Lease> writer = write(writers, name).tryAcquire(limits().tolerance());
    assertThat(writer)
        .withFailMessage(
            "read-write locks broken: once the renewed reader released, a writer did not get the "
                + "lock within %d ms",
            limits().tolerance().toMillis())
        .isPresent();
    writer.get().release();
  }

  @Test
  @DisplayName(
      "19.10 MUST: a reader waiting behind a writer, and a writer waiting behind a reader, get"
          + " the lock within the wake-up bound of the release (median of 5 each)")
  default void rule19_10_waitersAreWokenByARelease() throws Exception {
    requireFeature(Feature.NOTIFIED_WAKEUP, Guarantees.Primitive.READ_WRITE_LOCK, "19.10");
    String name = name("rw-wake");
    LockClient holder = client();
    LockClient waiterClient = client();
    Random random = new Random();
    for (Claim.Kind waits : List.of(Claim.Kind.READ, Claim.Kind.WRITE)) {
      List<Long> handOffs = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        Lease held =
            (waits == Claim.Kind.READ ? write(holder, name) : read(holder, name))
                .acquire(Duration.ofSeconds(10));
        DistributedLock side =
            waits == Claim.Kind.READ ? read(waiterClient, name) : write(waiterClient, name);
        AtomicLong grantedAt = new AtomicLong();
        int polled = probe().polls(name, waits);
        Thread waiter =
            background(
                "rw-wake-" + waits + "-" + i,
                () -> {
                  try (Lease l = side.acquire(Duration.ofSeconds(30))) {
                    grantedAt.set(System.nanoTime());
                  }
                });
        awaitQueued(waiter, name, waits, polled, "the " + waits + " waiter blocks");
        Thread.sleep(random.nextInt(50));
        // what two round trips of the waiter's client cost right now (a grant after a wake-up is
        // one poll; the release's own answer is another): on a loaded machine they, not the
        // wake-up, are most of a hand-off, and they are taken off it below
        long trips = roundTrips(waiterClient, name("rw-wake-trip"));
        long releasedAt = System.nanoTime();
        assertThat(held.release()).isTrue();
        waiter.join(TimeUnit.SECONDS.toMillis(30));
        assertThat(grantedAt.get())
            .as("read-write locks broken: hand-off " + i + " to a " + waits + " waiter happened")
            .isNotZero();
        handOffs.add(Math.max(0, grantedAt.get() - releasedAt - trips));
      }
      Collections.sort(handOffs);
      long median = ms(handOffs.get(handOffs.size() / 2));
      assertThat(median)
          .withFailMessage(
              "read-write locks broken: median hand-off from the release of the %s lock to a"
                  + " waiting %s of another client, less two round trips measured just before,"
                  + " was %d ms (wake-up bound %d ms); all in ms: %s: a release of either side"
                  + " must wake the read-write lock's waiters",
              waits == Claim.Kind.READ ? "write" : "read",
              waits == Claim.Kind.READ ? "reader" : "writer",
              median,
              limits().wakeUp().toMillis(),
              handOffs.stream().map(n -> ms(n)).collect(Collectors.toList()))
          .isLessThanOrEqualTo(limits().wakeUp().toMillis());
    }
  }

  @Test
  @DisplayName(
      "19.11 MUST: a reader waiting behind a writer, and a writer waiting behind a reader, sleep"
          + " until woken: each polls about once per recheck interval, not in a loop")
  default void rule19_11_waitersDoNotPoll() throws Exception {
    requireFeature(Feature.NOTIFIED_WAKEUP, Guarantees.Primitive.READ_WRITE_LOCK, "19.11");
    LockClient holder = client(longLease());
    for (Claim.Kind waits : List.of(Claim.Kind.READ, Claim.Kind.WRITE)) {
      String name = name("rw-no-polling-" + waits);
      Lease held =
          (waits == Claim.Kind.READ ? write(holder, name) : read(holder, name))
              .acquire(Duration.ofSeconds(10));
      LockClient waiterClient = client();
      try {
        assertClaimWaiterSleeps(
            name,
            waits,
            waits == Claim.Kind.READ ? read(waiterClient, name) : write(waiterClient, name),
            waiterClient,
            "read-write locks");
      } finally {
        held.release();
      }
    }
  }

  /**
   * @return the nanoseconds one {@code tryAcquire()} and release of a free lock take on {@code
   *     client} now: two round trips to the server
   */
  private static long roundTrips(LockClient client, String freeName) {
    long start = System.nanoTime();
    client.lock(freeName).tryAcquire().ifPresent(Lease::release);
    return System.nanoTime() - start;
  }
}
