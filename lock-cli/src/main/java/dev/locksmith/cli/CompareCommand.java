package dev.locksmith.cli;

import dev.locksmith.tck.FaultHooks;
import dev.locksmith.tck.compare.Comparison;
import dev.locksmith.tck.compare.Report;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * {@code lockctl compare}: the fault comparison of lock-tck against backends given by URI. The
 * holder faults (frozen past its lease, killed) need only the contender processes, so they run
 * against any server; faults of the server itself need a server the tool controls and are reported
 * as not run. The full comparison, with server faults on servers it starts itself, is
 * lock-compare's integration test.
 */
final class CompareCommand {
  static final String USAGE =
      String.join(
          "\n",
          "usage: lockctl compare --backend URI [--backend URI ...] [--quick] [--lease D]"
              + " [--contenders N] [--out DIR]",
          "",
          "Runs the fault scenarios of FAULTS.md against each backend: contender processes take one"
              + " lock in",
          "turns and write through an unguarded and a fenced counter while a holder is frozen"
              + " (SIGSTOP) past",
          "its lease or killed (SIGKILL). Prints a table per backend, scenarios in FAULTS.md order,"
              + " of the",
          "backend's declared guarantee, the published prediction and what was observed, within 100"
              + " columns;",
          "writes every figure to a Markdown table and an HTML report with a hold timeline per"
              + " scenario.",
          "Faults of the lock server itself (pause, restart, partition, failover, clock jump) need"
              + " a server",
          "the tool controls: they are reported as not run here; mvn verify -pl lock-compare runs"
              + " them on",
          "servers it starts (-Dlocksmith.compare.full=true for all).",
          "",
          "  --backend URI     a backend to compare (repeat for several); default LOCKSMITH_URI",
          "  --quick           only the quick scenarios",
          "  --lease D         the contenders' lease, 200ms to 30s (default 1s)",
          "  --contenders N    contender processes per scenario, 2 to 8 (default 3)",
          "  --out DIR         where to write fault-comparison.md and .html (every figure, a hold"
              + " timeline)",
          "                    (default: a new directory under the system's temporary directory)",
          "",
          "Exit status: 0 when every result agrees with the declared guarantee, 1 when one"
              + " disagrees, 2 bad command line,",
          "69 backend unreachable, 78 bad backend configuration.");

  private final PrintStream out;
  private final PrintStream err;

  CompareCommand(PrintStream out, PrintStream err) {
    this.out = out;
    this.err = err;
  }

  int run(List<String> argv) throws InterruptedException {
    List<String> backends = new ArrayList<>();
    List<String> rest = new ArrayList<>();
    for (int i = 0; i < argv.size(); i++) {
      if (argv.get(i).equals("--backend") && i + 1 < argv.size()) {
        backends.add(argv.get(++i));
      } else if (argv.get(i).startsWith("--backend=")) {
        backends.add(argv.get(i).substring("--backend=".length()));
      } else {
        rest.add(argv.get(i));
      }
    }
    Args args = Args.parse(rest, Set.of("lease", "contenders", "out"), Set.of("quick", "help"));
    if (args.flag("help")) {
      out.println(USAGE);
      return Main.OK;
    }
    if (!args.positional().isEmpty()) {
      throw new Args.UsageException("unexpected argument '" + args.positional().get(0) + "'");
    }
    String source = "--backend";
    if (backends.isEmpty()) {
      if (System.getenv("LOCKSMITH_URI") == null) {
        throw new Args.UsageException(
            "no backend: give --backend URI (repeatable) or set LOCKSMITH_URI");
      }
      backends.add(System.getenv("LOCKSMITH_URI"));
      source = "LOCKSMITH_URI";
    }
    Comparison.Builder builder =
        Comparison.builder()
            .lease(
                args.duration(
                    "lease", Duration.ofSeconds(1), Duration.ofMillis(200), Duration.ofSeconds(30)))
            .contenders(args.integer("contenders", 3, 2, 8))
            .quick(args.flag("quick"))
            .progress(line -> err.println("lockctl compare: " + line));
    List<String> labels = new ArrayList<>();
    for (String uri : backends) {
      Backends.fromUri(source, uri); // every problem with the URI, before anything starts
      labels.add(Secrets.display(uri));
      builder.target(
          Comparison.Target.of(Secrets.display(uri), uri, FaultHooks.NONE, Duration.ofSeconds(2)));
    }
    Path named = null;
    if (args.get("out") != null) {
      try {
        named =
            Files.createDirectories(
                Path.of(args.get("out"))); // before the run, which takes a while
      } catch (IOException | RuntimeException e) {
        throw new Args.UsageException(
            "--out was '"
                + args.get("out")
                + "' but it must be a directory lockctl can create and write ("
                + e.getClass().getSimpleName()
                + ": "
                + e.getMessage()
                + ")");
      }
    }
    Report report = builder.build().run();
    out.print(CompareTable.render(report, labels, args.flag("quick")));
    Path dir = named;
    try {
      if (dir == null) {
        dir =
            Files.createTempDirectory(
                "lockctl-compare-"); // only once there is a report to put in it
      }
      Path md = dir.resolve("fault-comparison.md").toAbsolutePath();
      Path html = dir.resolve("fault-comparison.html").toAbsolutePath();
      Files.writeString(md, report.markdown(), StandardCharsets.UTF_8);
      Files.writeString(html, report.html(), StandardCharsets.UTF_8);
      out.println();
      out.println(
          "Every figure (holds, overlaps, lost updates, stale writes refused, token regressions,"
              + " recovery,");
      out.println("loss signals) and a hold timeline per scenario are in:");
      out.println("  " + md);
      out.println("  " + html);
    } catch (IOException e) {
      err.println(
          "lockctl compare: could not write the report to "
              + (dir == null ? "a temporary directory" : dir)
              + ": "
              + e.getMessage());
      return Main.FAILED;
    }
    return report.failures().isEmpty() ? Main.OK : Main.FAILED;
  }
}
