package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.redis.RedisServerExtension;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code lockctl break} against a real redis-server, the lock held by the test's own client. */
class LockctlBreakIT {
  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("lockctl-break");

  static RedisFixture redis;
  static LockClient client;

  @BeforeAll
  static void startRedis() {
    redis = RedisFixture.on(REDIS);
    client = Locks.connect(redis.uri() + "?lease=3s&application=break-it");
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
  void breakingShowsTheHolderFreesTheLockAndTheHolderLosesItsLease() throws Exception {
    Lease lease = client.lock("break/held").acquire(Duration.ofSeconds(5));
    Lockctl.Result r =
        Lockctl.run(
            "break", "--backend", redis.uri(), "break/held", "--reason", "host died", "--yes");
    assertThat(r.exit).as("%s", r).isZero();
    assertThat(r.out)
        .contains(
            "state:           held",
            "fencing token:   " + lease.fencingToken() + " (the next holder's is higher)",
            "holder:          break-it on ",
            "break:           done");
    LeaseLostException lost =
        lease.lost().toCompletableFuture().get(10, TimeUnit.SECONDS); // its next renewal (1 s)
    assertThat(lost).isNotNull();
    assertThat(lease.isValid()).isFalse();
    try (Lease next = client.lock("break/held").tryAcquire().orElseThrow()) {
      assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
    }
  }

  @Test
  void withoutYesItAsksAndAnythingButYesChangesNothing() throws Exception {
    try (Lease lease = client.lock("break/ask").acquire(Duration.ofSeconds(5))) {
      Lockctl.Result no =
          Lockctl.runWithInput(
              "no\n", "break", "--backend", redis.uri(), "break/ask", "--reason", "test");
      assertThat(no.exit).as("%s", no).isEqualTo(1);
      assertThat(no.out).contains("type yes to confirm", "not confirmed; nothing was changed");
      Lockctl.Result eof =
          Lockctl.runWithInput("", "break", "--backend", redis.uri(), "break/ask", "--reason", "x");
      assertThat(eof.exit).as("%s", eof).isEqualTo(1);
      assertThat(lease.isValid()).isTrue();
      assertThat(client.lock("break/ask").state().isHeld()).isTrue();
      Lockctl.Result yes =
          Lockctl.runWithInput(
              "yes\n", "break", "--backend", redis.uri(), "break/ask", "--reason", "test");
      assertThat(yes.exit).as("%s", yes).isZero();
      assertThat(client.lock("break/ask").state().isHeld()).isFalse();
    }
  }

  @Test
  void aFreeLockHasNothingToBreakAndABadCommandLineIsRefused() throws Exception {
    Lockctl.Result free =
        Lockctl.run("break", "--backend", redis.uri(), "break/free", "--reason", "x", "--yes");
    assertThat(free.exit).as("%s", free).isEqualTo(75);
    assertThat(free.out).contains("free: nothing to break");
    Lockctl.Result noReason = Lockctl.run("break", "--backend", redis.uri(), "break/free", "--yes");
    assertThat(noReason.exit).as("%s", noReason).isEqualTo(2);
    assertThat(noReason.err).contains("--reason was missing");
    Lockctl.Result noName = Lockctl.run("break", "--backend", redis.uri(), "--reason", "x");
    assertThat(noName.exit).as("%s", noName).isEqualTo(2);
    Lockctl.Result help = Lockctl.run("help", "break");
    assertThat(help.out).contains("usage: lockctl break").contains("--reason TEXT");
  }
}
