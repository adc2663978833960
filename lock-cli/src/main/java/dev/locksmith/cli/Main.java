package dev.locksmith.cli;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.LockException;
import dev.locksmith.Locks;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/** {@code lockctl}: the Locksmith command. */
public final class Main {
  static final int OK = 0;
  static final int FAILED = 1;
  static final int USAGE = 2;

  /** EX_UNAVAILABLE: the backend could not be reached. */
  static final int UNAVAILABLE = 69;

  /** EX_TEMPFAIL: the lock was not acquired in time (exec), or is held (status). */
  static final int TEMPFAIL = 75;

  /** The lease was lost while the command ran (sysexits' EX_PROTOCOL number). */
  static final int LEASE_LOST = 76;

  /** EX_CONFIG: the backend configuration is bad. */
  static final int CONFIG = 78;

  /** As in shells: the command was found but could not be run. */
  static final int CANNOT_EXECUTE = 126;

  /** As in shells: the command was not found. */
  static final int NOT_FOUND = 127;

  static final String HELP =
      String.join(
          "\n",
          "usage: lockctl <command> [options]   (lockctl <command> --help, or lockctl help"
              + " <command>, for its options)",
          "",
          "commands:",
          "  demo     worker processes contend for one lock; one is frozen past its lease and its"
              + " late write is refused by the fence",
          "  exec     run a command while holding a lock (or several: --name again), like flock(1)"
              + " across machines:",
          "             lockctl exec --backend redis://host:6379 --name nightly -- ./backup.sh",
          "  elect    campaign for leadership and run a command while this process leads:",
          "             lockctl elect --backend redis://host:6379 --name scheduler --"
              + " ./scheduler.sh",
          "  leader   who leads an election, with its term? (lockctl leader --backend URI NAME)",
          "  status   is a lock held, and by whom? (lockctl status --backend URI NAME)",
          "  ls       the locks held under a prefix, with their holders (lockctl ls --backend URI"
              + " [PREFIX])",
          "  watch    lockctl ls refreshed every second, a live table in the terminal",
          "  serve    a web page with the locks held and their holders, refreshed live"
              + " (lockctl serve --backend URI --port 7070)",
          "  break    break-glass: free another holder's lock safely (its lease is lost, the next"
              + " token is higher)",
          "             lockctl break --backend redis://host:6379 nightly --reason 'host died'",
          "  compare  fault scenarios against backends: declared guarantee, published prediction,"
              + " observed",
          "             lockctl compare --backend redis://host:6379 --backend zookeeper://zk:2181"
              + " --quick",
          "  bench    latency, throughput and contended hand-offs of a backend, with local: as the"
              + " baseline of each ratio",
          "             lockctl bench --backend redis://host:6379",
          "  help     this text",
          "",
          "The backend is a lock URI: --backend redis://host:6379, or LOCKSMITH_URI, or --config"
              + " FILE with locksmith.uri.",
          "Schemes in this build: " + String.join(", ", schemes()) + ".",
          "",
          "exit status:",
          "  0        done (status: the lock is free; leader: a leader leads; break: broken)",
          "  1        failed (demo: the demo did not go as expected; compare: a result disagrees"
              + " with the declared guarantee; leader: not readable on this backend; break: not"
              + " confirmed, or not supported; ls: not supported)",
          "  2        bad command line",
          "  69       the backend could not be reached (EX_UNAVAILABLE)",
          "  75       exec: the lock was not acquired within --wait; status: the lock is held;"
              + " leader: no leader; break: nothing to break (EX_TEMPFAIL)",
          "  76       exec, elect: the lease (the leadership) was lost while the command ran",
          "  78       bad backend configuration (EX_CONFIG)",
          "  126/127  exec, elect: the command could not be run / was not found",
          "  other    exec, elect: the command's own exit status (128+N if it died of signal N)");

  /** The commands a user runs ({@code demo-worker} is the demo's own). */
  static final List<String> COMMANDS =
      List.of(
          "demo", "exec", "elect", "leader", "status", "ls", "watch", "serve", "break", "compare",
          "bench", "help");

  private Main() {}

  private static Set<String> schemes() {
    try {
      return Locks.schemes();
    } catch (RuntimeException e) {
      return Set.of("local");
    }
  }

  /**
   * Runs one command and exits with its status.
   *
   * @param args the command line
   */
  public static void main(String[] args) {
    // The commands report lease loss and connection failures themselves, in one line each; the
    // library's warnings would repeat them, and the clients of ZooKeeper, gRPC and Jedis log
    // stack traces while they retry. --verbose shows warnings again.
    String level = Arrays.asList(args).contains("--verbose") ? "warn" : "error";
    for (String logger :
        List.of(
            "dev.locksmith",
            "org.apache.zookeeper",
            "org.apache.curator",
            "io.grpc",
            "io.netty",
            "io.vertx",
            "io.etcd",
            "com.zaxxer.hikari",
            "redis.clients")) {
      String key = "org.slf4j.simpleLogger.log." + logger;
      if (System.getProperty(key) == null) {
        System.setProperty(key, level);
      }
    }
    // gRPC (etcd) and ZooKeeper's client log through java.util.logging; only warnings are worth a
    // user's eye
    java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
    // Everything lockctl prints passes a scrubber that knows the secrets of this command line, so
    // that no password reaches the terminal or a log, whichever message carries it.
    Secrets secrets = Secrets.of(Arrays.asList(args), System.getenv(), System.getProperties());
    PrintStream out =
        secrets.scrubbing(
            new PrintStream(
                new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8));
    PrintStream err =
        secrets.scrubbing(
            new PrintStream(
                new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8));
    System.setOut(out);
    System.setErr(err);
    Thread.setDefaultUncaughtExceptionHandler(
        (t, e) -> err.println("lockctl: thread " + t.getName() + " failed: " + oneLine(e)));
    int status = run(Arrays.asList(args), out, err);
    out.close(); // writes an unfinished last line, scrubbed
    err.close();
    System.exit(status);
  }

  static int run(List<String> args, PrintStream out, PrintStream err) {
    if (args.size() == 2 && args.get(0).equals("help") && !args.get(1).equals("help")) {
      // lockctl help exec: that command's own help (an unknown one gets the unknown-command error)
      return run(List.of(args.get(1), "--help"), out, err);
    }
    if (args.isEmpty()
        || args.get(0).equals("help")
        || args.get(0).equals("--help")
        || args.get(0).equals("-h")) {
      (args.isEmpty() ? err : out).println(HELP);
      return args.isEmpty() ? USAGE : OK;
    }
    String command = args.get(0);
    List<String> rest = args.subList(1, args.size());
    String usage = HELP;
    try {
      switch (command) {
        case "demo":
          usage = DemoCommand.USAGE;
          return new DemoCommand(out).run(rest);
        case "demo-worker":
          usage = DemoWorker.USAGE;
          return new DemoWorker(out).run(rest);
        case "exec":
          usage = ExecCommand.USAGE;
          return new ExecCommand(out, err).run(rest);
        case "elect":
          usage = ExecCommand.ELECT_USAGE;
          return ExecCommand.elect(out, err).run(rest);
        case "leader":
          usage = LeaderCommand.USAGE;
          return new LeaderCommand(out).run(rest);
        case "status":
          usage = StatusCommand.USAGE;
          return new StatusCommand(out).run(rest);
        case "ls":
          usage = ListCommand.USAGE;
          return new ListCommand(out).run(rest);
        case "watch":
          usage = ListCommand.WATCH_USAGE;
          return new ListCommand(out).watch(rest);
        case "serve":
          usage = ServeCommand.USAGE;
          return new ServeCommand(out).run(rest);
        case "break":
          usage = BreakCommand.USAGE;
          return new BreakCommand(out, System.in).run(rest);
        case "bench":
          usage = BenchCommand.USAGE;
          return new BenchCommand(out, err).run(rest);
        case "compare":
          usage = CompareCommand.USAGE;
          return new CompareCommand(out, err).run(rest);
        default:
          err.println(
              "lockctl: unknown command '"
                  + Secrets.display(command)
                  + "'; the commands are "
                  + String.join(", ", COMMANDS));
          err.println("run 'lockctl help' for what each does");
          return USAGE;
      }
    } catch (Args.UsageException e) {
      err.println("lockctl " + command + ": " + e.getMessage());
      err.println(synopsis(usage));
      err.println("run 'lockctl " + command + " --help' for every option");
      return USAGE;
    } catch (Backends.BadConfiguration e) {
      err.println("lockctl " + command + ": " + e.getMessage());
      return CONFIG;
    } catch (LockException e) {
      err.println("lockctl " + command + ": " + e.getMessage());
      return e instanceof BackendUnavailableException
          ? UNAVAILABLE
          : e instanceof LockConfigurationException ? CONFIG : FAILED;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      err.println("lockctl " + command + ": interrupted");
      return FAILED;
    } catch (RuntimeException e) {
      err.println("lockctl " + command + ": failed: " + oneLine(e));
      return FAILED;
    }
  }

  /**
   * @return the usage's first paragraph: the command line(s), without the explanations and options
   */
  static String synopsis(String usage) {
    int blank = usage.indexOf("\n\n");
    return blank < 0 ? usage : usage.substring(0, blank);
  }

  /**
   * @return the exception's type and message, and its causes', on one line: a user sees no stack
   *     trace
   */
  static String oneLine(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable t = e;
        t != null && b.length() < 1000;
        t = t.getCause() == t ? null : t.getCause()) {
      b.append(b.length() == 0 ? "" : "; caused by ")
          .append(t.getClass().getSimpleName())
          .append(t.getMessage() == null ? "" : ": " + t.getMessage().replace('\n', ' '));
    }
    return b.toString();
  }
}
