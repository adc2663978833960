package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.redis.RedisServerExtension;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code lockctl elect} and {@code lockctl leader} as a user runs them: two real lockctl JVMs
 * campaign in one election on a real redis-server, one runs its command as leader while the other
 * waits, and takes over with a higher term when the leader is stopped.
 */
class LockctlElectIT {
  private static final Duration SOON = Duration.ofSeconds(30);

  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("lockctl-elect");

  static RedisFixture redis;

  @TempDir Path dir;

  @BeforeAll
  static void connect() {
    redis = RedisFixture.on(REDIS);
  }

  @AfterAll
  static void disconnect() {
    if (redis != null) {
      redis.close();
    }
  }

  /** As LockctlExecIT: a lockctl JVM on a loaded machine may take a while to connect. */
  static String backendUri() {
    return redis.uri() + "?connect-timeout=15s";
  }

  /**
   * A leader's command: writes its term, token and identity to FILE, then sleeps until it is
   * signalled.
   *
   * @param identity the --identity, or null for the default
   */
  private Lockctl candidate(String election, String file, String identity) throws Exception {
    List<String> argv =
        new ArrayList<>(
            List.of("elect", "--backend", backendUri(), "--name", election, "--lease", "30s"));
    if (identity != null) {
      argv.addAll(List.of("--identity", identity));
    }
    argv.addAll(
        List.of(
            "--",
            "sh",
            "-c",
            "echo \"$LOCKSMITH_LEADER_TERM $LOCKSMITH_FENCING_TOKEN $LOCKSMITH_LEADER_IDENTITY\" >"
                + " \"$0.tmp\"; mv \"$0.tmp\" \"$0\"; exec sleep 300",
            dir.resolve(file).toString()));
    return Lockctl.start(argv.toArray(new String[0]));
  }

  private Lockctl candidate(String election, String file) throws Exception {
    return candidate(election, file, null);
  }

  private String read(String file) throws Exception {
    return Files.readString(dir.resolve(file), StandardCharsets.UTF_8).trim();
  }

  @Test
  void oneCandidateLeadsTheOtherTakesOverWithAHigherTermWhenItStops(TestInfo info)
      throws Exception {
    String election = "lockctl-elect/" + info.getTestMethod().orElseThrow().getName();
    Lockctl a = candidate(election, "a", "web-1");
    Lockctl b = null;
    try {
      Lockctl.await("the first candidate leads", SOON, () -> Files.exists(dir.resolve("a")));
      String[] aTerms = read("a").split(" ");
      assertThat(aTerms[0]).as("LOCKSMITH_LEADER_TERM is the fencing token").isEqualTo(aTerms[1]);
      assertThat(aTerms[2]).as("LOCKSMITH_LEADER_IDENTITY").isEqualTo("web-1");
      long aTerm = Long.parseLong(aTerms[0]);

      b = candidate(election, "b");
      Lockctl.Result led = Lockctl.run("leader", "--backend", backendUri(), election);
      assertThat(led.exit).as("%s", led).isZero();
      assertThat(led.out)
          .contains("leader:          yes")
          .contains("identity:        web-1\n")
          .contains("term:            " + aTerm);
      Thread.sleep(2000); // the second candidate has connected and campaigns, in vain
      assertThat(Files.exists(dir.resolve("b")))
          .as("a second leader while the first leads")
          .isFalse();
      assertThat(b.isAlive()).as("the second candidate keeps campaigning").isTrue();

      a.signal("TERM");
      Lockctl.Result aEnd = a.finish(SOON);
      assertThat(aEnd.exit).as("the leader's CMD died of SIGTERM: %s", aEnd).isEqualTo(128 + 15);
      Lockctl.await("the second candidate takes over", SOON, () -> Files.exists(dir.resolve("b")));
      String[] bTerms = read("b").split(" ");
      long bTerm = Long.parseLong(bTerms[0]);
      assertThat(bTerm).as("the new leader's term").isGreaterThan(aTerm);
      assertThat(bTerms[2]).as("the default identity").matches("lockctl-[0-9]+");
      Lockctl.Result now = Lockctl.run("leader", "--backend", backendUri(), election);
      assertThat(now.out)
          .as("%s", now)
          .contains("identity:        " + bTerms[2] + "\n")
          .contains("term:            " + bTerm);

      b.signal("TERM");
      assertThat(b.finish(SOON).exit).isEqualTo(128 + 15);
      Lockctl.Result none = Lockctl.run("leader", "--backend", backendUri(), election);
      assertThat(none.exit).as("%s", none).isEqualTo(Main.TEMPFAIL);
      assertThat(none.out).contains("leader:          none");
    } finally {
      for (Lockctl l : new Lockctl[] {a, b}) {
        if (l != null && l.isAlive()) {
          l.signal("KILL");
        }
      }
    }
  }

  @Test
  void aCandidateSignalledWhileCampaigningWithdrawsWithoutRunningItsCommand(TestInfo info)
      throws Exception {
    String election = "lockctl-elect/" + info.getTestMethod().orElseThrow().getName();
    Lockctl a = candidate(election, "a");
    Lockctl b = null;
    try {
      Lockctl.await("the first candidate leads", SOON, () -> Files.exists(dir.resolve("a")));
      b = candidate(election, "b");
      Thread.sleep(2000);
      b.signal("INT");
      Lockctl.Result bEnd = b.finish(SOON);
      assertThat(bEnd.exit).as("%s", bEnd).isEqualTo(128 + 2);
      assertThat(Files.exists(dir.resolve("b"))).as("the withdrawn candidate's CMD ran").isFalse();
      assertThat(a.isAlive()).as("the leader leads on").isTrue();
    } finally {
      for (Lockctl l : new Lockctl[] {a, b}) {
        if (l != null && l.isAlive()) {
          l.signal("KILL");
        }
      }
    }
  }

  @Test
  void badCommandLinesAreRefusedWithStatus2() throws Exception {
    String[][] cases = {
      {"elect", "--backend", "local:", "--name", "a", "--name", "b", "--", "true"},
      {"elect", "--backend", "local:", "--name", "a", "--wait", "5s", "--", "true"},
      {"elect", "--backend", "local:", "--", "true"},
      {"elect", "--backend", "local:", "--name", "a"},
      {"elect", "--backend", "local:", "--name", "a", "--identity", "web 1", "--", "true"},
      {"elect", "--backend", "local:", "--name", "a", "--identity", "x".repeat(41), "--", "true"},
      {"exec", "--backend", "local:", "--name", "a", "--identity", "web-1", "--", "true"},
      {"leader", "--backend", "local:"},
      {"leader", "--backend", "local:", "a", "b"},
    };
    for (String[] c : cases) {
      Lockctl.Result r = Lockctl.run(c);
      assertThat(r.exit).as("lockctl %s: %s", String.join(" ", c), r).isEqualTo(Main.USAGE);
      assertThat(r.err).startsWith("lockctl " + c[0] + ": ").contains("usage: lockctl " + c[0]);
    }
  }

  @Test
  void helpDocumentsTheTermAndTheExitStatuses() throws Exception {
    Lockctl.Result elect = Lockctl.run("elect", "--help");
    assertThat(elect.exit).isZero();
    assertThat(elect.out)
        .contains("LOCKSMITH_LEADER_TERM")
        .contains("LOCKSMITH_LEADER_IDENTITY")
        .contains("--identity ID")
        .contains("76")
        .contains("128+N");
    Lockctl.Result leader = Lockctl.run("help", "leader");
    assertThat(leader.exit).isZero();
    assertThat(leader.out).contains("75 no leader").contains("never takes the leadership");
    assertThat(Lockctl.run("help").out).contains("elect").contains("leader");
  }
}
