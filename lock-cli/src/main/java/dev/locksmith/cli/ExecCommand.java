package dev.locksmith.cli;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees;
import dev.locksmith.Lease;
import dev.locksmith.LeaseLostException;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.spi.Durations;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * {@code lockctl exec}: a distributed flock(1); and {@code lockctl elect}, the same for a leader:
 * it campaigns until elected (waits for the lock with no end), runs the command as leader with its
 * term, and stops it if the leadership is lost.
 *
 * <p>{@code lockctl exec}: a distributed flock(1). Holds a lock, renewing it, while a command runs;
 * hands the command its fencing token; signals the command if the lease is lost; forwards SIGINT,
 * SIGTERM and SIGHUP to it and releases the lock before exiting.
 */
final class ExecCommand {
  static final String USAGE =
      String.join(
          "\n",
          "usage: lockctl exec [--backend URI | --config FILE] --name NAME [--name NAME ...]",
          "                    [--wait D] [--lease D] [--on-loss term|kill|none] [--grace D]"
              + " [--verbose]",
          "                    -- CMD [ARGS...]",
          "",
          "Runs CMD while holding the lock NAME, like flock(1) across machines; with several"
              + " --name,",
          "while holding every one of them (all or none). The leases are renewed while CMD runs."
              + " CMD",
          "inherits stdin, stdout and stderr, and gets in its environment:",
          "  LOCKSMITH_FENCING_TOKEN   the lease's fencing token: pass it to what the lock"
              + " protects,",
          "                            which should refuse tokens lower than it has seen",
          "  LOCKSMITH_LOCK_NAME       NAME",
          "and, for each --name in the order given (i = 1, 2, ...; also with one --name):",
          "  LOCKSMITH_LOCK_NAME_i     the i-th NAME",
          "  LOCKSMITH_FENCING_TOKEN_i its fencing token",
          "  LOCKSMITH_LOCK_COUNT      how many names are held",
          "With several names, LOCKSMITH_FENCING_TOKEN and LOCKSMITH_LOCK_NAME are the first"
              + " --name's.",
          "",
          "  --backend URI   the lock backend, such as redis://host:6379 (default: LOCKSMITH_URI)",
          "  --config FILE   a properties file with locksmith.uri and other settings",
          "  --name NAME     the lock's name (required); repeat it to hold several locks, all or"
              + " none",
          "                  (taken in one global order, so no two lockctl deadlock)",
          "  --wait D        how long to wait for the lock, at most 7d; 0 tries once (default 30s)",
          "  --lease D       the lease, renewed while CMD runs, 1ms to 7d (default: the backend's,"
              + " 30s)",
          "  --on-loss P     if the lease is lost while CMD runs: term = SIGTERM, then SIGKILL"
              + " after",
          "                  --grace (default); kill = SIGKILL at once; none = let CMD finish",
          "  --grace D       how long CMD may take to exit after SIGTERM, at most 1h (default 10s)",
          "  --verbose       report waiting, acquiring and releasing on stderr",
          "",
          "SIGINT, SIGTERM and SIGHUP sent to lockctl are forwarded to CMD and its child"
              + " processes;",
          "lockctl waits for CMD (SIGKILL after --grace, or at a second signal), then releases the"
              + " lock.",
          "",
          "exit status:",
          "  CMD's own      CMD ran while the lock was held throughout (128+N if CMD died of signal"
              + " N)",
          "  2              bad command line",
          "  69             the backend could not be reached (EX_UNAVAILABLE)",
          "  75             the lock (or one of the locks) was not acquired within --wait; none is"
              + " kept",
          "                 and CMD did not run (EX_TEMPFAIL)",
          "  76             the lease was lost while CMD ran: another holder may have overlapped"
              + " it",
          "  78             bad backend configuration (EX_CONFIG)",
          "  126, 127       CMD could not be run, or was not found",
          "  128+N          lockctl got signal N before CMD started",
          "  1              any other failure");

  static final String ELECT_USAGE =
      String.join(
          "\n",
          "usage: lockctl elect [--backend URI | --config FILE] --name NAME [--identity ID]",
          "                     [--lease D] [--on-loss term|kill|none] [--grace D] [--verbose]"
              + " -- CMD [ARGS...]",
          "",
          "Campaigns for the leadership of the election NAME, waiting as long as it takes, and runs"
              + " CMD",
          "while this process leads: the leader's lock is held and renewed while CMD runs, and"
              + " released",
          "(handing over to the next candidate at once) when CMD exits. Run the same line on every"
              + " instance:",
          "one runs CMD, the others wait to take over. CMD gets in its environment:",
          "  LOCKSMITH_LEADER_TERM     this leadership's term, above every earlier leader's: pass"
              + " it to",
          "                            what the leader writes, which should refuse lower terms (a"
              + " deposed",
          "                            leader's late writes)",
          "  LOCKSMITH_FENCING_TOKEN   the same number, as lockctl exec names it",
          "  LOCKSMITH_LOCK_NAME       NAME",
          "  LOCKSMITH_LEADER_IDENTITY ID",
          "",
          "  --backend URI   the lock backend, such as redis://host:6379 (default: LOCKSMITH_URI)",
          "  --config FILE   a properties file with locksmith.uri and other settings",
          "  --name NAME     the election's name (required, once)",
          "  --identity ID   who campaigns, as 'lockctl leader' and every election reader name"
              + " the leader:",
          "                  1 to 40 of A-Z a-z 0-9 . _ - (default: lockctl-PID, this"
              + " process's id)",
          "  --lease D       the leader's lease, renewed while CMD runs, 1ms to 7d (default: the"
              + " backend's,",
          "                  30s); a leader that dies is replaced within about one lease",
          "  --on-loss P     if the leadership is lost while CMD runs: term = SIGTERM, then SIGKILL"
              + " after",
          "                  --grace (default); kill = SIGKILL at once; none = let CMD finish",
          "  --grace D       how long CMD may take to exit after SIGTERM, at most 1h (default 10s)",
          "  --verbose       report campaigning, election and stepping down on stderr",
          "",
          "SIGINT, SIGTERM and SIGHUP sent to lockctl withdraw the campaign, or are forwarded to"
              + " CMD and its",
          "child processes; lockctl waits for CMD (SIGKILL after --grace, or at a second signal),"
              + " then steps",
          "down. 'lockctl leader NAME' prints who leads.",
          "",
          "exit status:",
          "  CMD's own      CMD ran while this process led throughout (128+N if CMD died of signal"
              + " N)",
          "  2              bad command line",
          "  69             the backend could not be reached (EX_UNAVAILABLE)",
          "  76             the leadership was lost while CMD ran: another leader may have"
              + " overlapped it",
          "  78             bad backend configuration (EX_CONFIG)",
          "  126, 127       CMD could not be run, or was not found",
          "  128+N          lockctl got signal N before CMD started (while campaigning)",
          "  1              any other failure");

  private static final Set<String> ON_LOSS = Set.of("term", "kill", "none");

  /** The library's bounds of a lease. */
  static final Duration MIN_LEASE = dev.locksmith.LockOptions.MIN_LEASE;

  static final Duration MAX_LEASE = Duration.ofDays(7);
  private static final Duration MAX_WAIT = Duration.ofDays(7);
  private static final Duration MAX_GRACE = Duration.ofHours(1);

  private final PrintStream out;
  private final PrintStream err;

  /** Whether this is {@code lockctl elect}: one name, campaigning with no end, a leader's term. */
  private final boolean elect;

  /** Who campaigns, for {@code lockctl elect}: {@code --identity}, or lockctl-PID. */
  private String identity;

  /** How messages start: {@code lockctl exec} or {@code lockctl elect}. */
  private final String prog;

  private final ReentrantLock state = new ReentrantLock();
  private Thread main;
  private Process child;
  private int signalled;
  private boolean leaseLost;
  private boolean finished;
  private boolean verbose;
  private Duration grace;

  ExecCommand(PrintStream out, PrintStream err) {
    this(out, err, false);
  }

  private ExecCommand(PrintStream out, PrintStream err, boolean elect) {
    this.out = out;
    this.err = err;
    this.elect = elect;
    this.prog = elect ? "lockctl elect" : "lockctl exec";
  }

  /**
   * @return {@code lockctl elect}
   */
  static ExecCommand elect(PrintStream out, PrintStream err) {
    return new ExecCommand(out, err, true);
  }

  int run(List<String> argv) {
    Args args =
        Args.parse(
            argv,
            elect
                ? Set.of("backend", "config", "name", "identity", "lease", "on-loss", "grace")
                : Set.of("backend", "config", "name", "wait", "lease", "on-loss", "grace"),
            Set.of("help", "verbose"));
    if (args.flag("help")) {
      out.println(elect ? ELECT_USAGE : USAGE);
      return Main.OK;
    }
    List<String> names = args.all("name");
    if (names.isEmpty()) {
      throw new Args.UsageException(
          elect
              ? "--name is required: the election to campaign in"
              : "--name is required: the lock to hold while CMD runs");
    }
    if (elect && names.size() > 1) {
      throw new Args.UsageException(
          "--name was given "
              + names.size()
              + " times but a process campaigns in one election; run one lockctl elect for each");
    }
    Set<String> distinct = new HashSet<>();
    for (String n : names) {
      if (!distinct.add(n)) {
        throw new Args.UsageException(
            "--name was '"
                + n
                + "' twice but each lock is named once; give each --name a different lock");
      }
    }
    if (names.size() > LockClient.MAX_NAMES_PER_SET) {
      throw new Args.UsageException(
          "--name was given "
              + names.size()
              + " times but at most "
              + LockClient.MAX_NAMES_PER_SET
              + " locks are held at once");
    }
    String name = names.get(0);
    if (!args.positional().isEmpty()) {
      throw new Args.UsageException(
          "unexpected argument '"
              + args.positional().get(0)
              + "'; put the command after --, as in: "
              + prog
              + " --name "
              + name
              + " -- "
              + args.positional().get(0));
    }
    List<String> command = args.rest();
    if (command.isEmpty()) {
      throw new Args.UsageException("no command: give CMD [ARGS...] after --");
    }
    // elect campaigns with no end: in steps of the longest wait, until elected or signalled
    Duration wait =
        elect ? MAX_WAIT : args.duration("wait", Duration.ofSeconds(30), Duration.ZERO, MAX_WAIT);
    grace = args.duration("grace", Duration.ofSeconds(10), Duration.ofMillis(1), MAX_GRACE);
    String onLoss = args.get("on-loss") == null ? "term" : args.get("on-loss");
    if (!ON_LOSS.contains(onLoss)) {
      throw new Args.UsageException(
          "--on-loss was '" + onLoss + "' but it must be term, kill or none");
    }
    verbose = args.flag("verbose");
    identity =
        !elect
            ? null
            : args.get("identity") != null
                ? args.get("identity")
                : "lockctl-" + ProcessHandle.current().pid();
    Duration lease = args.duration("lease", null, MIN_LEASE, MAX_LEASE);
    Backends.Backend backend = Backends.resolve(args, null);
    LockOptions options =
        LockOptions.builder()
            .lease(lease == null ? backend.config().defaults().lease() : lease)
            .autoRenew(true)
            .reentrant(false)
            .build();

    main = Thread.currentThread();
    Signals.catchTermination(this::onSignal);
    Thread hook = new Thread(this::onShutdown, "lockctl-exec-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      return hold(backend, names, options, wait, onLoss, command);
    } finally {
      state.lock();
      try {
        finished = true;
      } finally {
        state.unlock();
      }
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException e) {
        // already shutting down: the hook finds `finished` set and does nothing
      }
    }
  }

  private int hold(
      Backends.Backend backend,
      List<String> names,
      LockOptions options,
      Duration wait,
      String onLoss,
      List<String> command) {
    LockClient client;
    try {
      client = backend.connect();
    } catch (BackendUnavailableException e) {
      err.println(prog + ": " + e.getMessage());
      return Main.UNAVAILABLE;
    }
    try (client) {
      DistributedLock lock;
      try {
        if (names.size() == 1) {
          lock = client.lock(names.get(0), options);
          if (elect) {
            lock = candidate(client, names.get(0), options);
          }
        } else {
          for (String name : names) {
            client.lock(name, options); // each name checked, and reported, as a single one is
          }
          // every name all or none, in the client's one global order
          lock = client.locks(names, options);
        }
      } catch (IllegalArgumentException e) {
        throw new Args.UsageException("--name: " + e.getMessage());
      }
      Guarantees g = client.guarantees();
      if (!g.has(Guarantees.Feature.SHARED_ACROSS_PROCESSES)) {
        err.println(
            prog
                + ": warning: "
                + backend.config().uri().scheme()
                + ": locks are in-process; this lock excludes nothing outside this lockctl");
      }
      Lease lease;
      try {
        lease = acquire(lock, names, wait);
      } catch (InterruptedException e) {
        return 128 + signalled();
      } catch (BackendUnavailableException e) {
        err.println(prog + ": " + e.getMessage());
        return Main.UNAVAILABLE;
      }
      if (lease == null) {
        Thread.interrupted(); // a signal's interrupt may arrive after the wait ended; the client
        // still closes cleanly
        if (signalled() != 0) {
          return 128 + signalled();
        }
        err.println(
            prog
                + ": "
                + (names.size() == 1
                    ? "lock '" + names.get(0) + "' is held by someone else; "
                    : describe(names) + ": one or more is held by someone else, so none is kept; ")
                + (wait.isZero()
                    ? "tried once, as --wait 0 asks"
                    : "not acquired within " + Durations.format(wait)));
        return Main.TEMPFAIL;
      }
      return runHolding(lease, names, onLoss, command);
    }
  }

  /** The election's lock, campaigning under {@link #identity}. */
  private DistributedLock candidate(LockClient client, String name, LockOptions options) {
    try {
      return client.election(name, options).candidate(identity);
    } catch (IllegalArgumentException e) {
      throw new Args.UsageException("--identity: " + e.getMessage());
    }
  }

  private Lease acquire(DistributedLock lock, List<String> names, Duration wait)
      throws InterruptedException {
    if (signalled() != 0) {
      throw new InterruptedException();
    }
    Optional<Lease> first = lock.tryAcquire();
    if (first.isPresent()) {
      return first.get();
    }
    if (wait.isZero()) {
      return null;
    }
    if (elect) {
      if (verbose) {
        err.println(
            prog + ": '" + names.get(0) + "' has a leader; campaigning until it steps down");
      }
      while (true) {
        Optional<Lease> got = lock.tryAcquire(wait);
        if (got.isPresent()) {
          return got.get();
        }
      }
    }
    if (verbose) {
      err.println(
          prog
              + ": "
              + (names.size() == 1
                  ? "lock '" + names.get(0) + "' is held"
                  : describe(names) + ": one or more is held")
              + "; waiting up to "
              + Durations.format(wait));
    }
    return lock.tryAcquire(wait).orElse(null);
  }

  private int runHolding(Lease lease, List<String> names, String onLoss, List<String> command) {
    String what = describe(names);
    long token = lease.fencingToken(names.get(0));
    StringBuilder tokens = new StringBuilder();
    for (String n : names) {
      tokens.append(tokens.length() == 0 ? "" : ", ").append(lease.fencingToken(n));
    }
    if (verbose && elect) {
      err.println(
          prog + ": elected leader of '" + names.get(0) + "' as " + identity + ", term " + token);
    } else if (verbose) {
      err.println(
          prog
              + ": acquired "
              + what
              + ", fencing token"
              + (names.size() == 1 ? " " : "s ")
              + tokens);
    }
    ProcessBuilder pb = new ProcessBuilder(command).inheritIO();
    Map<String, String> env = pb.environment();
    env.put("LOCKSMITH_FENCING_TOKEN", Long.toString(token));
    env.put("LOCKSMITH_LOCK_NAME", names.get(0));
    env.put("LOCKSMITH_LOCK_COUNT", Integer.toString(names.size()));
    if (elect) {
      env.put("LOCKSMITH_LEADER_TERM", Long.toString(token));
      env.put("LOCKSMITH_LEADER_IDENTITY", identity);
    }
    for (int i = 0; i < names.size(); i++) {
      env.put("LOCKSMITH_LOCK_NAME_" + (i + 1), names.get(i));
      env.put(
          "LOCKSMITH_FENCING_TOKEN_" + (i + 1), Long.toString(lease.fencingToken(names.get(i))));
    }
    Process p;
    state.lock();
    try {
      if (signalled != 0) {
        Thread.interrupted(); // our own handler's interrupt, which must not cut the release short
        lease.close();
        return 128 + signalled;
      }
      try {
        p = pb.start();
      } catch (IOException e) {
        lease.close();
        boolean missing = String.valueOf(e.getMessage()).contains("error=2,");
        err.println(
            prog
                + ": cannot run '"
                + command.get(0)
                + "': "
                + (missing ? "no such file or command" : e.getMessage()));
        return missing ? Main.NOT_FOUND : Main.CANNOT_EXECUTE;
      }
      child = p;
    } finally {
      state.unlock();
    }
    lease.lost().thenAccept(loss -> onLoss(loss, p, onLoss));
    int status = waitForChild(p);
    boolean lost;
    state.lock();
    try {
      lost = leaseLost;
    } finally {
      state.unlock();
    }
    boolean heldToTheEnd;
    try {
      heldToTheEnd = lease.release();
    } catch (BackendUnavailableException e) {
      err.println(
          prog
              + ": releasing "
              + what
              + " failed; "
              + (names.size() == 1
                  ? "it frees itself when its lease"
                  : "each frees itself when its lease")
              + " runs out: "
              + e.getMessage());
      return lost ? Main.LEASE_LOST : status;
    }
    if (lost) {
      return Main.LEASE_LOST;
    }
    if (!heldToTheEnd) {
      // found only now; when it was lost cannot be told, so CMD may have overlapped another holder
      err.println(
          prog
              + ": the lease on "
              + what
              + " (fencing token"
              + (names.size() == 1 ? " " : "s ")
              + tokens
              + ") was found lost when lockctl released it after CMD: another holder may have"
              + " overlapped CMD");
      return Main.LEASE_LOST;
    }
    if (verbose) {
      err.println(prog + ": released " + what + "; CMD exited with " + status);
    }
    return status;
  }

  /**
   * @return {@code lock 'a'}, or {@code locks 'a', 'b'} in the order the names were given
   */
  private static String describe(List<String> names) {
    StringBuilder b = new StringBuilder(names.size() == 1 ? "lock " : "locks ");
    for (int i = 0; i < names.size(); i++) {
      b.append(i == 0 ? "" : ", ").append('\'').append(names.get(i)).append('\'');
    }
    return b.toString();
  }

  /**
   * Waits for CMD however many interrupts arrive: lockctl never exits while CMD runs under the
   * lock.
   */
  private static int waitForChild(Process p) {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return p.waitFor();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void onLoss(LeaseLostException loss, Process p, String policy) {
    state.lock();
    try {
      if (!p.isAlive()) {
        return;
      }
      leaseLost = true;
    } finally {
      state.unlock();
    }
    // Say it before signalling: CMD may exit at once, and lockctl with it, before a later line is
    // written.
    switch (policy) {
      case "kill":
        err.println(
            prog + ": " + loss.getMessage() + "; sending SIGKILL to CMD (pid " + p.pid() + ")");
        Signals.sendToTree(p, Signals.SIGKILL);
        break;
      case "term":
        err.println(
            prog
                + ": "
                + loss.getMessage()
                + "; sent SIGTERM to CMD (pid "
                + p.pid()
                + "), SIGKILL follows in "
                + Durations.format(grace)
                + " if it is still running");
        Signals.sendToTree(p, Signals.SIGTERM);
        killAfterGrace(p);
        break;
      default:
        err.println(
            prog
                + ": "
                + loss.getMessage()
                + "; CMD (pid "
                + p.pid()
                + ") keeps running, as --on-loss none asks");
    }
  }

  private void onSignal(int signal) {
    Process p;
    boolean again;
    state.lock();
    try {
      again = signalled != 0;
      if (!again) {
        signalled = signal;
      }
      p = child;
    } finally {
      state.unlock();
    }
    if (p == null) {
      main.interrupt(); // still connecting or waiting: withdraw and exit
      return;
    }
    if (again) {
      if (p.isAlive()) {
        err.println(
            prog
                + ": "
                + Signals.name(signal)
                + " again: sending SIGKILL to CMD (pid "
                + p.pid()
                + ")");
        Signals.sendToTree(p, Signals.SIGKILL);
      }
      return;
    }
    if (Signals.sendToTree(p, signal)) {
      if (verbose) {
        err.println(
            prog
                + ": forwarded "
                + Signals.name(signal)
                + " to CMD (pid "
                + p.pid()
                + "); releasing the lock once it exits");
      }
      killAfterGrace(p);
    }
  }

  /**
   * Only for a JVM that could not catch the signal: forward SIGTERM and keep the lock until CMD is
   * gone.
   */
  private void onShutdown() {
    Process p;
    state.lock();
    try {
      if (finished) {
        return;
      }
      p = child;
      if (signalled == 0) {
        signalled = Signals.SIGTERM;
      }
    } finally {
      state.unlock();
    }
    main.interrupt();
    if (p != null && Signals.sendToTree(p, Signals.SIGTERM)) {
      try {
        if (!p.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
          Signals.sendToTree(p, Signals.SIGKILL);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    // main releases the lease once CMD has exited; give it the time to do so
    try {
      main.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void killAfterGrace(Process p) {
    Thread t =
        new Thread(
            () -> {
              try {
                if (!p.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS) && p.isAlive()) {
                  // said first: once CMD is killed, lockctl may exit before a later line is written
                  err.println(
                      String.format(
                          Locale.ROOT,
                          prog + ": CMD (pid %d) still ran %s after SIGTERM: sending SIGKILL",
                          p.pid(),
                          Durations.format(grace)));
                  Signals.sendToTree(p, Signals.SIGKILL);
                }
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            },
            "lockctl-exec-grace");
    t.setDaemon(true);
    t.start();
  }

  private int signalled() {
    state.lock();
    try {
      return signalled;
    } finally {
      state.unlock();
    }
  }
}
