package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.Locks;
import dev.locksmith.redis.RedisServerExtension;
import dev.locksmith.tck.ServerProcess;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code lockctl exec} as a user runs it: the real jar in its own JVM, its command a real shell
 * script, the lock on {@code local:} and on a real redis-server of the test's own, probed from the
 * test with the library.
 */
class LockctlExecIT {
  private static final Duration SOON = Duration.ofSeconds(20);

  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("lockctl");

  static RedisFixture redis;
  static LockClient probe;

  @TempDir Path dir;

  @BeforeAll
  static void connect() {
    redis = RedisFixture.on(REDIS);
    probe = Locks.connect(redis.uri());
  }

  @AfterAll
  static void disconnect() {
    if (probe != null) {
      probe.close();
    }
    if (redis != null) {
      redis.close();
    }
  }

  /**
   * The redis URI each lockctl JVM is given: a JVM started on a loaded machine (two builds on two
   * cores) can take longer than the default connect timeout of 2 s to connect, which is not what
   * these tests are about.
   */
  static String backendUri() {
    return redis.uri() + "?connect-timeout=15s";
  }

  static String lockName(TestInfo info) {
    return "lockctl-it/" + info.getTestMethod().orElseThrow().getName();
  }

  /** One attempt from the test's own client; released at once. */
  static Optional<Long> probeToken(String name) {
    Optional<Lease> lease =
        probe
            .lock(name, LockOptions.builder().autoRenew(false).reentrant(false).build())
            .tryAcquire();
    lease.ifPresent(Lease::close);
    return lease.map(Lease::fencingToken);
  }

  String read(String file) throws Exception {
    return Files.readString(dir.resolve(file), StandardCharsets.UTF_8);
  }

  boolean exists(String file) {
    return Files.exists(dir.resolve(file));
  }

  @Nested
  class OnLocal {
    @Test
    void exportsTheTokenAndNameAndExitsWithTheCommandsStatus() throws Exception {
      Lockctl.Result r =
          Lockctl.run(
              "exec",
              "--backend",
              "local:",
              "--name",
              "jobs/report",
              "--",
              "sh",
              "-c",
              "echo \"name=$LOCKSMITH_LOCK_NAME token=$LOCKSMITH_FENCING_TOKEN\"; exit 7");
      assertThat(r.exit).as("%s", r).isEqualTo(7);
      assertThat(r.out).matches("name=jobs/report token=[1-9][0-9]*\\n");
      assertThat(r.err).contains("local: locks are in-process");
    }

    @Test
    void aCommandThatDiesOfASignalGives128PlusTheSignal() throws Exception {
      Lockctl.Result r =
          Lockctl.run("exec", "--backend", "local:", "--name", "x", "--", "sh", "-c", "kill -9 $$");
      assertThat(r.exit).as("%s", r).isEqualTo(128 + 9);
    }

    @Test
    void aMissingCommandIs127AndANonExecutableOneIs126() throws Exception {
      Lockctl.Result missing =
          Lockctl.run("exec", "--backend", "local:", "--name", "x", "--", "no-such-command-here");
      assertThat(missing.exit).as("%s", missing).isEqualTo(127);
      assertThat(missing.err).contains("cannot run 'no-such-command-here'");
      Path plain = Files.writeString(dir.resolve("not-executable.sh"), "echo hi\n");
      Lockctl.Result denied =
          Lockctl.run("exec", "--backend", "local:", "--name", "x", "--", plain.toString());
      assertThat(denied.exit).as("%s", denied).isEqualTo(126);
    }

    @Test
    void badCommandLinesPrintOneLineAndTheSynopsisWithStatus2() throws Exception {
      String[][] cases = {
        {"exec", "--backend", "local:", "--", "true"},
        {"exec", "--backend", "local:", "--name", "x"},
        {"exec", "--backend", "local:", "--name", "x", "--on-loss", "pray", "--", "true"},
        {"exec", "--backend", "local:", "--name", "x", "--wait", "soon", "--", "true"},
        {"exec", "--backend", "local:", "--name", "x", "true"},
        {"exec", "--name", "x", "--", "true"},
      };
      String[] messages = {
        "lockctl exec: --name is required",
        "lockctl exec: no command: give CMD [ARGS...] after --",
        "lockctl exec: --on-loss was 'pray' but it must be term, kill or none",
        "lockctl exec: --wait was 'soon' but it must be a duration from 0 to 7d",
        "lockctl exec: unexpected argument 'true'; put the command after --",
        "lockctl exec: no backend: give --backend URI, --config FILE, or set LOCKSMITH_URI",
      };
      for (int i = 0; i < cases.length; i++) {
        Lockctl.Result r = Lockctl.run(cases[i]);
        assertThat(r.exit).as("%s: %s", String.join(" ", cases[i]), r).isEqualTo(2);
        assertThat(r.err).startsWith(messages[i]).contains("usage: lockctl exec");
      }
    }

    @Test
    void helpDocumentsTheExitStatuses() throws Exception {
      Lockctl.Result r = Lockctl.run("exec", "--help");
      assertThat(r.exit).isZero();
      assertThat(r.out)
          .contains("usage: lockctl exec", "LOCKSMITH_FENCING_TOKEN", "75", "76", "69", "78");
      assertThat(Lockctl.run("--help").out).contains("exec", "status", "76");
    }

    @Test
    void severalNamesGiveEachNamesTokenInTheOrderGiven() throws Exception {
      Lockctl.Result r =
          Lockctl.run(
              "exec",
              "--backend",
              "local:",
              "--name",
              "jobs/b",
              "--name",
              "jobs/a",
              "--verbose",
              "--",
              "sh",
              "-c",
              "echo \"$LOCKSMITH_LOCK_COUNT $LOCKSMITH_LOCK_NAME_1=$LOCKSMITH_FENCING_TOKEN_1"
                  + " $LOCKSMITH_LOCK_NAME_2=$LOCKSMITH_FENCING_TOKEN_2"
                  + " first=$LOCKSMITH_LOCK_NAME:$LOCKSMITH_FENCING_TOKEN\"");
      assertThat(r.exit).as("%s", r).isZero();
      Matcher m =
          Pattern.compile("2 jobs/b=([1-9][0-9]*) jobs/a=([1-9][0-9]*) first=jobs/b:([0-9]+)\\n")
              .matcher(r.out);
      assertThat(m.matches()).as("%s", r).isTrue();
      assertThat(m.group(3))
          .as("LOCKSMITH_FENCING_TOKEN is the first --name's")
          .isEqualTo(m.group(1));
      assertThat(r.err)
          .contains(
              "acquired locks 'jobs/b', 'jobs/a', fencing tokens " + m.group(1) + ", " + m.group(2))
          .contains("released locks 'jobs/b', 'jobs/a'; CMD exited with 0");
    }

    @Test
    void oneNameAlsoGetsTheNumberedVariables() throws Exception {
      Lockctl.Result r =
          Lockctl.run(
              "exec",
              "--backend",
              "local:",
              "--name",
              "solo",
              "--",
              "sh",
              "-c",
              "echo \"$LOCKSMITH_LOCK_COUNT $LOCKSMITH_LOCK_NAME_1 $LOCKSMITH_FENCING_TOKEN_1"
                  + " $LOCKSMITH_LOCK_NAME $LOCKSMITH_FENCING_TOKEN\"");
      assertThat(r.exit).as("%s", r).isZero();
      assertThat(r.out).matches("1 solo ([1-9][0-9]*) solo \\1\\n");
    }

    @Test
    void aNameGivenTwiceOrABadOneAmongSeveralIsABadCommandLine() throws Exception {
      Lockctl.Result twice =
          Lockctl.run(
              "exec",
              "--backend",
              "local:",
              "--name",
              "a",
              "--name",
              "b",
              "--name",
              "a",
              "--",
              "true");
      assertThat(twice.exit).as("%s", twice).isEqualTo(2);
      assertThat(twice.err)
          .startsWith("lockctl exec: --name was 'a' twice but each lock is named once")
          .contains("usage: lockctl exec");
      Lockctl.Result bad =
          Lockctl.run("exec", "--backend", "local:", "--name", "a", "--name", "", "--", "true");
      assertThat(bad.exit).as("%s", bad).isEqualTo(2);
      assertThat(bad.err).startsWith("lockctl exec: --name: `name` was ''");
    }

    @Test
    void helpSaysHowEachNamesTokenIsPassed() throws Exception {
      Lockctl.Result r = Lockctl.run("exec", "--help");
      assertThat(r.exit).isZero();
      assertThat(r.out)
          .contains(
              "--name NAME [--name NAME ...]",
              "LOCKSMITH_FENCING_TOKEN_i",
              "LOCKSMITH_LOCK_NAME_i",
              "LOCKSMITH_LOCK_COUNT",
              "all or none");
    }
  }

  @Nested
  class OnRedis {
    @Test
    void holdsTheLockWhileTheCommandRunsAndReleasesItAfter(TestInfo info) throws Exception {
      String name = lockName(info);
      Lockctl lockctl =
          Lockctl.start(
              "exec",
              "--backend",
              backendUri(),
              "--name",
              name,
              "--lease",
              "2s",
              "--",
              "sh",
              "-c",
              "cd '"
                  + dir
                  + "'; echo $LOCKSMITH_FENCING_TOKEN > token.tmp && mv token.tmp token; "
                  + "while [ ! -f go ]; do sleep 0.05; done; echo done");
      Lockctl.await("the command has started", SOON, () -> exists("token"));
      long token = Long.parseLong(read("token").trim());
      assertThat(probeToken(name)).as("the lock is held while the command runs").isEmpty();
      Files.createFile(dir.resolve("go"));
      Lockctl.Result r = lockctl.finish(SOON);
      assertThat(r.exit).as("%s", r).isZero();
      assertThat(probeToken(name))
          .as("released after the command, with a higher token next")
          .hasValueSatisfying(next -> assertThat(next).isGreaterThan(token));
    }

    @Test
    void notAcquiredInTimeIs75AndTheCommandDoesNotRun(TestInfo info) throws Exception {
      String name = lockName(info);
      try (Lease held = probe.lock(name).acquire(Duration.ofSeconds(5))) {
        Lockctl.Result r =
            Lockctl.run(
                "exec",
                "--backend",
                backendUri(),
                "--name",
                name,
                "--wait",
                "300ms",
                "--",
                "touch",
                dir.resolve("ran").toString());
        assertThat(r.exit).as("%s", r).isEqualTo(75);
        assertThat(r.err)
            .contains("lock '" + name + "' is held by someone else; not acquired within 300ms");
        Lockctl.Result once =
            Lockctl.run(
                "exec",
                "--backend",
                backendUri(),
                "--name",
                name,
                "--wait",
                "0",
                "--",
                "touch",
                dir.resolve("ran").toString());
        assertThat(once.exit).as("%s", once).isEqualTo(75);
        assertThat(exists("ran")).isFalse();
        assertThat(held.isValid()).isTrue();
      }
    }

    @Test
    void waitsForTheHolderToRelease(TestInfo info) throws Exception {
      String name = lockName(info);
      Lease held = probe.lock(name).acquire(Duration.ofSeconds(5));
      Lockctl lockctl =
          Lockctl.start(
              "exec",
              "--backend",
              backendUri(),
              "--name",
              name,
              "--wait",
              "30s",
              "--verbose",
              "--",
              "sh",
              "-c",
              "echo ran with $LOCKSMITH_FENCING_TOKEN");
      Lockctl.await(
          "lockctl is waiting",
          SOON,
          () -> lockctl.stderrSoFar().contains("is held; waiting up to 30s"));
      held.release();
      Lockctl.Result r = lockctl.finish(SOON);
      assertThat(r.exit).as("%s", r).isZero();
      assertThat(r.out).isEqualTo("ran with " + extractToken(r.err) + "\n");
      assertThat(extractToken(r.err)).isGreaterThan(held.fencingToken());
    }

    @Test
    void losingTheLeaseSendsSigtermAndExits76(TestInfo info) throws Exception {
      String name = lockName(info);
      Lockctl lockctl =
          Lockctl.start(
              "exec",
              "--backend",
              backendUri(),
              "--name",
              name,
              "--lease",
              "1s",
              "--",
              "sh",
              "-c",
              "cd '"
                  + dir
                  + "'; trap 'echo TERM > signalled; exit 9' TERM; touch started; while :; do sleep"
                  + " 0.05; done");
      Lockctl.await("the command has started", SOON, () -> exists("started"));
      redis.revoke(name);
      Lockctl.Result r = lockctl.finish(SOON);
      assertThat(r.exit).as("%s", r).isEqualTo(76);
      assertThat(read("signalled")).isEqualTo("TERM\n");
      assertThat(r.err)
          .contains("lease on lock '" + name + "'", "was lost: TAKEN", "sent SIGTERM to CMD");
    }

    @Test
    void aCommandThatIgnoresSigtermIsKilledAfterTheGrace(TestInfo info) throws Exception {
      String name = lockName(info);
      Lockctl lockctl =
          Lockctl.start(
              "exec",
              "--backend",
              backendUri(),
              "--name",
              name,
              "--lease",
              "1s",
              "--grace",
              "500ms",
              "--",
              "sh",
              "-c",
              "cd '"
                  + dir
                  + "'; trap '' TERM; echo $$ > pid.tmp; mv pid.tmp pid; while :; do sleep 0.05;"
                  + " done");
      Lockctl.await("the command has started", SOON, () -> exists("pid"));
      long pid = Long.parseLong(read("pid").trim());
      redis.revoke(name);
      Lockctl.Result r = lockctl.finish(SOON);
      assertThat(r.exit).as("%s", r).isEqualTo(76);
      assertThat(r.err)
          .contains("sent SIGTERM to CMD", "still ran 500ms after SIGTERM: sending SIGKILL");
      assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false))
          .as("the command's shell is gone")
          .isFalse();
    }

    @Test
    void withOnLossNoneTheCommandFinishesAndTheStatusStill76(TestInfo info) throws Exception {
      String name = lockName(info);
      Lockctl lockctl =
          Lockctl.start(
              "exec",
              "--backend",
              backendUri(),
              "--name",
              name,
              "--lease",
              "1s",
              "--on-loss",
              "none",
              "--",
              "sh",
              "-c",
              "cd '"
                  + dir
                  + "'; touch started; while [ ! -f go ]; do sleep 0.05; done; echo finished");
      Lockctl.await("the command has started", SOON, () -> exists("started"));
      redis.revoke(name);
      Lockctl.await(
          "lockctl reported the loss",
          SOON,
          () -> lockctl.stderrSoFar().contains("keeps running, as --on-loss none asks"));
      Files.createFile(dir.resolve("go"));
      Lockctl.Result r = lockctl.finish(SOON);
      assertThat(r.exit).as("%s", r).isEqualTo(76);
      assertThat(r.out).isEqualTo("finished\n");
      assertThat(r.err).contains("keeps running, as --on-loss none asks");
    }

    @Test
    void sigtermIsForwardedAndTheLockReleasedBeforeExiting(TestInfo info) throws Exception {
      signalIsForwardedAndTheLockReleased(lockName(info), "TERM");
    }

    @Test
    void sigintIsForwardedAndTheLockReleasedBeforeExiting(TestInfo info) throws Exception {
      signalIsForwardedAndTheLockReleased(lockName(info), "INT");
    }

    private void signalIsForwardedAndTheLockReleased(String name, String signal) throws Exception {
      // a lease far longer than the test: the lock is free afterwards only if lockctl released it
      Lockctl lockctl =
          Lockctl.start(
              "exec",
              "--backend",
              backendUri(),
              "--name",
              name,
              "--lease",
              "5m",
              "--",
              "sh",
              "-c",
              "cd '"
                  + dir
                  + "'; trap 'echo "
                  + signal
                  + " > signalled; exit 5' "
                  + signal
                  + "; touch started; while :; do sleep 0.05; done");
      Lockctl.await("the command has started", SOON, () -> exists("started"));
      assertThat(probeToken(name)).isEmpty();
      lockctl.signal(signal);
      Lockctl.Result r = lockctl.finish(SOON);
      assertThat(r.exit).as("lockctl exits with the command's status; %s", r).isEqualTo(5);
      assertThat(read("signalled")).isEqualTo(signal + "\n");
      assertThat(probeToken(name))
          .as("released by lockctl, not expired (the lease is 5m)")
          .isPresent();
    }

    @Test
    void aSignalWhileWaitingWithdrawsAndTheCommandNeverRuns(TestInfo info) throws Exception {
      String name = lockName(info);
      try (Lease held = probe.lock(name).acquire(Duration.ofSeconds(5))) {
        Lockctl lockctl =
            Lockctl.start(
                "exec",
                "--backend",
                backendUri(),
                "--name",
                name,
                "--wait",
                "60s",
                "--verbose",
                "--",
                "touch",
                dir.resolve("ran").toString());
        Lockctl.await(
            "lockctl is waiting",
            SOON,
            () -> lockctl.stderrSoFar().contains("is held; waiting up to 1m"));
        lockctl.signal("TERM");
        Lockctl.Result r = lockctl.finish(SOON);
        assertThat(r.exit).as("%s", r).isEqualTo(128 + 15);
        assertThat(exists("ran")).isFalse();
        assertThat(held.isValid()).isTrue();
      }
    }

    @Test
    void anUnreachableBackendIs69AndABadSettingIs78() throws Exception {
      int closed = ServerProcess.freePort();
      Lockctl.Result r =
          Lockctl.run(
              "exec", "--backend", "redis://127.0.0.1:" + closed, "--name", "x", "--", "true");
      assertThat(r.exit).as("%s", r).isEqualTo(69);
      assertThat(r.err).contains("127.0.0.1:" + closed);
      Lockctl.Result bad =
          Lockctl.run(
              "exec",
              "--backend",
              "redis://127.0.0.1:" + closed + "?colour=blue",
              "--name",
              "x",
              "--",
              "true");
      assertThat(bad.exit).as("%s", bad).isEqualTo(78);
      assertThat(bad.err).contains("`colour` was '****'");
    }

    @Test
    void severalNamesAreAllHeldWhileTheCommandRunsAndAllReleasedAfter(TestInfo info)
        throws Exception {
      String b = lockName(info) + "/b";
      String a = lockName(info) + "/a";
      Lockctl lockctl =
          Lockctl.start(
              "exec",
              "--backend",
              backendUri(),
              "--name",
              b,
              "--name",
              a,
              "--",
              "sh",
              "-c",
              "cd '"
                  + dir
                  + "'; echo $LOCKSMITH_FENCING_TOKEN_1 $LOCKSMITH_FENCING_TOKEN_2 > token.tmp"
                  + " && mv token.tmp token; while [ ! -f go ]; do sleep 0.05; done");
      Lockctl.await("the command has started", SOON, () -> exists("token"));
      String[] tokens = read("token").trim().split(" ");
      assertThat(probeToken(b)).as("'%s' while the command runs", b).isEmpty();
      assertThat(probeToken(a)).as("'%s' while the command runs", a).isEmpty();
      Files.createFile(dir.resolve("go"));
      Lockctl.Result r = lockctl.finish(SOON);
      assertThat(r.exit).as("%s", r).isZero();
      assertThat(probeToken(b))
          .as("'%s' released after the command", b)
          .hasValueSatisfying(next -> assertThat(next).isGreaterThan(Long.parseLong(tokens[0])));
      assertThat(probeToken(a))
          .as("'%s' released after the command", a)
          .hasValueSatisfying(next -> assertThat(next).isGreaterThan(Long.parseLong(tokens[1])));
    }

    @Test
    void oneBusyNameIs75AndNoneOfTheOthersIsKept(TestInfo info) throws Exception {
      String a = lockName(info) + "/a";
      String c = lockName(info) + "/c";
      try (Lease held = probe.lock(c).acquire(Duration.ofSeconds(5))) {
        Lockctl.Result r =
            Lockctl.run(
                "exec",
                "--backend",
                backendUri(),
                "--name",
                a,
                "--name",
                c,
                "--wait",
                "300ms",
                "--",
                "touch",
                dir.resolve("ran").toString());
        assertThat(r.exit).as("%s", r).isEqualTo(75);
        assertThat(r.err)
            .contains(
                "locks '"
                    + a
                    + "', '"
                    + c
                    + "': one or more is held by someone else, so none is kept; not acquired"
                    + " within 300ms");
        assertThat(exists("ran")).isFalse();
        assertThat(probeToken(a)).as("'%s', taken first, was given back", a).isPresent();
        assertThat(held.isValid()).isTrue();
      }
    }

    @Test
    void twoExecsWithTheSameNamesInReversedOrdersTakeTurns(TestInfo info) throws Exception {
      String x = lockName(info) + "/x";
      String y = lockName(info) + "/y";
      String body =
          "cd '"
              + dir
              + "'; mkdir inside 2>/dev/null || echo overlap >> overlaps; sleep 0.5;"
              + " rmdir inside; echo done >> finished";
      List<Lockctl> both = new ArrayList<>();
      for (int round = 0; round < 2; round++) {
        for (List<String> order : List.of(List.of(x, y), List.of(y, x))) {
          both.add(
              Lockctl.start(
                  "exec",
                  "--backend",
                  backendUri(),
                  "--name",
                  order.get(0),
                  "--name",
                  order.get(1),
                  "--wait",
                  "30s",
                  "--",
                  "sh",
                  "-c",
                  body));
        }
      }
      for (Lockctl l : both) {
        Lockctl.Result r = l.finish(Duration.ofSeconds(60));
        assertThat(r.exit).as("%s", r).isZero();
      }
      assertThat(read("finished").lines()).hasSize(4);
      assertThat(exists("overlaps")).as("two commands held the names at once").isFalse();
    }
  }

  private static long extractToken(String verboseErr) {
    Matcher m = Pattern.compile("fencing token (\\d+)").matcher(verboseErr);
    assertThat(m.find()).as("a token in: %s", verboseErr).isTrue();
    return Long.parseLong(m.group(1));
  }
}
