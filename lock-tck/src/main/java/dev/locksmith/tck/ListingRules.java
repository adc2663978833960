package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.HeldLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.LockPage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 23: listing ({@code client.list(prefix, cursor, limit)}), as tests: the rules of this group
 * in {@code RULES.md}. The kit's {@code @Nested} class {@link LockCompatibilityKit.Listing} runs
 * them against the backend under test, where it declares {@link Feature#LISTING}.
 */
interface ListingRules extends KitRules {

  /** Every page of a listing, at most 10,000 pages. */
  private static Map<String, HeldLock> listAll(LockClient client, String prefix, int limit) {
    Map<String, HeldLock> all = new TreeMap<>();
    String cursor = null;
    for (int page = 0; page < 10_000; page++) {
      LockPage p = client.list(prefix, cursor, limit);
      assertThat(p.locks().size())
          .withFailMessage(
              "listing broken: a page of limit %d held %d locks", limit, p.locks().size())
          .isLessThanOrEqualTo(limit);
      for (HeldLock l : p.locks()) {
        all.put(l.name(), l);
      }
      Optional<String> next = p.next();
      if (next.isEmpty()) {
        return all;
      }
      cursor = next.get();
    }
    throw new AssertionError("listing broken: 10,000 pages and no last page");
  }

  /** Every entry of every page of a listing, in order, at most 10,000 pages. */
  private static List<HeldLock> entries(LockClient client, String prefix, int limit) {
    List<HeldLock> all = new ArrayList<>();
    String cursor = null;
    for (int page = 0; page < 10_000; page++) {
      LockPage p = client.list(prefix, cursor, limit);
      assertThat(p.locks().size())
          .withFailMessage(
              "listing broken: a page of limit %d held %d entries", limit, p.locks().size())
          .isLessThanOrEqualTo(limit);
      all.addAll(p.locks());
      Optional<String> next = p.next();
      if (next.isEmpty()) {
        return all;
      }
      cursor = next.get();
    }
    throw new AssertionError("listing broken: 10,000 pages and no last page");
  }

  /**
   * Checks that a listing shows {@code name} once as {@code kind}, with exactly the holders' tokens
   * (where the backend reads tokens), or not at all when {@code holders} is empty.
   */
  private static void assertListed(
      List<HeldLock> listed, String name, HeldLock.Kind kind, List<Lease> holders, String what) {
    List<HeldLock> found = new ArrayList<>();
    for (HeldLock l : listed) {
      if (l.name().equals(name) && l.kind() != HeldLock.Kind.LOCK) {
        found.add(l);
      }
    }
    if (holders.isEmpty()) {
      assertThat(found)
          .withFailMessage("listing broken: %s, free by then, was still listed: %s", what, found)
          .isEmpty();
      return;
    }
    assertThat(found)
        .withFailMessage(
            "listing broken: %s must be listed once as %s, but the listing found %s",
            what, kind, found)
        .hasSize(1);
    HeldLock l = found.get(0);
    assertThat(l.kind())
        .withFailMessage("listing broken: %s was listed as %s, not %s: %s", what, l.kind(), kind, l)
        .isEqualTo(kind);
    assertThat(l.holders().size())
        .withFailMessage(
            "listing broken: %s was listed with %d holders but %d hold it: every holding must be"
                + " listed (%s)",
            what, l.holders().size(), holders.size(), l)
        .isEqualTo(holders.size());
    if (l.holders().stream().allMatch(h -> h.fencingToken().isPresent())) {
      List<Long> tokens = new ArrayList<>();
      l.holders().forEach(h -> tokens.add(h.fencingToken().getAsLong()));
      List<Long> expected = new ArrayList<>();
      holders.forEach(h -> expected.add(h.fencingToken()));
      assertThat(tokens)
          .withFailMessage(
              "listing broken: %s was listed with tokens %s but its holders have %s",
              what, tokens, expected)
          .containsExactlyInAnyOrderElementsOf(expected);
    }
  }

  @Test
  @DisplayName(
      "23.1 MUST: a listing pages through every lock held under the prefix, each as state() reads"
          + " it, and nothing else")
  default void rule23_1_listingIsCompleteAndConsistent() throws Exception {
    requireFeature(Feature.LISTING, "23.1");
    String prefix = name("list") + "/";
    // 60 s unrenewed leases: these rules are not about renewal, and paging through a large
    // keyspace a few names at a time on a loaded machine can take longer than a renewal's slack
    LockClient holder = client(longLease());
    LockClient lister = client();
    Map<String, Lease> held = new LinkedHashMap<>();
    for (int i = 0; i < 7; i++) {
      String name = prefix + "lock-" + i;
      held.put(name, holder.lock(name).acquire(Duration.ofSeconds(10)));
    }
    // a released lock, and a lock that shares the beginning but not the prefix's slash: neither is
    // a held lock under the prefix
    String released = prefix + "released";
    assertThat(holder.lock(released).acquire(Duration.ofSeconds(10)).release()).isTrue();
    String outside = prefix.substring(0, prefix.length() - 1) + "-outside";
    Lease outsideLease = holder.lock(outside).acquire(Duration.ofSeconds(10));
    try {
      for (int limit : new int[] {2, 3, 1000}) {
        Map<String, HeldLock> listed = listAll(lister, prefix, limit);
        assertThat(listed.keySet())
            .withFailMessage(
                "listing broken: with pages of %d, listing '%s' found %s but the held locks under"
                    + " it are %s: every held lock must be on some page, and nothing else",
                limit, prefix, listed.keySet(), held.keySet())
            .containsExactlyInAnyOrderElementsOf(held.keySet());
        for (Map.Entry<String, Lease> e : held.entrySet()) {
          HeldLock l = listed.get(e.getKey());
          assertThat(l.state().isHeld()).isTrue();
          if (l.state().fencingToken().isPresent()) {
            assertThat(l.state().fencingToken().getAsLong())
                .withFailMessage(
                    "listing broken: '%s' was listed with token %s but its holder has %d",
                    e.getKey(), l.state().fencingToken(), e.getValue().fencingToken())
                .isEqualTo(e.getValue().fencingToken());
          }
        }
      }
      List<String> gone = new ArrayList<>(held.keySet()).subList(0, 3);
      for (String name : gone) {
        assertThat(held.remove(name).release()).isTrue();
      }
      assertThat(listAll(lister, prefix, 2).keySet())
          .withFailMessage("listing broken: released locks %s were still listed", gone)
          .containsExactlyInAnyOrderElementsOf(held.keySet());
    } finally {
      held.values().forEach(Lease::release);
      outsideLease.release();
    }
  }

  @Test
  @DisplayName("23.2 MUST: listing takes and renews nothing: a listed lease still expires on time")
  default void rule23_2_listingRenewsNothing() throws Exception {
    requireFeature(Feature.LISTING, "23.2");
    String prefix = name("list-quiet") + "/";
    LockClient holder = client(expiring());
    LockClient lister = client();
    LockOptions unrenewed = expiring();
    Lease lease = holder.lock(prefix + "a", unrenewed).acquire(Duration.ofSeconds(10));
    long start = System.nanoTime();
    Duration expiry = limits().lease().plus(limits().expirySlack());
    java.util.concurrent.atomic.AtomicInteger listings =
        new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicBoolean done =
        new java.util.concurrent.atomic.AtomicBoolean();
    // listed every 20 ms through the lease, its slack, and the acquire that follows
    Thread listing =
        background(
            "lister",
            () -> {
              while (!done.get()) {
                listAll(lister, prefix, 1);
                listings.incrementAndGet();
                Thread.sleep(20);
              }
            });
    Thread.sleep(expiry.toMillis());
    Optional<Lease> got;
    try {
      got = lister.lock(prefix + "a").tryAcquire(limits().tolerance().plus(limits().expirySlack()));
    } finally {
      done.set(true);
      listing.join(10_000);
    }
    assertThat(got)
        .withFailMessage(
            "listing broken: a lease of %d ms listed %d times was still held %d ms after it was"
                + " taken: a listing must not renew what it lists",
            limits().lease().toMillis(), listings.get(), ms(System.nanoTime() - start))
        .isPresent();
    got.get().release();
    assertThat(lease.release()).isFalse();
    assertThat(listAll(lister, prefix, 5))
        .withFailMessage("listing broken: a listing of free locks found some held")
        .isEmpty();
  }

  @Test
  @DisplayName(
      "23.3 MUST: where listing is declared for semaphores, a listing shows each semaphore held"
          + " under the prefix once, with every holding and its token, and no longer once free")
  default void rule23_3_listingShowsEverySemaphoreHolding() throws Exception {
    requireFeature(Feature.LISTING, Guarantees.Primitive.SEMAPHORE, "23.3");
    String prefix = name("list-sem") + "/";
    String pool = prefix + "pool";
    String plain = prefix + "plain";
    LockClient a = client(longLease()); // unrenewed, as in 23.1
    LockClient b = client(longLease());
    LockClient lister = client();
    Lease first = a.semaphore(pool, 3).acquire(Duration.ofSeconds(10));
    Lease second = b.semaphore(pool, 3).acquire(Duration.ofSeconds(10));
    Lease lock = a.lock(plain).acquire(Duration.ofSeconds(10));
    try {
      for (int limit : new int[] {1, 1000}) {
        List<HeldLock> listed = entries(lister, prefix, limit);
        assertListed(
            listed,
            pool,
            HeldLock.Kind.SEMAPHORE,
            List.of(first, second),
            "semaphore '" + pool + "'");
        if (guarantees().has(Feature.LISTING)) {
          assertThat(listed.stream().filter(l -> l.kind() == HeldLock.Kind.LOCK))
              .withFailMessage(
                  "listing broken: the lock '%s' beside the semaphore was not listed as a lock: %s",
                  plain, listed)
              .extracting(HeldLock::name)
              .containsExactly(plain);
        }
      }
      assertThat(first.release()).isTrue();
      assertListed(
          entries(lister, prefix, 2),
          pool,
          HeldLock.Kind.SEMAPHORE,
          List.of(second),
          "semaphore '" + pool + "' after one of its two holders released");
      assertThat(second.release()).isTrue();
      assertListed(
          entries(lister, prefix, 2),
          pool,
          HeldLock.Kind.SEMAPHORE,
          List.of(),
          "semaphore '" + pool + "'");
    } finally {
      first.release();
      second.release();
      lock.release();
    }
  }

  @Test
  @DisplayName(
      "23.4 MUST: where listing is declared for read-write locks, a listing shows readers as the"
          + " read side with every reader, and a writer as the write side")
  default void rule23_4_listingShowsReadersAndWriters() throws Exception {
    requireFeature(Feature.LISTING, Guarantees.Primitive.READ_WRITE_LOCK, "23.4");
    String prefix = name("list-rw") + "/";
    String rw = prefix + "prices";
    LockClient a = client(longLease()); // unrenewed, as in 23.1
    LockClient b = client(longLease());
    LockClient lister = client();
    Lease r1 = a.readWriteLock(rw).readLock().acquire(Duration.ofSeconds(10));
    Lease r2 = b.readWriteLock(rw).readLock().acquire(Duration.ofSeconds(10));
    Lease w = null;
    try {
      for (int limit : new int[] {1, 1000}) {
        assertListed(
            entries(lister, prefix, limit),
            rw,
            HeldLock.Kind.READ,
            List.of(r1, r2),
            "read-write lock '" + rw + "' held by two readers");
      }
      assertThat(r1.release()).isTrue();
      assertThat(r2.release()).isTrue();
      w = a.readWriteLock(rw).writeLock().acquire(Duration.ofSeconds(10));
      assertListed(
          entries(lister, prefix, 1000),
          rw,
          HeldLock.Kind.WRITE,
          List.of(w),
          "read-write lock '" + rw + "' held by a writer");
      assertThat(w.release()).isTrue();
      assertListed(
          entries(lister, prefix, 1000), rw, HeldLock.Kind.WRITE, List.of(), "'" + rw + "'");
    } finally {
      r1.release();
      r2.release();
      if (w != null) {
        w.release();
      }
    }
  }
}
