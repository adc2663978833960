package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.DistributedLock;
import dev.locksmith.Holder;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.redis.RedisServerExtension;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code lockctl status} against a real redis-server, the lock held or not by the test's own
 * client.
 */
class LockctlStatusIT {
  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("lockctl");

  static RedisFixture redis;
  static LockClient client;

  @BeforeAll
  static void startRedis() {
    redis = RedisFixture.on(REDIS);
    client = Locks.connect(redis.uri());
  }

  @AfterAll
  static void stopRedis() {
    if (client != null) {
      client.close();
    }
    if (redis != null) {
      redis.close();
    }
  }

  @Test
  void aFreeLockIsReportedFreeWithExit0AndNothingIsWritten() throws Exception {
    long before;
    try (Lease lease = client.lock("status/free").acquire(Duration.ofSeconds(5))) {
      before = lease.fencingToken();
    }
    Lockctl.Result r = Lockctl.run("status", "--backend", redis.uri(), "status/free");
    assertThat(r.exit).as("%s", r).isZero();
    assertThat(r.out)
        .contains("lock:            status/free", "state:           free")
        .doesNotContain("probe");
    try (Lease next = client.lock("status/free").acquire(Duration.ofSeconds(5))) {
      assertThat(next.fencingToken())
          .as("the read advanced no fence counter")
          .isEqualTo(before + 1);
    }
  }

  @Test
  void aHeldLockIsReportedWithTheHoldersTokenLeaseAndOwnerAndExit75() throws Exception {
    try (Lease lease = client.lock("status/held").acquire(Duration.ofSeconds(5))) {
      Lockctl.Result r = Lockctl.run("status", "--backend", redis.uri(), "status/held");
      assertThat(r.exit).as("%s", r).isEqualTo(75);
      assertThat(r.out)
          .contains(
              "state:           held",
              "fencing token:   " + lease.fencingToken(),
              "holder:          " + client.config().application() + " on ",
              "(pid "
                  + ProcessHandle.current().pid()
                  + ", thread "
                  + Thread.currentThread().getName(),
              "owner id:        " + client.config().application() + "@");
      Matcher left =
          Pattern.compile("remaining lease: ([0-9.]+)(ms|s) unless renewed").matcher(r.out);
      assertThat(left.find()).as("%s", r).isTrue();
      double ms = Double.parseDouble(left.group(1)) * (left.group(2).equals("s") ? 1000 : 1);
      assertThat(ms).as("the rest of a 30 s lease").isPositive().isLessThanOrEqualTo(30_000);
      assertThat(lease.isValid()).isTrue();
      assertThat(lease.release()).as("the read took nothing of ours").isTrue();
    }
  }

  @Test
  void aLockHeldByLockctlExecNamesLockctlItsPidAndHost() throws Exception {
    Lockctl exec =
        Lockctl.start(
            "exec", "--backend", redis.uri(), "--name", "status/exec", "--", "sleep", "30");
    try {
      DistributedLock lock = client.lock("status/exec");
      Lockctl.await("lockctl exec holds the lock", Duration.ofSeconds(30), () -> held(lock));
      Holder who = lock.state().holderIdentity().orElseThrow();
      assertThat(who.application()).isEqualTo("lockctl");
      assertThat(who.pid()).isEqualTo(exec.pid());
      assertThat(who.thread()).isEqualTo("main");
      Lockctl.Result r = Lockctl.run("status", "--backend", redis.uri(), "status/exec");
      assertThat(r.out)
          .as("%s", r)
          .contains(
              "holder:          lockctl on "
                  + who.host()
                  + " (pid "
                  + exec.pid()
                  + ", thread main) asked at ");
    } finally {
      exec.signal("TERM");
      exec.finish(Duration.ofSeconds(30));
    }
  }

  private static boolean held(DistributedLock lock) {
    return lock.state().isHeld();
  }

  @Test
  void onABackendThatCannotReadStateAProbeAnswers() throws Exception {
    // Redlock reads no lock state (a majority read would be needed): status probes with one
    // acquire.
    try (RedisFixture second = RedisFixture.start();
        RedisFixture third = RedisFixture.start()) {
      probe(
          "redlock://127.0.0.1:"
              + redis.port
              + ",127.0.0.1:"
              + second.port
              + ",127.0.0.1:"
              + third.port);
    }
  }

  private static void probe(String redlock) throws Exception {
    try (LockClient other = Locks.connect(redlock)) {
      Lockctl.Result free = Lockctl.run("status", "--backend", redlock, "status/probed");
      assertThat(free.exit).as("%s", free).isZero();
      Matcher m = Pattern.compile("the probe got token (\\d+)").matcher(free.out);
      assertThat(m.find()).as("%s", free).isTrue();
      long probe = Long.parseLong(m.group(1));
      try (Lease lease = other.lock("status/probed").acquire(Duration.ofSeconds(5))) {
        assertThat(lease.fencingToken())
            .as("the next holder's token is greater than the probe's")
            .isGreaterThan(probe);
        Lockctl.Result held = Lockctl.run("status", "--backend", redlock, "status/probed");
        assertThat(held.exit).as("%s", held).isEqualTo(75);
        assertThat(held.out)
            .contains(
                "state:           held (probed", "fencing token:   not readable on this backend");
        assertThat(lease.release()).as("the probe took nothing of ours").isTrue();
      }
    }
  }

  @Test
  void theBackendCanComeFromLocksmithUriAndBadLinesAre2() throws Exception {
    Lockctl.Result local = Lockctl.run("status", "--backend", "local:", "x");
    assertThat(local.exit).as("%s", local).isZero();
    assertThat(local.out).contains("state:           free", "in-process");
    Lockctl.Result none = Lockctl.run("status", "--backend", redis.uri());
    assertThat(none.exit).isEqualTo(2);
    assertThat(none.err)
        .startsWith("lockctl status: no lock name")
        .contains("usage: lockctl status");
    Lockctl.Result two = Lockctl.run("status", "--backend", redis.uri(), "a", "b");
    assertThat(two.exit).isEqualTo(2);
    assertThat(Lockctl.run("status", "--help").out).contains("usage: lockctl status", "75 held");
  }
}
