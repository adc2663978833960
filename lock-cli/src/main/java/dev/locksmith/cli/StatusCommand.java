package dev.locksmith.cli;

import dev.locksmith.DistributedLock;
import dev.locksmith.Guarantees;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import dev.locksmith.LockState;
import dev.locksmith.spi.Durations;
import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * {@code lockctl status}: whether a lock is held, the holder's fencing token and the rest of its
 * lease, read with {@link DistributedLock#state()} where the backend declares {@link
 * Guarantees.Feature#STATE_READS}. Elsewhere the answer comes from a probe: one attempt to acquire,
 * released at once if it succeeds. A free lock is then taken for a moment (one round trip), and its
 * fencing counter advances by one; tokens stay strictly increasing, so nothing that checks them is
 * affected.
 */
final class StatusCommand {
  static final String USAGE =
      String.join(
          "\n",
          "usage: lockctl status [--backend URI | --config FILE] NAME",
          "",
          "Tells whether the lock NAME is held and, where the backend can read it without taking"
              + " the lock",
          "(redis, jdbc, zookeeper, etcd, local), the holder's fencing token, the rest of its lease"
              + " and its",
          "owner id. Nothing is written. On a backend that cannot read it (redlock), it tries once"
              + " to acquire",
          "the lock and releases it at once if that succeeds: a free lock is held for one round"
              + " trip, and",
          "its fencing counter advances (the next holder's token is still greater).",
          "",
          "  --backend URI   the lock backend, such as redis://host:6379 (default: LOCKSMITH_URI)",
          "  --config FILE   a properties file with locksmith.uri and other settings",
          "",
          "exit status: 0 free, 75 held (EX_TEMPFAIL: lockctl exec would have to wait), 2 bad"
              + " command line,",
          "69 backend unreachable, 78 bad backend configuration, 1 any other failure");

  /** Short, so that a probe whose release never arrives (lockctl killed) frees the lock soon. */
  private static final Duration PROBE_LEASE = Duration.ofSeconds(5);

  private final PrintStream out;

  StatusCommand(PrintStream out) {
    this.out = out;
  }

  int run(List<String> argv) {
    Args args = Args.parse(argv, Set.of("backend", "config"), Set.of("help"));
    if (args.flag("help")) {
      out.println(USAGE);
      return Main.OK;
    }
    String name = args.onlyPositional("no lock name: give NAME", "one lock name at a time");
    Backends.Backend backend = Backends.resolve(args, null);
    LockOptions probe =
        LockOptions.builder().lease(PROBE_LEASE).autoRenew(false).reentrant(false).build();
    try (LockClient client = backend.connect()) {
      DistributedLock lock;
      try {
        lock = client.lock(name, probe);
      } catch (IllegalArgumentException e) {
        throw new Args.UsageException("NAME: " + e.getMessage());
      }
      out.println("lock:            " + name);
      out.println("backend:         " + backend.display());
      boolean free;
      LockState state = lock.state();
      if (state.isKnown()) {
        free = !state.isHeld();
        out.println("state:           " + (free ? "free" : "held"));
        if (!free) {
          out.println(
              "fencing token:   "
                  + (state.fencingToken().isPresent()
                      ? Long.toString(state.fencingToken().getAsLong())
                      : "not readable on this backend"));
          out.println(
              "remaining lease: "
                  + state
                      .remaining()
                      .map(d -> Durations.format(d) + " unless renewed")
                      .orElse("as long as the holder's session lives"));
          printHolder(out, state);
        }
      } else {
        Optional<Lease> got = lock.tryAcquire();
        free = got.isPresent();
        if (free) {
          long token;
          try (Lease lease = got.get()) {
            token = lease.fencingToken();
          }
          out.println(
              "state:           free (probed: this backend cannot read a lock's state, so lockctl"
                  + " took and released it)");
          out.println(
              "fencing token:   none held; the probe got token "
                  + token
                  + " and released it, so the next holder's will be greater");
          out.println("remaining lease: none");
        } else {
          out.println("state:           held (probed: this backend cannot read a lock's state)");
          out.println("fencing token:   not readable on this backend");
          out.println("remaining lease: not readable on this backend");
        }
      }
      if (!client.guarantees().has(Guarantees.Feature.SHARED_ACROSS_PROCESSES)) {
        out.println(
            "note:            "
                + backend.config().uri().scheme()
                + ": locks are in-process; this lockctl sees only its own");
      }
      return free ? Main.OK : Main.TEMPFAIL;
    }
  }

  /**
   * Prints who holds the lock: application, host, pid, thread and when it asked where a Locksmith
   * client wrote the owner id, then the owner id itself; nothing where the backend cannot read it.
   */
  static void printHolder(PrintStream out, LockState state) {
    state.holderIdentity().ifPresent(who -> out.println("holder:          " + who));
    state.holder().ifPresent(h -> out.println("owner id:        " + h));
  }
}
