package dev.locksmith.docs.samples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Several locks at once ({@code client.locks(names)}), the Locksmith side of RedissonMultiLock and
 * Curator's InterProcessMultiLock, run on {@code local:}.
 */
class LockSetSamples {
  private LockClient client;
  private LockClient other;
  private final Map<String, Long> ledger = new ConcurrentHashMap<>();

  @BeforeEach
  void connect() {
    client = Locks.connect("local:docs-sets");
    other = Locks.connect("local:docs-sets");
  }

  @AfterEach
  void close() {
    client.close();
    other.close();
  }

  @Test
  void transfer() throws Exception {
    String from = "account:17";
    String to = "account:4";
    // tag::transfer[]
    List<String> accounts = List.of(from, to); // any order: the names are taken in one order
    try (Lease both = client.locks(accounts).acquire(Duration.ofSeconds(5))) {
      debit(from, 100, both.fencingToken(from)); // each resource gets its own name's token
      credit(to, 100, both.fencingToken(to));
    } // releases both
    // end::transfer[]
    assertThat(ledger).containsKeys(from, to);
    assertThat(other.lock(from).tryAcquire().map(Lease::release)).as("free after").contains(true);
  }

  @Test
  void allOrNone() throws Exception {
    Lease seat12 = other.lock("seat:12").acquire(Duration.ofSeconds(1));
    // tag::all-or-none[]
    List<String> seats = List.of("seat:11", "seat:12", "seat:13");
    Optional<Lease> booking = client.locks(seats).tryAcquire(Duration.ofMillis(200));
    if (booking.isEmpty()) {
      // someone holds one of them: none of the three is held by us now
    }
    // end::all-or-none[]
    assertThat(booking).isEmpty();
    assertThat(other.lock("seat:11").tryAcquire().map(Lease::release))
        .as("the seat taken before giving up was given back")
        .contains(true);
    seat12.release();
    List<String> held = new ArrayList<>();
    try (Lease all = client.locks(seats).acquire(Duration.ofSeconds(1))) {
      held.addAll(all.lockNames());
    }
    assertThat(held).containsExactly("seat:11", "seat:12", "seat:13");
  }

  private void debit(String account, long amount, long token) {
    ledger.merge(account, token, Math::max);
  }

  private void credit(String account, long amount, long token) {
    ledger.merge(account, token, Math::max);
  }
}
