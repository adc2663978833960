package dev.locksmith.cli;

import dev.locksmith.Guarantees;
import dev.locksmith.LockClient;
import dev.locksmith.LockState;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * {@code lockctl break}: break-glass, {@link LockClient#breakLock(String, String)} from a shell.
 * Shows who holds the lock, asks for confirmation on standard input unless {@code --yes}, and frees
 * it so that the holder is told and the next holder's fencing token is higher.
 */
final class BreakCommand {
  static final String USAGE =
      String.join(
          "\n",
          "usage: lockctl break [--backend URI | --config FILE] NAME --reason TEXT [--yes]",
          "",
          "Break-glass: frees the lock NAME whoever holds it, for a lock held by a process that"
              + " will not let it go.",
          "Safe for what the lock guards: the holder's next renewal fails and it is told its lease"
              + " was lost, and the",
          "next holder's fencing token is higher, so a fence refuses the old holder's late writes."
              + " Shows the holder",
          "first and asks for 'yes' on standard input unless --yes is given; the reason is logged"
              + " with the holder.",
          "Exclusive locks only, on backends that declare BREAK_GLASS (redis, redlock, zookeeper,"
              + " etcd, local:).",
          "",
          "  --backend URI   the lock backend, such as redis://host:6379 (default: LOCKSMITH_URI)",
          "  --config FILE   a properties file with locksmith.uri and other settings",
          "  --reason TEXT   why, for the log (required)",
          "  --yes           do not ask",
          "",
          "exit status: 0 broken, 75 nothing to break (the lock was free), 1 not confirmed or not"
              + " supported by the backend,",
          "2 bad command line, 69 backend unreachable, 78 bad backend configuration");

  private final PrintStream out;
  private final InputStream in;

  BreakCommand(PrintStream out, InputStream in) {
    this.out = out;
    this.in = in;
  }

  int run(List<String> argv) {
    Args args = Args.parse(argv, Set.of("backend", "config", "reason"), Set.of("help", "yes"));
    if (args.flag("help")) {
      out.println(USAGE);
      return Main.OK;
    }
    String name = args.onlyPositional("no lock name: give NAME", "one lock at a time");
    String reason = args.get("reason");
    if (reason == null || reason.isBlank()) {
      throw new Args.UsageException(
          "--reason was " + (reason == null ? "missing" : "blank") + " but it must say why");
    }
    Backends.Backend backend = Backends.resolve(args, null);
    try (LockClient client = backend.connect()) {
      out.println("lock:            " + name);
      out.println("backend:         " + backend.display());
      if (!client.guarantees().has(Guarantees.Feature.BREAK_GLASS)) {
        out.println(
            "break:           not supported: "
                + backend.config().uri().scheme()
                + " does not declare BREAK_GLASS");
        return Main.FAILED;
      }
      LockState state;
      try {
        state = client.lock(name).state();
      } catch (IllegalArgumentException e) {
        throw new Args.UsageException("NAME: " + e.getMessage());
      }
      if (state.isKnown() && !state.isHeld()) {
        out.println("state:           free: nothing to break");
        return Main.TEMPFAIL;
      }
      if (state.isKnown()) {
        out.println("state:           held");
        state
            .fencingToken()
            .ifPresent(
                t -> out.println("fencing token:   " + t + " (the next holder's is higher)"));
        StatusCommand.printHolder(out, state);
      }
      if (!args.flag("yes") && !confirmed(name)) {
        out.println("break:           not confirmed; nothing was changed");
        return Main.FAILED;
      }
      boolean broken;
      try {
        broken = client.breakLock(name, reason);
      } catch (IllegalArgumentException e) {
        throw new Args.UsageException(e.getMessage());
      }
      if (!broken) {
        out.println("break:           the lock was free by then: nothing to break");
        return Main.TEMPFAIL;
      }
      out.println("break:           done: the lock is free, and its holder loses its lease");
      return Main.OK;
    }
  }

  /** Asks on standard input; anything but "yes" (end of input included) is no. */
  private boolean confirmed(String name) {
    out.print("break lock '" + name + "'? type yes to confirm: ");
    out.flush();
    try {
      String line =
          new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8)).readLine();
      return line != null && line.trim().toLowerCase(Locale.ROOT).equals("yes");
    } catch (IOException e) {
      return false;
    }
  }
}
