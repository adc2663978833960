package dev.locksmith.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisSettings;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.LockUri;
import dev.locksmith.spi.Poll;
import dev.locksmith.spi.RecordingContext;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Jedis;

/** The protocol's cost in round trips, counted, never timed. */
class RedisRoundTripsIT {
  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("round-trips");

  private static RedisBackend openBackend(String clientId) {
    BackendConfig config =
        new BackendConfig(LockUri.parse(REDIS.server().uri()), Map.of(), List.of());
    return (RedisBackend) new RedisLockProvider().open(config, new RecordingContext(clientId));
  }

  @Test
  void uncontendedAcquireAndReleaseCostTwoRoundTrips() throws Exception {
    try (RedisBackend backend = openBackend("rt-1")) {
      long before = backend.node().roundTrips();
      LockAttempt attempt =
          backend.attempt("two-trips", "rt-1:1", Duration.ofSeconds(10), () -> {});
      Poll poll = attempt.poll();
      assertThat(poll.isGranted()).isTrue();
      assertThat(
              backend.release(
                  new BackendLease(
                      "two-trips", "rt-1:1", poll.fencingToken(), Duration.ofSeconds(10), null)))
          .isTrue();
      assertThat(backend.node().roundTrips() - before)
          .as("round trips for an uncontended acquire and release")
          .isEqualTo(2);
    }
  }

  @Test
  void uncontendedAcquireAndReleaseThroughTheClientSendTwoCommands() throws Exception {
    try (LockClient client = Locks.connect(REDIS.server().uri());
        Jedis admin = REDIS.server().admin()) {
      client
          .lock("warm-up")
          .tryAcquire()
          .orElseThrow()
          .close(); // the pool's first connection is made here
      Map<String, Long> before = commandCalls(admin);
      try (Lease lease = client.lock("two-commands").acquire(Duration.ofSeconds(5))) {
        assertThat(lease.fencingToken()).isPositive();
      }
      Map<String, Long> after = commandCalls(admin);
      Map<String, Long> sent = new TreeMap<>();
      after.forEach(
          (cmd, calls) -> {
            long d = calls - before.getOrDefault(cmd, 0L);
            if (d > 0 && !cmd.equals("info") && !cmd.equals("ping")) {
              sent.put(cmd, d);
            }
          });
      // two commands from the client; the others are counted by the server as they run inside the
      // two scripts:
      // each script checks the waiter queue (EXISTS); the acquire SETs the owner key, GETs the
      // legacy per-lock
      // counter (absent), INCRs the slot's counter and SETs the token key; the release GETs the
      // owner key and DELs
      // both keys in one DEL; with nobody queued it publishes nothing
      assertThat(sent)
          .as(
              "commands the server ran for one uncontended acquire and release (INFO and pool PINGs"
                  + " aside)")
          .isEqualTo(
              Map.of("evalsha", 2L, "exists", 2L, "set", 2L, "incr", 1L, "get", 2L, "del", 1L));
    }
  }

  @Test
  void aFreeSetOfTenIsOneRoundTripAndABusyOneTakesNothing() throws Exception {
    RedisKeys keys = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE);
    try (RedisBackend backend = openBackend("rt-set");
        Jedis admin = REDIS.server().admin()) {
      List<String> names = new ArrayList<>();
      List<String> owners = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        names.add("set-rt/" + i);
        owners.add("rt-set:" + i);
      }
      Duration lease = Duration.ofSeconds(10);
      long before = backend.node().roundTrips();
      List<Poll> grants = backend.acquireAll(names, owners, lease);
      assertThat(backend.node().roundTrips() - before)
          .as("round trips for a free set of 10")
          .isEqualTo(1);
      assertThat(grants).hasSize(10).allMatch(Poll::isGranted);
      for (int i = 0; i < 10; i++) {
        assertThat(admin.get(keys.owner(names.get(i)))).isEqualTo(owners.get(i));
        assertThat(admin.get(keys.token(names.get(i))))
            .isEqualTo(Long.toString(grants.get(i).fencingToken()));
        assertThat(admin.pttl(keys.owner(names.get(i)))).isBetween(1L, 10_000L);
      }
      // every name is busy now: a set sharing the last one takes none of its free names
      List<String> other = List.of("set-rt/free-a", "set-rt/free-b", "set-rt/9");
      before = backend.node().roundTrips();
      assertThat(backend.acquireAll(other, List.of("rt-set:x", "rt-set:y", "rt-set:z"), lease))
          .as("a set with a held name")
          .isEmpty();
      assertThat(backend.node().roundTrips() - before).isEqualTo(1);
      assertThat(admin.exists(keys.owner("set-rt/free-a"))).isFalse();
      assertThat(admin.exists(keys.owner("set-rt/free-b"))).isFalse();
      assertThat(admin.exists(keys.queue("set-rt/9"))).as("a busy set joins no queue").isFalse();
      // released in one script, each owner-checked: a lease that is not ours any more is left alone
      admin.set(keys.owner(names.get(3)), "someone-else");
      List<BackendLease> leases = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        leases.add(
            new BackendLease(
                names.get(i), owners.get(i), grants.get(i).fencingToken(), lease, null));
      }
      before = backend.node().roundTrips();
      List<Boolean> ours = backend.releaseAll(leases);
      assertThat(backend.node().roundTrips() - before)
          .as("round trips to release a set of 10")
          .isEqualTo(1);
      assertThat(ours).containsExactly(true, true, true, false, true, true, true, true, true, true);
      assertThat(admin.get(keys.owner(names.get(3)))).isEqualTo("someone-else");
      for (int i = 0; i < 10; i++) {
        if (i != 3) {
          assertThat(admin.exists(keys.owner(names.get(i)))).isFalse();
          assertThat(admin.exists(keys.token(names.get(i)))).isFalse();
        }
      }
      admin.del(keys.owner(names.get(3)));
      // a free name that a live waiter is queued for makes the set busy; once the waiter's entry
      // is withdrawn, it does not
      String queuedFor = "set-rt/queued";
      LockAttempt holder = backend.attempt(queuedFor, "rt-set:h", lease, () -> {});
      Poll held = holder.poll();
      LockAttempt waiter = backend.attempt(queuedFor, "rt-set:w", lease, () -> {});
      assertThat(waiter.poll().isGranted()).isFalse();
      assertThat(
              backend.release(
                  new BackendLease(queuedFor, "rt-set:h", held.fencingToken(), lease, null)))
          .isTrue();
      assertThat(
              backend.acquireAll(
                  List.of("set-rt/q-other", queuedFor), List.of("rt-set:q1", "rt-set:q2"), lease))
          .as("a set whose free name a waiter is first in line for")
          .isEmpty();
      assertThat(admin.exists(keys.owner("set-rt/q-other"))).isFalse();
      waiter.abandon();
      List<Poll> after =
          backend.acquireAll(
              List.of("set-rt/q-other", queuedFor), List.of("rt-set:q1", "rt-set:q2"), lease);
      assertThat(after).as("the same set once the waiter withdrew").hasSize(2);
    }
  }

  @Test
  void aSetOfTenThroughTheClientSendsTwoScripts() throws Exception {
    try (LockClient client = Locks.connect(REDIS.server().uri());
        Jedis admin = REDIS.server().admin()) {
      client.lock("warm-up-set").tryAcquire().orElseThrow().close();
      List<String> names = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        names.add("set-two-scripts/" + i);
      }
      Map<String, Long> before = commandCalls(admin);
      try (Lease lease = client.locks(names).acquire(Duration.ofSeconds(5))) {
        assertThat(lease.lockNames()).hasSize(10);
      }
      Map<String, Long> after = commandCalls(admin);
      assertThat(after.getOrDefault("evalsha", 0L) - before.getOrDefault("evalsha", 0L))
          .as("scripts run for the acquire and release of a free set of 10")
          .isEqualTo(2);
    }
  }

  @Test
  void aSetOf10000NamesIsTakenAndReleasedThroughTheClient() throws Exception {
    RedisKeys keys = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE);
    try (LockClient client = Locks.connect(REDIS.server().uri());
        Jedis admin = REDIS.server().admin()) {
      List<String> names = new ArrayList<>();
      for (int i = 0; i < 10_000; i++) {
        names.add("set-10k/" + i);
      }
      try (Lease lease = client.locks(names).tryAcquire().orElseThrow()) {
        assertThat(lease.lockNames()).hasSize(10_000);
        assertThat(admin.get(keys.owner("set-10k/0"))).isNotNull();
        assertThat(admin.get(keys.owner("set-10k/9999"))).isNotNull();
        assertThat(lease.fencingToken("set-10k/4321")).isPositive();
      }
      assertThat(admin.exists(keys.owner("set-10k/0"))).isFalse();
      assertThat(admin.exists(keys.owner("set-10k/9999"))).isFalse();
    }
  }

  @Test
  void renewalsOf10000LeasesCostTenRoundTrips() throws Exception {
    try (RedisBackend backend = openBackend("rt-2")) {
      Duration lease = Duration.ofSeconds(30);
      List<BackendLease> leases = new ArrayList<>();
      for (int i = 0; i < 10_000; i++) {
        String name = "batch/" + i;
        String owner = "rt-2:" + i;
        Poll poll = backend.attempt(name, owner, lease, () -> {}).poll();
        assertThat(poll.isGranted()).as("lock %d granted", i).isTrue();
        leases.add(new BackendLease(name, owner, poll.fencingToken(), lease, null));
      }
      try (Jedis admin = REDIS.server().admin()) {
        admin.pexpire(new RedisKeys(RedisSettings.DEFAULT_NAMESPACE).owner("batch/4321"), 5_000);
      }
      long before = backend.node().roundTrips();
      List<Renewal> outcomes = backend.renew(leases);
      long trips = backend.node().roundTrips() - before;
      assertThat(outcomes).hasSize(10_000).allMatch(r -> r.kind() == Renewal.Kind.RENEWED);
      assertThat(trips)
          .as("round trips to renew 10,000 leases")
          .isLessThanOrEqualTo(100)
          .isEqualTo(10_000 / RedisBackend.RENEW_CHUNK);
      try (Jedis admin = REDIS.server().admin()) {
        assertThat(admin.pttl(new RedisKeys(RedisSettings.DEFAULT_NAMESPACE).owner("batch/4321")))
            .as("the TTL of a renewed key was set back to the lease")
            .isGreaterThan(20_000);
      }
      for (BackendLease l : leases) {
        backend.release(l);
      }
    }
  }

  @Test
  void renewalReportsGoneAndTakenKeysAsLost() throws Exception {
    RedisKeys keys = new RedisKeys(RedisSettings.DEFAULT_NAMESPACE);
    try (RedisBackend backend = openBackend("rt-3");
        Jedis admin = REDIS.server().admin()) {
      Duration lease = Duration.ofSeconds(30);
      List<BackendLease> leases = new ArrayList<>();
      for (String name : List.of("kept", "deleted", "stolen")) {
        Poll poll = backend.attempt(name, "rt-3:" + name, lease, () -> {}).poll();
        leases.add(new BackendLease(name, "rt-3:" + name, poll.fencingToken(), lease, null));
      }
      admin.del(keys.owner("deleted"));
      admin.set(keys.owner("stolen"), "someone-else");
      List<Renewal> outcomes = backend.renew(leases);
      assertThat(outcomes.get(0).kind()).isEqualTo(Renewal.Kind.RENEWED);
      assertThat(outcomes.get(1).kind()).isEqualTo(Renewal.Kind.LOST);
      assertThat(outcomes.get(1).detail()).contains("gone");
      assertThat(outcomes.get(2).kind()).isEqualTo(Renewal.Kind.LOST);
      assertThat(outcomes.get(2).detail()).contains("another owner");
      assertThat(backend.release(leases.get(2)))
          .as("release never deletes another holder's key")
          .isFalse();
      assertThat(admin.get(keys.owner("stolen"))).isEqualTo("someone-else");
      backend.release(leases.get(0));
    }
  }

  @Test
  void aRetriedAcquireBySameOwnerGetsItsOwnTokenBack() throws Exception {
    try (RedisBackend backend = openBackend("rt-4")) {
      Poll first = backend.attempt("retried", "rt-4:1", Duration.ofSeconds(10), () -> {}).poll();
      Poll again = backend.attempt("retried", "rt-4:1", Duration.ofSeconds(10), () -> {}).poll();
      assertThat(again.isGranted()).isTrue();
      assertThat(again.fencingToken()).isEqualTo(first.fencingToken());
      Poll other = backend.attempt("retried", "rt-4:2", Duration.ofSeconds(10), () -> {}).poll();
      assertThat(other.isGranted()).isFalse();
      assertThat(other.retryAfter())
          .as("busy with the holder's remaining lease")
          .isGreaterThan(Duration.ofSeconds(5))
          .isLessThanOrEqualTo(Duration.ofSeconds(10).plusMillis(1));
    }
  }

  private static Map<String, Long> commandCalls(Jedis admin) {
    Map<String, Long> calls = new TreeMap<>();
    for (String line : admin.info("commandstats").split("\r?\n")) {
      if (line.startsWith("cmdstat_")) {
        String cmd = line.substring("cmdstat_".length(), line.indexOf(':'));
        String stats = line.substring(line.indexOf(':') + 1);
        for (String part : stats.split(",")) {
          if (part.startsWith("calls=")) {
            calls.put(cmd, Long.parseLong(part.substring("calls=".length())));
          }
        }
      }
    }
    return calls;
  }
}
