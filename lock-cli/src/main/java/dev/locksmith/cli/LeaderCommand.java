package dev.locksmith.cli;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees;
import dev.locksmith.LockClient;
import dev.locksmith.LockState;
import dev.locksmith.spi.Durations;
import java.io.PrintStream;
import java.util.List;
import java.util.Set;

/**
 * {@code lockctl leader}: who leads the election NAME that {@code lockctl elect} (or a {@link
 * dev.locksmith.LeaderLatch} of the same name) campaigns in, read with {@link
 * DistributedLock#state()} and never by campaigning: on a backend that cannot read a lock's state
 * it says so instead of taking the leadership for a moment as {@code lockctl status} would.
 */
final class LeaderCommand {
  static final String USAGE =
      String.join(
          "\n",
          "usage: lockctl leader [--backend URI | --config FILE] NAME",
          "",
          "Tells whether the election NAME (of lockctl elect, or of a LeaderLatch) has a leader"
              + " and, if so,",
          "its identity (as Election.campaign or LeaderLatch.identity gave it), its term (the"
              + " fencing token it",
          "writes with), the rest of its lease and its owner id, read without",
          "campaigning. Nothing is written. A backend that cannot read a lock's state (redlock) is"
              + " reported",
          "as such: lockctl leader never takes the leadership, not even for a moment.",
          "",
          "  --backend URI   the lock backend, such as redis://host:6379 (default: LOCKSMITH_URI)",
          "  --config FILE   a properties file with locksmith.uri and other settings",
          "",
          "exit status: 0 a leader leads, 75 no leader now (EX_TEMPFAIL), 1 not readable on this"
              + " backend,",
          "2 bad command line, 69 backend unreachable, 78 bad backend configuration");

  private final PrintStream out;

  LeaderCommand(PrintStream out) {
    this.out = out;
  }

  int run(List<String> argv) {
    Args args = Args.parse(argv, Set.of("backend", "config"), Set.of("help"));
    if (args.flag("help")) {
      out.println(USAGE);
      return Main.OK;
    }
    String name = args.onlyPositional("no election name: give NAME", "one election at a time");
    Backends.Backend backend = Backends.resolve(args, null);
    try (LockClient client = backend.connect()) {
      DistributedLock lock;
      try {
        lock = client.lock(name);
      } catch (IllegalArgumentException e) {
        throw new Args.UsageException("NAME: " + e.getMessage());
      }
      out.println("election:        " + name);
      out.println("backend:         " + backend.display());
      LockState state = lock.state();
      int status;
      if (!state.isKnown()) {
        out.println(
            "leader:          not readable on this backend (it cannot read a lock's state, and"
                + " lockctl leader does not campaign to find out)");
        status = Main.FAILED;
      } else if (!state.isHeld()) {
        out.println("leader:          none");
        status = Main.TEMPFAIL;
      } else {
        out.println("leader:          yes");
        state.holderIdentity().ifPresent(h -> out.println("identity:        " + h.thread()));
        out.println(
            "term:            "
                + (state.fencingToken().isPresent()
                    ? Long.toString(state.fencingToken().getAsLong())
                    : "not readable on this backend"));
        out.println(
            "remaining lease: "
                + state
                    .remaining()
                    .map(d -> Durations.format(d) + " unless renewed")
                    .orElse("as long as the leader's session lives"));
        StatusCommand.printHolder(out, state);
        status = Main.OK;
      }
      if (!client.guarantees().has(Guarantees.Feature.SHARED_ACROSS_PROCESSES)) {
        out.println(
            "note:            "
                + backend.config().uri().scheme()
                + ": locks are in-process; this lockctl sees only its own");
      }
      return status;
    }
  }
}
