package dev.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * {@code fencing-floor}: every token a client hands out is the backend's plus the floor, wherever
 * the client shows it, while the backend keeps being given its own. And {@code local:}'s counters
 * start at the wall clock, so a restarted application's tokens are above its previous run's.
 */
class FencingFloorTest {
  private static final long FLOOR = 5_000_000_000_000_000L;

  @Test
  void everyTokenTheClientShowsIsTheBackendsPlusTheFloor() throws Exception {
    String space = "local:floor-" + System.nanoTime();
    List<Long> acquiredEvents = new CopyOnWriteArrayList<>();
    List<Long> releasedEvents = new CopyOnWriteArrayList<>();
    LockEvents events =
        new LockEvents() {
          @Override
          public void acquired(String name, long fencingToken, Duration waited) {
            acquiredEvents.add(fencingToken);
          }

          @Override
          public void released(String name, long fencingToken, Duration held, boolean stillHeld) {
            releasedEvents.add(fencingToken);
          }
        };
    try (LockClient plain = Locks.connect(space);
        LockClient floored =
            Locks.connect(
                LockConfig.builder()
                    .uri(space + "?fencing-floor=" + FLOOR)
                    .events(events)
                    .build())) {
      Lease before = plain.lock("a").acquire();
      long raw = before.fencingToken();
      assertThat(before.release()).isTrue();

      Lease lease = floored.lock("a").acquire();
      // the backend's own token, as a client without a floor reads it (local: tokens rise, not
      // always by one)
      long raw2 = plain.lock("a").state().fencingToken().orElseThrow();
      assertThat(raw2).as("the backend's next token").isGreaterThan(raw);
      assertThat(lease.fencingToken()).as("the next token, floored").isEqualTo(raw2 + FLOOR);
      assertThat(floored.lock("a").state().fencingToken())
          .as("the holder's token read through the floored client")
          .hasValue(lease.fencingToken());
      assertThat(lease.release()).as("released: the backend was given its own token").isTrue();
      assertThat(plain.lock("a").tryAcquire()).as("free again").hasValueSatisfying(Lease::release);
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (releasedEvents.isEmpty() && System.nanoTime() < deadline) {
        Thread.sleep(5); // events are emitted on the client's own thread
      }
      assertThat(acquiredEvents).containsExactly(lease.fencingToken());
      assertThat(releasedEvents).containsExactly(lease.fencingToken());
    }
  }

  @Test
  void aLostLeaseNamesTheFlooredToken() throws Exception {
    String space = "local:floor-lost-" + System.nanoTime();
    try (LockClient floored =
            Locks.connect(space + "?fencing-floor=" + FLOOR + "&lease=100ms&renew=false");
        LockClient other = Locks.connect(space)) {
      Lease lease = floored.lock("a").acquire();
      Lease taker = other.lock("a").acquire(Duration.ofSeconds(30));
      LeaseLostException lost =
          lease.lost().toCompletableFuture().get(30, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(lost.fencingToken()).isEqualTo(lease.fencingToken());
      assertThat(lease.fencingToken()).isEqualTo(taker.fencingToken() - 1 + FLOOR);
      taker.release();
    }
  }

  @Test
  void withoutAFloorTokensAreTheBackendsOwn() {
    String space = "local:floor-none-" + System.nanoTime();
    try (LockClient a = Locks.connect(space);
        LockClient b = Locks.connect(space + "?fencing-floor=0")) {
      Lease first = a.lock("x").tryAcquire().orElseThrow();
      // the holder's token as b reads it, with b's floor of 0 added: the same number
      assertThat(b.lock("x").state().fencingToken()).hasValue(first.fencingToken());
      first.release();
      Lease second = b.lock("x").tryAcquire().orElseThrow();
      assertThat(a.lock("x").state().fencingToken()).hasValue(second.fencingToken());
      assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
      second.release();
    }
  }

  @Test
  void theFloorIsCheckedNamingTheSettingTheValueAndTheRange() {
    for (String bad : List.of("-1", "abc", "1.5", "", "4611686018427387905")) {
      assertThatThrownBy(() -> Locks.connect("local:floor-bad?fencing-floor=" + bad))
          .as("fencing-floor=%s", bad)
          .isInstanceOf(LockConfigurationException.class)
          .hasMessageContaining("`fencing-floor` was '" + bad + "'")
          .hasMessageContaining("from 0 to 4611686018427387904");
    }
    assertThatThrownBy(() -> LockConfig.builder().fencingFloor(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`fencing-floor` was -1")
        .hasMessageContaining("from 0 to 4611686018427387904");
    assertThat(LockConfig.fromUri("local:?fencing-floor=4611686018427387904").fencingFloor())
        .isEqualTo(1L << 62);
    assertThat(LockConfig.fromUri("local:?fencing-floor=7").toString()).contains("fencing-floor=7");
    assertThat(LockConfig.fromUri("local:").fencingFloor()).isZero();
    assertThatThrownBy(() -> Locks.connect("local:floor-bad?fencing-flor=7"))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("fencing-floor");
  }

  @Test
  void aLocalSpaceStartedLaterHandsOutTokensAboveAnEarlierOnes() throws Exception {
    long before = System.currentTimeMillis() * 1000;
    long last = 0;
    try (LockClient first = Locks.connect("local:restart-a-" + System.nanoTime())) {
      for (int i = 0; i < 10; i++) {
        Lease lease = first.lock("a").acquire();
        last = lease.fencingToken();
        lease.release();
      }
    }
    assertThat(last)
        .as("a lock's first tokens: the wall clock in microseconds when it was first used")
        .isBetween(before + 1, System.currentTimeMillis() * 1000 + 10);
    Thread.sleep(2); // an application restarted (here: a new space), later
    try (LockClient restarted = Locks.connect("local:restart-b-" + System.nanoTime())) {
      Lease lease = restarted.lock("a").acquire();
      assertThat(lease.fencingToken()).as("the restarted run's first token").isGreaterThan(last);
      lease.release();
    }
  }
}
