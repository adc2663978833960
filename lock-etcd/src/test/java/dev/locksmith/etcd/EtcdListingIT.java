package dev.locksmith.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Guarantees;
import dev.locksmith.HeldLock;
import dev.locksmith.LockState;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.NamePage;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.RecordingContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Listing of semaphores and read-write locks on etcd (issue 34), against a real etcd, where the kit
 * does not reach: waiters' keys are in the same range as the holders', a waiter the last key ahead
 * of it has left is not a holder until its poll grants it, a grant after waiting has the token of
 * its write, and a holding moved onto an etcd lease of its own keeps its token.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EtcdListingIT {
  private static final String PREFIX = "/listit";
  private static final Duration LEASE = Duration.ofSeconds(30);

  @RegisterExtension
  static final EtcdServerExtension ETCD = EtcdServerExtension.oneMember("listing");

  private EtcdBackend backend;
  private final List<LockAttempt> attempts = new ArrayList<>();

  @BeforeEach
  void open() {
    String uri = "etcd://" + ETCD.hosts() + PREFIX + "?ttl=5s";
    BackendConfig config = new BackendConfig(LockUri.parse(uri), Map.of("ttl", "5s"), List.of());
    backend =
        (EtcdBackend)
            new EtcdLockProvider()
                .open(config, new RecordingContext("listing", Duration.ofSeconds(30)));
  }

  @AfterEach
  void close() {
    attempts.forEach(LockAttempt::abandon);
    backend.close();
  }

  private LockAttempt attempt(String name, Claim claim, String owner) {
    LockAttempt a = backend.attempt(name, claim, owner, LEASE, () -> {});
    attempts.add(a);
    return a;
  }

  private static List<Long> tokens(HeldLock held) {
    List<Long> out = new ArrayList<>();
    for (LockState s : held.holders()) {
      out.add(s.fencingToken().orElseThrow());
    }
    return out;
  }

  private static List<String> owners(HeldLock held) {
    List<String> out = new ArrayList<>();
    for (LockState s : held.holders()) {
      out.add(s.holder().orElseThrow());
    }
    return out;
  }

  private BackendLease lease(String name, Claim claim, String owner, Poll granted) {
    return new BackendLease(name, claim, owner, granted.fencingToken(), LEASE, granted.state());
  }

  @Test
  void aSemaphoresWaitersAreNotHoldersAndAGrantAfterWaitingHasTheTokenOfItsWrite()
      throws Exception {
    String name = "pool";
    Claim two = Claim.permit(2);
    Poll a = attempt(name, two, "a").poll();
    Poll b = attempt(name, two, "b").poll();
    LockAttempt waiter = attempt(name, two, "c");
    assertThat(a.isGranted()).isTrue();
    assertThat(b.isGranted()).isTrue();
    assertThat(waiter.poll().isGranted()).isFalse();

    HeldLock held = backend.inspectHolders(name, Guarantees.Primitive.SEMAPHORE);
    assertThat(held.kind()).isEqualTo(HeldLock.Kind.SEMAPHORE);
    assertThat(owners(held)).containsExactly("a", "b");
    assertThat(tokens(held)).containsExactly(a.fencingToken(), b.fencingToken());

    assertThat(backend.release(lease(name, two, "a", a))).isTrue();
    // the waiter may be granted now, but its poll has not granted it: not a holder yet
    held = backend.inspectHolders(name, Guarantees.Primitive.SEMAPHORE);
    assertThat(owners(held)).containsExactly("b");

    Poll c = waiter.poll();
    assertThat(c.isGranted()).isTrue();
    held = backend.inspectHolders(name, Guarantees.Primitive.SEMAPHORE);
    assertThat(owners(held)).containsExactlyInAnyOrder("b", "c");
    assertThat(tokens(held)).containsExactlyInAnyOrder(b.fencingToken(), c.fencingToken());

    assertThat(backend.release(lease(name, two, "b", b))).isTrue();
    assertThat(backend.release(lease(name, two, "c", c))).isTrue();
    assertThat(backend.inspectHolders(name, Guarantees.Primitive.SEMAPHORE)).isNull();
  }

  @Test
  void readersBehindAWriterAreNotListedUntilGrantedAndThenWithTheirGrantsTokens() throws Exception {
    String name = "prices";
    Poll w = attempt(name, Claim.write(), "w").poll();
    LockAttempt r1 = attempt(name, Claim.read(), "r1");
    LockAttempt r2 = attempt(name, Claim.read(), "r2");
    LockAttempt w2 = attempt(name, Claim.write(), "w2");
    assertThat(w.isGranted()).isTrue();
    assertThat(r1.poll().isGranted()).isFalse();
    assertThat(r2.poll().isGranted()).isFalse();
    assertThat(w2.poll().isGranted()).isFalse();

    HeldLock held = backend.inspectHolders(name, Guarantees.Primitive.READ_WRITE_LOCK);
    assertThat(held.kind()).isEqualTo(HeldLock.Kind.WRITE);
    assertThat(owners(held)).containsExactly("w");
    assertThat(tokens(held)).containsExactly(w.fencingToken());

    assertThat(backend.release(lease(name, Claim.write(), "w", w))).isTrue();
    assertThat(backend.inspectHolders(name, Guarantees.Primitive.READ_WRITE_LOCK))
        .as("readers that may go in but have not polled")
        .isNull();
    Poll g2 = r2.poll();
    assertThat(g2.isGranted()).isTrue();
    held = backend.inspectHolders(name, Guarantees.Primitive.READ_WRITE_LOCK);
    assertThat(held.kind()).isEqualTo(HeldLock.Kind.READ);
    assertThat(owners(held)).containsExactly("r2");
    assertThat(tokens(held)).containsExactly(g2.fencingToken());
    Poll g1 = r1.poll();
    assertThat(g1.isGranted()).isTrue();
    held = backend.inspectHolders(name, Guarantees.Primitive.READ_WRITE_LOCK);
    assertThat(owners(held)).containsExactly("r1", "r2");
    assertThat(tokens(held)).containsExactly(g1.fencingToken(), g2.fencingToken());
  }

  @Test
  void aHoldingMovedOntoAnEtcdLeaseOfItsOwnKeepsItsTokenAndOwner() throws Exception {
    String name = "moved";
    Claim one = Claim.permit(1);
    Poll first = attempt(name, one, "first").poll();
    LockAttempt second = attempt(name, one, "second");
    assertThat(first.isGranted()).isTrue();
    assertThat(second.poll().isGranted()).isFalse();
    assertThat(backend.release(lease(name, one, "first", first))).isTrue();
    Poll granted = second.poll(); // granted after waiting: its token is its grant's write
    assertThat(granted.isGranted()).isTrue();
    BackendLease l = lease(name, one, "second", granted);
    assertThat(backend.extend(l, Duration.ofSeconds(20))).isTrue();
    assertThat(backend.extend(l, Duration.ofSeconds(25))).as("a second extend").isTrue();

    HeldLock held = backend.inspectHolders(name, Guarantees.Primitive.SEMAPHORE);
    assertThat(owners(held)).containsExactly("second");
    assertThat(tokens(held)).containsExactly(granted.fencingToken());

    // read side, granted at its create, moved too
    Poll reader = attempt(name, Claim.read(), "reader").poll();
    assertThat(reader.isGranted()).isTrue();
    assertThat(backend.extend(lease(name, Claim.read(), "reader", reader), Duration.ofSeconds(20)))
        .isTrue();
    held = backend.inspectHolders(name, Guarantees.Primitive.READ_WRITE_LOCK);
    assertThat(held.kind()).isEqualTo(HeldLock.Kind.READ);
    assertThat(owners(held)).containsExactly("reader");
    assertThat(tokens(held)).containsExactly(reader.fencingToken());
    assertThat(backend.release(l)).isTrue();
    assertThat(backend.release(lease(name, Claim.read(), "reader", reader))).isTrue();
  }

  @Test
  void namesArePagedOnceEachPastTheirWaitersKeys() throws Exception {
    for (String n : List.of("q/a", "q/b", "q/c")) {
      assertThat(attempt(n, Claim.permit(1), n + "-holder").poll().isGranted()).isTrue();
      for (int i = 0; i < 3; i++) {
        assertThat(attempt(n, Claim.permit(1), n + "-waiter" + i).poll().isGranted()).isFalse();
      }
      assertThat(attempt(n, Claim.write(), n + "-writer").poll().isGranted()).isTrue();
    }
    assertThat(attempt("q-outside", Claim.permit(1), "x").poll().isGranted()).isTrue();
    assertThat(attempt("q/lock", Claim.exclusive(), "l").poll().isGranted()).isTrue();
    for (Guarantees.Primitive p :
        List.of(Guarantees.Primitive.SEMAPHORE, Guarantees.Primitive.READ_WRITE_LOCK)) {
      for (int limit : new int[] {1, 2, 1000}) {
        List<String> names = new ArrayList<>();
        String cursor = null;
        int pages = 0;
        do {
          NamePage page = backend.listNames("q/", cursor, limit, p);
          assertThat(page.names().size()).isLessThanOrEqualTo(limit);
          names.addAll(page.names());
          cursor = page.next();
          assertThat(++pages).isLessThan(50);
        } while (cursor != null);
        assertThat(names).as(p + ", pages of " + limit).containsExactly("q/a", "q/b", "q/c");
      }
    }
    assertThat(backend.listNames("q/", null, 1000).names()).containsExactly("q/lock");
  }
}
