package dev.locksmith.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Sections of RESULTS.md that a measurement of their own writes (the {@code @Locked} overhead, the
 * Redis Cluster rows, ...), each between {@code <!-- NAME:start -->} and {@code <!-- NAME:end -->}.
 * Such a run replaces only its own section; a full run-bench.sh run rewrites the rest of the file
 * and keeps every section it did not measure itself.
 */
final class ResultSections {
  private static final Pattern SECTION =
      Pattern.compile("<!-- ([a-z0-9-]+):start -->.*?<!-- \\1:end -->\n?", Pattern.DOTALL);

  private ResultSections() {}

  static String start(String name) {
    return "<!-- " + name + ":start -->";
  }

  static String end(String name) {
    return "<!-- " + name + ":end -->";
  }

  /**
   * @param text the whole file
   * @param name the section's name
   * @param body the section's markdown, without its markers
   * @return {@code text} with the section replaced, or appended if it had none
   */
  static String replace(String text, String name, String body) {
    String section =
        start(name) + "\n" + body + (body.endsWith("\n") ? "" : "\n") + end(name) + "\n";
    int s = text.indexOf(start(name));
    int e = text.indexOf(end(name));
    if (s >= 0 && e > s) {
      return text.substring(0, s)
          + section
          + text.substring(e + end(name).length()).replaceFirst("^\n", "");
    }
    return text
        + (text.isEmpty() || text.endsWith("\n\n") ? "" : text.endsWith("\n") ? "\n" : "\n\n")
        + section;
  }

  /**
   * Replaces the section {@code name} of the file {@code results} (created if missing) with {@code
   * body}.
   */
  static void write(Path results, String name, String body) throws IOException {
    String old = Files.exists(results) ? Files.readString(results, StandardCharsets.UTF_8) : "";
    Files.writeString(results, replace(old, name, body), StandardCharsets.UTF_8);
  }

  /**
   * @param existing the RESULTS.md about to be rewritten
   * @param report the new report
   * @return the new report with every section of the existing file that the report lacks appended
   * @throws IOException if the existing file cannot be read
   */
  static String keepAll(Path existing, String report) throws IOException {
    if (!Files.exists(existing)) {
      return report;
    }
    String result = report;
    Matcher m = SECTION.matcher(Files.readString(existing, StandardCharsets.UTF_8));
    while (m.find()) {
      String name = m.group(1);
      if (!result.contains(start(name))) {
        String whole = m.group().strip();
        String body =
            whole.substring(start(name).length() + 1, whole.length() - end(name).length());
        result = replace(result, name, body);
      }
    }
    return result;
  }

  /**
   * The first line of a section: when and how it was measured, the commit, the load around it.
   *
   * @param runner the class that measured it
   * @param only the {@code --only} word that reruns it
   * @param started when it started
   * @param loadBefore the load average before it
   * @param quick whether it was a quick run
   * @return the line, ending with a full stop
   */
  static String measured(
      String runner, String only, java.time.Instant started, String loadBefore, boolean quick) {
    java.time.Instant now = java.time.Instant.now();
    return "Measured "
        + started
        + " – "
        + now
        + " ("
        + java.time.Duration.between(started, now).toSeconds()
        + " s) by `"
        + runner
        + "`, with `"
        + System.getenv().getOrDefault("BENCH_COMMAND", "lock-bench/run-bench.sh --only " + only)
        + "`"
        + (quick ? " (**quick**: indicative only)" : "")
        + ", git "
        + JdbcPeersRun.env("BENCH_GIT")
        + ". Load average "
        + loadBefore
        + " before, "
        + Machine.loadAverage()
        + " after (2 shared cores; others build).";
  }
}
