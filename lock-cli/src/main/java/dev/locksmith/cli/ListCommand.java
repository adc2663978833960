package dev.locksmith.cli;

import dev.locksmith.Guarantees;
import dev.locksmith.HeldLock;
import dev.locksmith.LockClient;
import dev.locksmith.LockPage;
import dev.locksmith.LockState;
import dev.locksmith.spi.Durations;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * {@code lockctl ls}: the locks held under a prefix, one line each, read page by page with {@link
 * LockClient#list}; nothing is taken or renewed.
 */
final class ListCommand {
  static final String USAGE =
      String.join(
          "\n",
          "usage: lockctl ls [--backend URI | --config FILE] [--limit N] [PREFIX]",
          "",
          "Lists the locks, semaphores and read-write locks held now whose names begin with PREFIX"
              + " (all",
          "without it), a line per holder: name, kind (lock, permit, read, write), fencing token,"
              + " remaining",
          "lease, callers waiting (- where the backend does not count them) and holder"
              + " (application, host,",
          "pid, thread), read page by page without taking or renewing",
          "anything. On backends that declare LISTING (redis single and sentinel, jdbc, zookeeper,"
              + " etcd, local:).",
          "",
          "  --backend URI   the lock backend, such as redis://host:6379 (default: LOCKSMITH_URI)",
          "  --config FILE   a properties file with locksmith.uri and other settings",
          "  --limit N       names read per page, 1 to 1000 (default 100)",
          "",
          "exit status: 0 listed (none held is 0 too), 1 not supported by the backend, 2 bad"
              + " command line,",
          "69 backend unreachable, 78 bad backend configuration");

  private final PrintStream out;

  ListCommand(PrintStream out) {
    this.out = out;
  }

  static final String WATCH_USAGE =
      String.join(
          "\n",
          "usage: lockctl watch [--backend URI | --config FILE] [--limit N] [--interval D]"
              + " [--count N] [PREFIX]",
          "",
          "lockctl ls again and again: the table of the locks held under PREFIX, refreshed every"
              + " --interval",
          "(default 1s, from 100ms to 1h) until interrupted, or --count times. On a terminal the"
              + " screen is",
          "cleared before each table; else the tables follow each other, each under a line with"
              + " the time.",
          "",
          "  --backend URI   the lock backend, such as redis://host:6379 (default: LOCKSMITH_URI)",
          "  --config FILE   a properties file with locksmith.uri and other settings",
          "  --limit N       names read per page, 1 to 1000 (default 100)",
          "  --interval D    time between two tables, such as 500ms or 2s (default 1s)",
          "  --count N       stop after N tables (default: until interrupted)",
          "",
          "exit status: 0 done, 1 not supported by the backend, 2 bad command line, 69 backend"
              + " unreachable,",
          "78 bad backend configuration");

  /** {@code lockctl watch}: {@code ls} on a timer. */
  int watch(List<String> argv) throws InterruptedException {
    Args args =
        Args.parse(argv, Set.of("backend", "config", "limit", "interval", "count"), Set.of("help"));
    if (args.flag("help")) {
      out.println(WATCH_USAGE);
      return Main.OK;
    }
    java.time.Duration interval = java.time.Duration.ofSeconds(1);
    String intervalText = args.get("interval");
    if (intervalText != null) {
      try {
        interval = Durations.parse(intervalText);
      } catch (IllegalArgumentException e) {
        interval = null;
      }
      if (interval == null
          || interval.compareTo(java.time.Duration.ofMillis(100)) < 0
          || interval.compareTo(java.time.Duration.ofHours(1)) > 0) {
        throw new Args.UsageException(
            "--interval was '" + intervalText + "' but it must be a duration from 100ms to 1h");
      }
    }
    long count = Long.MAX_VALUE;
    String countText = args.get("count");
    if (countText != null) {
      try {
        count = Long.parseLong(countText.trim());
      } catch (NumberFormatException e) {
        count = 0;
      }
      if (count < 1) {
        throw new Args.UsageException(
            "--count was '" + countText + "' but it must be a whole number from 1");
      }
    }
    Query q = query(args);
    boolean terminal = System.console() != null;
    Backends.Backend backend = Backends.resolve(args, null);
    try (LockClient client = backend.connect()) {
      if (!supported(client, backend)) {
        return Main.FAILED;
      }
      for (long i = 0; i < count; i++) {
        if (i > 0) {
          Thread.sleep(interval.toMillis());
        }
        List<HeldLock> all = listAll(client, q);
        if (terminal) {
          out.print("\u001b[H\u001b[2J"); // home, clear screen
        } else if (i > 0) {
          out.println();
        }
        out.println(
            "# "
                + java.time.Instant.now()
                + "  "
                + backend.display()
                + (q.prefix.isEmpty() ? "" : "  " + q.prefix));
        print(out, all);
        out.flush();
      }
      return Main.OK;
    }
  }

  /** What to list: a prefix, and the names a page reads. */
  private record Query(String prefix, int limit) {}

  /**
   * @return the one PREFIX of a listing command line, empty if none
   * @throws Args.UsageException if there are more words
   */
  static String prefix(Args args) {
    if (args.positional().size() > 1 || !args.rest().isEmpty()) {
      throw new Args.UsageException(
          "one PREFIX at most; unexpected '"
              + (args.positional().size() > 1 ? args.positional().get(1) : args.rest().get(0))
              + "'");
    }
    return args.positional().isEmpty() ? "" : args.positional().get(0);
  }

  /**
   * Says on {@code out} that the backend cannot list its locks, unless it declares {@code LISTING}.
   *
   * @return whether it declares it
   */
  static boolean supported(
      PrintStream out, String command, LockClient client, Backends.Backend backend) {
    if (client.guarantees().has(Guarantees.Feature.LISTING)) {
      return true;
    }
    out.println(
        command
            + ": "
            + backend.config().uri().scheme()
            + " does not declare LISTING: it cannot list its locks");
    return false;
  }

  private static Query query(Args args) {
    String prefix = prefix(args);
    int limit = 100;
    String limitText = args.get("limit");
    if (limitText != null) {
      try {
        limit = Integer.parseInt(limitText.trim());
      } catch (NumberFormatException e) {
        limit = -1;
      }
      if (limit < 1 || limit > 1000) {
        throw new Args.UsageException(
            "--limit was '" + limitText + "' but it must be a whole number from 1 to 1000");
      }
    }
    return new Query(prefix, limit);
  }

  private boolean supported(LockClient client, Backends.Backend backend) {
    return supported(out, "lockctl", client, backend);
  }

  private static List<HeldLock> listAll(LockClient client, Query q) {
    return listAll(client, q.prefix, q.limit, Integer.MAX_VALUE);
  }

  /**
   * @param limit the names a page reads
   * @param most stop reading pages once this many locks are in
   * @return every page (up to {@code most} locks and the rest of that page), sorted by name
   */
  static List<HeldLock> listAll(LockClient client, String prefix, int limit, int most) {
    List<HeldLock> all = new ArrayList<>();
    String cursor = null;
    do {
      LockPage page;
      try {
        page = client.list(prefix, cursor, limit);
      } catch (IllegalArgumentException e) {
        throw new Args.UsageException("PREFIX: " + e.getMessage());
      }
      all.addAll(page.locks());
      cursor = page.next().orElse(null);
    } while (cursor != null && all.size() < most);
    all.sort((a, b) -> a.name().compareTo(b.name()));
    return all;
  }

  int run(List<String> argv) {
    Args args = Args.parse(argv, Set.of("backend", "config", "limit"), Set.of("help"));
    if (args.flag("help")) {
      out.println(USAGE);
      return Main.OK;
    }
    Query q = query(args);
    Backends.Backend backend = Backends.resolve(args, null);
    try (LockClient client = backend.connect()) {
      if (!supported(client, backend)) {
        return Main.FAILED;
      }
      print(out, listAll(client, q));
      return Main.OK;
    }
  }

  /** The table: a header, then one line per held lock; "no lock held" when there is none. */
  static void print(PrintStream out, List<HeldLock> locks) {
    if (locks.isEmpty()) {
      out.println("no lock held");
      return;
    }
    int width = "NAME".length();
    for (HeldLock l : locks) {
      width = Math.max(width, l.name().length());
    }
    width = Math.min(width, 60);
    String format = "%-" + width + "s  %-6s  %8s  %10s  %7s  %s%n";
    out.printf(format, "NAME", "KIND", "TOKEN", "REMAINING", "WAITING", "HOLDER");
    for (HeldLock l : locks) {
      // one line a holder: a semaphore's holdings and a lock's readers each get theirs
      for (LockState s : l.holders()) {
        out.printf(
            format,
            l.name(),
            kind(l),
            s.fencingToken().isPresent() ? Long.toString(s.fencingToken().getAsLong()) : "-",
            s.remaining().map(Durations::format).orElse("session"),
            l.waiting().isPresent() ? Integer.toString(l.waiting().getAsInt()) : "-",
            s.holderIdentity()
                .map(Object::toString)
                .orElse(s.holder().orElse("held after release, or not readable")));
      }
    }
  }

  /** How a listing's kind reads in the table and the live page: lock, permit, read or write. */
  static String kind(HeldLock l) {
    return switch (l.kind()) {
      case LOCK -> "lock";
      case SEMAPHORE -> "permit";
      case READ -> "read";
      case WRITE -> "write";
    };
  }
}
