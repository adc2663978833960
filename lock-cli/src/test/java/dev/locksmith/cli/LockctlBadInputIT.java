package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.tck.ServerProcess;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Bad input through lockctl, one row per case: unknown commands, missing and extra arguments, bad
 * backend URIs carrying secrets, bad durations, bad lock names, unknown options, and unreachable
 * servers. Each case runs the real jar and checks its exit status; that standard error names the
 * argument, the value (secrets hidden) and what is valid, in one paragraph; that no secret appears
 * on standard output or error; that no stack trace is printed; that it ends within {@link #BOUND};
 * and that nothing is left behind (files in its working or temporary directory, processes).
 */
class LockctlBadInputIT {
  private static final Duration BOUND = Duration.ofSeconds(20);
  private static final String SLASHED = "Se/cret9Q";
  private static final String QUESTIONED = "S3cret?9Q";
  private static final String HASHED = "Pw#9Qx";
  private static final String PLAIN = "S3cretPw9Q";

  /** Every test secret and the pieces a misread URI would show of it. */
  private static final List<String> SECRETS =
      List.of(SLASHED, "cret9Q", QUESTIONED, "S3cret", HASHED, "9Qx", PLAIN);

  private static final int CLOSED = ServerProcess.freePort();
  private static final String CONFIG = "{config}";

  /**
   * One bad input: the arguments, the environment, a config file's lines, and what standard error
   * must say.
   */
  static final class Case {
    final String name;
    final int exit;
    final List<String> args;
    final Map<String, String> env;
    final List<String> config;
    final List<String> says;
    final List<String> neverSays;

    private Case(
        String name,
        int exit,
        List<String> args,
        Map<String, String> env,
        List<String> config,
        List<String> says,
        List<String> neverSays) {
      this.name = name;
      this.exit = exit;
      this.args = args;
      this.env = env;
      this.config = config;
      this.says = says;
      this.neverSays = neverSays;
    }

    static Case of(String name, int exit, String[] args, String... says) {
      return new Case(name, exit, List.of(args), Map.of(), List.of(), List.of(says), List.of());
    }

    Case withEnv(String key, String value) {
      return new Case(name, exit, args, Map.of(key, value), config, says, neverSays);
    }

    Case withConfig(String... lines) {
      return new Case(name, exit, args, env, List.of(lines), says, neverSays);
    }

    Case neverSaying(String... fragments) {
      return new Case(name, exit, args, env, config, says, List.of(fragments));
    }

    @Override
    public String toString() {
      return name;
    }
  }

  private static String[] a(String... args) {
    return args;
  }

  static Stream<Case> cases() {
    String closed = "127.0.0.1:" + CLOSED;
    String longName = "n".repeat(300);
    return Stream.of(
        // unknown commands: the error and a one-line hint, not the whole help
        Case.of(
            "unknown command",
            2,
            a("frobnicate"),
            "unknown command 'frobnicate'",
            "the commands are demo, exec, elect, leader, status, ls, watch, serve, break, compare,"
                + " bench, help",
            "run 'lockctl help'"),
        Case.of(
            "misspelt command",
            2,
            a("stauts", "--backend", "local:", "x"),
            "unknown command 'stauts'",
            "status"),
        Case.of(
            "a URI with a secret where the command goes",
            2,
            a("redis://:" + PLAIN + "@127.0.0.1:6379", "exec"),
            "unknown command 'redis://:****@127.0.0.1:6379'",
            "the commands are"),
        Case.of(
            "an option before the command",
            2,
            a("--backend", "local:", "status"),
            "unknown command '--backend'",
            "exec"),

        // missing and extra arguments
        Case.of(
            "exec without --name",
            2,
            a("exec", "--backend", "local:", "--", "true"),
            "--name is required",
            "usage: lockctl exec"),
        Case.of(
            "exec without a command",
            2,
            a("exec", "--backend", "local:", "--name", "x"),
            "no command",
            "CMD [ARGS...] after --"),
        Case.of(
            "exec with the command before --",
            2,
            a("exec", "--backend", "local:", "--name", "x", "true"),
            "unexpected argument 'true'",
            "put the command after --"),
        Case.of("an option without its value", 2, a("exec", "--name"), "--name needs a value"),
        Case.of(
            "exec without a backend",
            2,
            a("exec", "--name", "x", "--", "true"),
            "no backend",
            "--backend URI",
            "--config FILE",
            "LOCKSMITH_URI"),
        Case.of(
            "status without a name",
            2,
            a("status", "--backend", "local:"),
            "no lock name",
            "usage: lockctl status"),
        Case.of(
            "status with two names",
            2,
            a("status", "--backend", "local:", "a", "b"),
            "one lock name at a time",
            "'b'"),
        Case.of(
            "bench with an extra argument",
            2,
            a("bench", "--backend", "local:", "extra"),
            "unexpected argument 'extra'"),
        Case.of(
            "compare without a backend", 2, a("compare", "--quick"), "no backend", "--backend URI"),
        Case.of(
            "demo with an extra argument",
            2,
            a("demo", "now"),
            "unexpected argument 'now'",
            "usage: lockctl demo"),

        // bad --backend URIs, most of them carrying a secret
        Case.of(
            "a password holding '/'",
            78,
            a(
                "exec",
                "--backend",
                "redis://:" + SLASHED + "@127.0.0.1:6379",
                "--name",
                "x",
                "--",
                "true"),
            "--backend",
            "'redis://:****@127.0.0.1:6379'",
            "percent-encoded",
            "%2F"),
        Case.of(
            "a user's password holding '?'",
            78,
            a("status", "--backend", "redis://app:" + QUESTIONED + "@127.0.0.1:6379", "x"),
            "--backend",
            "'redis://app:****@127.0.0.1:6379'",
            "%3F"),
        Case.of(
                "a MySQL password holding '/'",
                78,
                a(
                    "exec",
                    "--backend",
                    "jdbc:mysql://root:" + SLASHED + "@127.0.0.1:3306/test",
                    "--name",
                    "x",
                    "--",
                    "true"),
                "--backend",
                "'jdbc:mysql://root:****@127.0.0.1:3306/test'",
                "%2F")
            .neverSaying("'Se'", "host 'root'"),
        Case.of(
            "a password holding '#'",
            78,
            a("bench", "--backend", "redis://:" + HASHED + "@127.0.0.1:6379"),
            "--backend",
            "'redis://:****@127.0.0.1:6379'",
            "%23"),
        Case.of(
            "an unknown scheme with a secret",
            78,
            a("status", "--backend", "mongodb://u:" + PLAIN + "@127.0.0.1:27017", "x"),
            "--backend",
            "'mongodb://u:****@127.0.0.1:27017'",
            "scheme 'mongodb'",
            "redis",
            "zookeeper",
            "jdbc:postgresql"),
        Case.of(
            "a misspelt password key",
            78,
            a(
                "exec",
                "--backend",
                "redis://127.0.0.1:6379?pasword=" + PLAIN,
                "--name",
                "x",
                "--",
                "true"),
            "--backend",
            "`pasword` was '****'",
            "valid settings are",
            "password"),
        Case.of(
            "a secret under 'pass' and a typo of lease",
            78,
            a(
                "exec",
                "--backend",
                "redis://127.0.0.1:6379?pass=" + PLAIN + "&lese=10s",
                "--name",
                "x",
                "--",
                "true"),
            "`lese` was '****'",
            "did you mean `lease`"),
        Case.of(
            "a secret under 'auth' for the demo",
            78,
            a("demo", "--backend", "redis://127.0.0.1:6379?auth=" + PLAIN),
            "--backend",
            "`auth`",
            "valid settings are"),
        Case.of(
            "a URI with spaces",
            78,
            a("exec", "--backend", "not a uri", "--name", "x", "--", "true"),
            "--backend",
            "'not a uri'",
            "must not contain spaces"),
        Case.of(
            "an empty URI",
            78,
            a("exec", "--backend", "", "--name", "x", "--", "true"),
            "--backend",
            "`uri` was ''",
            "such as redis://localhost:6379"),
        Case.of(
            "a port out of range, with a secret",
            78,
            a(
                "exec",
                "--backend",
                "redis://:" + PLAIN + "@127.0.0.1:99999",
                "--name",
                "x",
                "--",
                "true"),
            "--backend",
            "redis://:****@127.0.0.1:99999",
            "'99999'",
            "from 1 to 65535"),
        Case.of(
            "an unknown URI option",
            78,
            a(
                "exec",
                "--backend",
                "redis://127.0.0.1:6379?colour=blue",
                "--name",
                "x",
                "--",
                "true"),
            "--backend",
            "`colour` was '****'",
            "valid settings are"),
        Case.of(
            "two bad settings at once, with a secret",
            78,
            a(
                "exec",
                "--backend",
                "redis://:" + PLAIN + "@127.0.0.1:6379?lease=-5s&renew=maybe",
                "--name",
                "x",
                "--",
                "true"),
            "2 problems",
            "`lease` was '-5s'",
            "1ms to 7d",
            "`renew` was 'maybe'",
            "true or false"),
        Case.of(
            "a lease that overflows",
            78,
            a(
                "exec",
                "--backend",
                "redis://127.0.0.1:6379?lease=999999999999d",
                "--name",
                "x",
                "--",
                "true"),
            "--backend",
            "`lease` was '999999999999d'",
            "1ms to 7d"),
        Case.of(
            "a recheck that overflows, with a secret",
            78,
            a(
                "status",
                "--backend",
                "redis://:" + PLAIN + "@127.0.0.1:6379?recheck=999999999999d",
                "x"),
            "--backend",
            "`recheck` was '999999999999d'",
            "1ms to 1h"),
        Case.of(
                "a config file whose URI has a password holding '/'",
                78,
                a("exec", "--config", CONFIG, "--name", "x", "--", "true"),
                "--config",
                "'redis://:****@127.0.0.1:6379'",
                "%2F")
            .withConfig("locksmith.uri=redis://:" + SLASHED + "@127.0.0.1:6379"),
        Case.of(
                "a config file with a lease that overflows and a password",
                78,
                a("status", "--config", CONFIG, "x"),
                "--config",
                "`lease` was '999999999999d'",
                "1ms to 7d")
            .withConfig(
                "locksmith.uri=redis://127.0.0.1:6379",
                "locksmith.password=" + PLAIN,
                "locksmith.lease=999999999999d"),
        Case.of(
            "a config file that does not exist",
            2,
            a("exec", "--config", "/nonexistent/locksmith.properties", "--name", "x", "--", "true"),
            "--config was '/nonexistent/locksmith.properties'",
            "readable properties file with locksmith.uri"),
        Case.of(
                "LOCKSMITH_URI with a secret and an unknown scheme",
                78,
                a("status", "x"),
                "LOCKSMITH_URI",
                "'nosuch://u:****@h:1'",
                "scheme 'nosuch'",
                "redis")
            .withEnv("LOCKSMITH_URI", "nosuch://u:" + PLAIN + "@h:1"),

        // bad durations of lockctl's own options
        Case.of(
            "exec --lease that overflows",
            2,
            a(
                "exec",
                "--backend",
                "local:",
                "--name",
                "x",
                "--lease",
                "999999999999d",
                "--",
                "true"),
            "--lease was '999999999999d'",
            "1ms to 7d"),
        Case.of(
            "exec --wait that overflows",
            2,
            a(
                "exec",
                "--backend",
                "local:",
                "--name",
                "x",
                "--wait",
                "999999999999d",
                "--",
                "true"),
            "--wait was '999999999999d'",
            "from 0 to 7d"),
        Case.of(
            "exec --wait negative",
            2,
            a("exec", "--backend", "local:", "--name", "x", "--wait", "-5s", "--", "true"),
            "--wait was '-5s'",
            "from 0 to 7d"),
        Case.of(
            "exec --grace zero",
            2,
            a("exec", "--backend", "local:", "--name", "x", "--grace", "0", "--", "true"),
            "--grace was '0'",
            "1ms to 1h"),
        Case.of(
            "exec --wait in words",
            2,
            a("exec", "--backend", "local:", "--name", "x", "--wait", "soon", "--", "true"),
            "--wait was 'soon'",
            "such as 30s"),
        Case.of(
            "demo --pause not past the lease",
            2,
            a("demo", "--lease", "1s", "--pause", "500ms"),
            "--pause was '500ms'",
            "longer than --lease (1s)"),
        Case.of(
            "bench --duration that overflows",
            2,
            a("bench", "--backend", "local:", "--duration", "999999999999d"),
            "--duration was '999999999999d'",
            "500ms to 10m"),
        Case.of(
            "compare --lease that overflows",
            2,
            a("compare", "--backend", "local:", "--lease", "999999999999d"),
            "--lease was '999999999999d'",
            "200ms to 30s"),

        // bad lock names
        Case.of(
            "an empty lock name",
            2,
            a("exec", "--backend", "local:", "--name", "", "--", "true"),
            "--name",
            "`name` was ''",
            "1 to 255 characters"),
        Case.of(
            "a lock name with a newline",
            2,
            a("status", "--backend", "local:", "a\nb"),
            "NAME",
            "control character"),
        Case.of(
            "a lock name too long",
            2,
            a("exec", "--backend", "local:", "--name", longName, "--", "true"),
            "--name",
            "300 characters",
            "at most 255"),

        // unknown options and bad option values
        Case.of(
            "an unknown option",
            2,
            a("exec", "--backend", "local:", "--bogus", "--name", "x", "--", "true"),
            "unknown option --bogus",
            "--name",
            "--wait",
            "--on-loss"),
        Case.of(
            "an unknown option whose value is a secret",
            2,
            a("status", "--pasword=" + PLAIN, "--backend", "local:", "x"),
            "unknown option --pasword",
            "--backend"),
        Case.of(
            "a flag given a value",
            2,
            a("exec", "--backend", "local:", "--verbose=yes", "--name", "x", "--", "true"),
            "--verbose takes no value"),
        Case.of(
            "demo --workers in words",
            2,
            a("demo", "--workers", "zero"),
            "--workers was 'zero'",
            "from 2 to 8"),
        Case.of(
            "exec --on-loss unknown",
            2,
            a("exec", "--backend", "local:", "--name", "x", "--on-loss", "pray", "--", "true"),
            "--on-loss was 'pray'",
            "term, kill or none"),
        Case.of(
            "bench --threads too many",
            2,
            a("bench", "--backend", "local:", "--threads", "1000"),
            "--threads was '1000'",
            "from 1 to 64"),
        Case.of(
            "compare --out where no directory can be made",
            2,
            a("compare", "--backend", "local:", "--out", "/proc/lockctl-out"),
            "--out was '/proc/lockctl-out'",
            "a directory lockctl can create and write"),

        // unreachable servers: the endpoint named, exit 69
        Case.of(
            "an unreachable Redis, with a secret",
            69,
            a("exec", "--backend", "redis://:" + PLAIN + "@" + closed, "--name", "x", "--", "true"),
            closed,
            "refused"),
        Case.of(
            "compare against an unreachable Redis, with a secret",
            69,
            a("compare", "--backend", "redis://:" + PLAIN + "@" + closed, "--quick"),
            closed,
            "refused"),
        Case.of(
            "an unreachable PostgreSQL, with a secret",
            69,
            a(
                "status",
                "--backend",
                "jdbc:postgresql://" + closed + "/db?user=u&password=" + PLAIN,
                "x"),
            closed),
        Case.of(
            "an unreachable MySQL in its address form, with a secret",
            69,
            a(
                "status",
                "--backend",
                "jdbc:mysql://address=(host=127.0.0.1)(port="
                    + CLOSED
                    + ")(user=u)(password="
                    + PLAIN
                    + ")/db",
                "x"),
            "127.0.0.1",
            Integer.toString(CLOSED)));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void badInputIsReportedClearlyAndLeavesNothing(Case c, @TempDir Path root) throws Exception {
    Path work = Files.createDirectories(root.resolve("work"));
    Path tmp = Files.createDirectories(root.resolve("tmp"));
    Path config = root.resolve("locksmith.properties");
    Files.write(config, c.config, StandardCharsets.UTF_8);
    String[] args =
        c.args.stream().map(x -> x.equals(CONFIG) ? config.toString() : x).toArray(String[]::new);

    long started = System.nanoTime();
    Lockctl.Result r = Lockctl.start(work, tmp, c.env, args).finish(BOUND);
    Duration took = Duration.ofNanos(System.nanoTime() - started);

    String what = c.name + " (" + String.join(" ", c.args) + "): " + r;
    assertThat(r.exit).as("exit status of %s", what).isEqualTo(c.exit);
    assertThat(r.err).as("standard error of %s", what).contains(c.says);
    for (String never : c.neverSays) {
      assertThat(r.err).as("standard error of %s", what).doesNotContain(never);
    }
    for (String secret : SECRETS) {
      assertThat(r.err).as("standard error of %s", what).doesNotContain(secret);
      assertThat(r.out).as("standard output of %s", what).doesNotContain(secret);
    }
    assertThat(r.out).as("nothing on standard output for %s", what).isEmpty();
    assertThat(r.err)
        .as("no stack trace from %s", what)
        .doesNotContain("\tat ", "Exception in thread", "Caused by:");
    assertThat(r.err.strip()).as("one paragraph from %s", what).isNotEmpty().doesNotContain("\n\n");
    if (c.args.get(0).equals("frobnicate")) {
      assertThat(r.err.strip().split("\n"))
          .as("the error and a one-line hint, not the whole help")
          .hasSize(2);
    }
    assertThat(took).as("time taken by %s", what).isLessThan(BOUND);
    assertThat(Lockctl.filesIn(work))
        .as("files left in the working directory by %s", what)
        .isEmpty();
    assertThat(Lockctl.filesIn(tmp))
        .as("files left in the temporary directory by %s", what)
        .isEmpty();
    assertThat(
            ProcessHandle.allProcesses()
                .filter(
                    p -> p.info().commandLine().map(l -> l.contains(tmp.toString())).orElse(false)))
        .as("processes left by %s", what)
        .isEmpty();
  }
}
