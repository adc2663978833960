package dev.locksmith.bench;

import java.nio.file.Path;
import java.time.Instant;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs {@link AnnotationOverheadBench} and writes its section of RESULTS.md (see {@link
 * ResultSections}). Usage: {@code AnnotationOverheadMain [RESULTS.md]}.
 */
public final class AnnotationOverheadMain {
  static final String SECTION = "annotation-overhead";

  private AnnotationOverheadMain() {}

  /**
   * @param args the RESULTS.md to update, {@code lock-bench/RESULTS.md} by default
   * @throws Exception if the benchmark cannot run
   */
  public static void main(String[] args) throws Exception {
    Path results = Path.of(args.length > 0 ? args[0] : "lock-bench/RESULTS.md");
    Collection<RunResult> runs =
        new Runner(
                new OptionsBuilder()
                    .include(AnnotationOverheadBench.class.getName() + "\\.")
                    .forks(1)
                    .threads(1)
                    .warmupIterations(5)
                    .warmupTime(TimeValue.seconds(2))
                    .measurementIterations(5)
                    .measurementTime(TimeValue.seconds(2))
                    .build())
            .run();
    Map<String, double[]> ns = new LinkedHashMap<>();
    for (RunResult r : runs) {
      String name = r.getParams().getBenchmark().replaceAll(".*\\.", "");
      ns.put(
          name,
          new double[] {r.getPrimaryResult().getScore(), r.getPrimaryResult().getScoreError()});
    }
    double direct = ns.get("direct")[0];
    StringBuilder md = new StringBuilder();
    md.append("## `@Locked` overhead (issue 18)\n\n")
        .append("Measured on ")
        .append(Instant.now())
        .append(" by `AnnotationOverheadMain` (JMH, 1 thread, 1 fork, 5 × 2 s warm-up, ")
        .append(
            "5 × 2 s measured, AverageTime) on `local:`, on a shared 2-core machine. `direct` is ")
        .append(
            "`lock.tryAcquire(Duration.ZERO)` + release; the others call the same through a"
                + " `@Locked` Spring proxy. ")
        .append("Goal: the annotation adds at most 2 µs per call.\n\n")
        .append(
            "| benchmark | ns/op | ± (99.9 %) | added over direct | goal ≤ 2,000 ns |\n"
                + "|---|---|---|---|---|\n");
    for (Map.Entry<String, double[]> e : ns.entrySet()) {
      double added = e.getValue()[0] - direct;
      md.append(
          String.format(
              "| %s | %,.0f | %,.0f | %s | %s |%n",
              e.getKey(),
              e.getValue()[0],
              e.getValue()[1],
              e.getKey().equals("direct") ? "" : String.format("%,.0f ns", added),
              e.getKey().equals("direct") ? "" : added <= 2_000 ? "met" : "**missed**"));
    }
    md.append("\nRerun: `lock-bench/run-annotation-bench.sh`.\n");
    ResultSections.write(results, SECTION, md.toString());
    System.out.print(md);
  }
}
