package dev.locksmith.tck.compare;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The outcome of a {@link Comparison}: a Markdown table (failing results first) and a
 * self-contained HTML page.
 */
public final class Report {
  private final List<Result> results;
  private final Duration lease;
  private final boolean quick;

  Report(List<Result> results, Duration lease, boolean quick) {
    this.results = List.copyOf(results);
    this.lease = lease;
    this.quick = quick;
  }

  /** How the columns read for the semaphore rows. */
  static final String SEMAPHORE_LEGEND =
      "Semaphore rows (N = "
          + Comparison.SEMAPHORE_PERMITS
          + " permits, N + 1 contenders): overlaps = holds that began while N others were held;"
          + " lost (unguarded / fenced) = entries while N holders were inside the resource (it"
          + " cannot tell a dead or paused holder from a live one) / writes of holders beyond N"
          + " whose permit was gone that the resource's fence let through; available again after ="
          + " until N holders other than the victim held at once (its permit was back). U also when"
          + " N + 1 leases the backend called live were held at once, or a token was granted twice;"
          + " \"leaked\" when fewer than N permits could be taken after every contender had gone"
          + " (within lease + slack + 1 s + lease), which disagrees whatever the promise.";

  /**
   * @return every result, in run order
   */
  public List<Result> results() {
    return results;
  }

  /**
   * @return results that ran and observed worse than the backend declared
   */
  public List<Result> failures() {
    return results.stream()
        .filter(r -> r.notRunReason == null && !r.agrees)
        .collect(Collectors.toList());
  }

  private List<Result> ordered() {
    List<Result> out = new ArrayList<>(failures());
    results.stream().filter(r -> !out.contains(r)).forEach(out::add);
    return out;
  }

  /**
   * @return the table in Markdown, failing results first
   */
  public String markdown() {
    StringBuilder b = new StringBuilder();
    b.append("Fault comparison")
        .append(quick ? " (quick)" : "")
        .append(": lease ")
        .append(lease.toMillis())
        .append(
            " ms. S = no overlap, no lost update; F = holds overlapped but the fenced counter lost"
                + " nothing; U = the fenced counter lost updates or tokens went backwards; A = not"
                + " acquirable during the fault.\n\n")
        .append(SEMAPHORE_LEGEND)
        .append("\n\n");
    b.append(
        "| result | backend | # | scenario | declared | predicted | observed | holds | overlaps |"
            + " lost (unguarded / fenced) | stale writes refused | token regressions | available"
            + " again after | loss signals | note |\n");
    b.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (Result r : ordered()) {
      String verdict =
          r.notDeclared
              ? r.notRunReason
              : r.notRunReason != null
                  ? "not run: " + r.notRunReason
                  : r.agrees ? "agrees" : "**DISAGREES**";
      b.append(
          String.format(
              Locale.ROOT,
              "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n",
              verdict,
              r.target,
              r.fault.ordinal() + 1,
              r.scenario,
              r.declared,
              r.predicted,
              r.observed,
              ran(r, r.holds),
              ran(r, r.overlaps),
              r.notRunReason != null ? "" : r.unguardedLost + " / " + r.fencedLost,
              ran(r, r.staleRejected),
              ran(r, r.tokenRegressions),
              r.notRunReason != null || r.availableAfterMs == null
                  ? ""
                  : r.availableAfterMs + " ms",
              r.notRunReason != null
                  ? ""
                  : r.lossSignals
                      + (r.lossSignalAfterMs == null
                          ? ""
                          : " (first after " + r.lossSignalAfterMs + " ms)"),
              r.notRunReason != null ? "" : r.note.replace("|", "\\|")));
    }
    long failed = failures().size();
    long notRun = results.stream().filter(r -> r.notRunReason != null).count();
    long notDeclared = results.stream().filter(r -> r.notDeclared).count();
    b.append(
        String.format(
            Locale.ROOT,
            "%n%d results: %d agree with the declared guarantee, %d disagree, %d not run, %d not"
                + " declared (a feature the scenario needs is not declared by the backend).%n",
            results.size(),
            results.size() - failed - notRun,
            failed,
            notRun - notDeclared,
            notDeclared));
    return b.toString();
  }

  private static String ran(Result r, long value) {
    return r.notRunReason != null ? "" : Long.toString(value);
  }

  /**
   * @return a self-contained HTML page: the table and a hold timeline per scenario that ran
   */
  public String html() {
    StringBuilder b = new StringBuilder();
    b.append(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>Locksmith fault"
                + " comparison</title><style>")
        .append(
            "body{font:14px"
                + " system-ui,sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px"
                + " solid #ccc;padding:3px 6px}")
        .append(
            ".bad{background:#fdd}.skip{color:#888}h2{margin-top:2em;font-size:16px}</style></head><body>")
        .append("<h1>Locksmith fault comparison</h1><p>Lease ")
        .append(lease.toMillis())
        .append(" ms")
        .append(quick ? ", quick mode" : "")
        .append(
            ". S = no overlap, no lost update; F = holds overlapped but the fenced counter lost"
                + " nothing; U = the fenced counter lost ")
        .append("updates or tokens went backwards; A = not acquirable during the fault.</p><p>")
        .append(esc(SEMAPHORE_LEGEND))
        .append("</p><table><tr><th>result</th><th>backend</th><th>#</th>")
        .append(
            "<th>scenario</th><th>declared</th><th>predicted</th><th>observed</th><th>holds</th><th>overlaps</th><th>lost"
                + " (unguarded / fenced)</th>")
        .append("<th>stale writes refused</th><th>available again after</th><th>note</th></tr>");
    for (Result r : ordered()) {
      String cls = r.notRunReason != null ? "skip" : r.agrees ? "" : "bad";
      b.append("<tr class=\"")
          .append(cls)
          .append("\"><td>")
          .append(
              esc(
                  r.notDeclared
                      ? r.notRunReason
                      : r.notRunReason != null
                          ? "not run: " + r.notRunReason
                          : r.agrees ? "agrees" : "DISAGREES"))
          .append("</td><td>")
          .append(esc(r.target))
          .append("</td><td>")
          .append(r.fault.ordinal() + 1)
          .append("</td><td>")
          .append(esc(r.scenario))
          .append("</td><td>")
          .append(r.declared)
          .append("</td><td>")
          .append(esc(r.predicted))
          .append("</td><td>")
          .append(r.observed)
          .append("</td><td>")
          .append(ran(r, r.holds))
          .append("</td><td>")
          .append(ran(r, r.overlaps))
          .append("</td><td>")
          .append(r.notRunReason != null ? "" : r.unguardedLost + " / " + r.fencedLost)
          .append("</td><td>")
          .append(ran(r, r.staleRejected))
          .append("</td><td>")
          .append(r.availableAfterMs == null ? "" : r.availableAfterMs + " ms")
          .append("</td><td>")
          .append(esc(r.notRunReason != null ? "" : r.note))
          .append("</td></tr>");
    }
    b.append("</table>");
    for (Result r : results) {
      if (r.notRunReason == null && !r.bars.isEmpty()) {
        b.append("<h2>")
            .append(esc(r.target))
            .append(": ")
            .append(esc(r.scenario))
            .append(" — observed ")
            .append(r.observed)
            .append("</h2>")
            .append(timeline(r));
      }
    }
    return b.append("</body></html>\n").toString();
  }

  private static String timeline(Result r) {
    int rows = r.bars.stream().mapToInt(x -> (int) x[0]).max().orElse(0) + 1;
    double width = 900;
    int left = 130; // room for "contender N (victim)"
    double scale = width / Math.max(1, r.spanMs);
    int rowH = 22;
    StringBuilder s = new StringBuilder();
    s.append(
        String.format(
            Locale.ROOT,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%d\""
                + " font-size=\"10\">",
            width + left + 10,
            rows * rowH + 30));
    s.append(
        String.format(
            Locale.ROOT,
            "<rect x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"%d\" fill=\"#fee\"/>",
            left + r.faultStartMs * scale,
            Math.max(2, (r.faultEndMs - r.faultStartMs) * scale),
            rows * rowH));
    for (int i = 0; i < rows; i++) {
      s.append(
          String.format(
              Locale.ROOT,
              "<text x=\"0\" y=\"%d\">contender %d%s</text>",
              i * rowH + 15,
              i,
              i == r.victim ? " (victim)" : ""));
    }
    List<long[]> bars = new ArrayList<>(r.bars);
    bars.sort(Comparator.comparingLong(x -> x[2]));
    for (long[] bar : bars) {
      double x = left + bar[2] * scale;
      double w = Math.max(1, (bar[3] - bar[2]) * scale);
      String color = "hsl(" + (bar[1] * 47 % 360) + ",60%,55%)";
      s.append(
          String.format(
              Locale.ROOT,
              "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>token %d:"
                  + " %d–%d ms</title></rect>",
              x,
              bar[0] * rowH + 3,
              w,
              rowH - 6,
              color,
              bar[1],
              bar[2],
              bar[3]));
    }
    for (long[] mark : r.lossMarks) {
      s.append(
          String.format(
              Locale.ROOT,
              "<text x=\"%.1f\" y=\"%d\" fill=\"#c00\">✕ lost</text>",
              left + mark[1] * scale,
              mark[0] * rowH + 15));
    }
    s.append(
        String.format(
            Locale.ROOT,
            "<text x=\"%d\" y=\"%d\">0 ms</text><text x=\"%.0f\" y=\"%d\" text-anchor=\"end\">%d"
                + " ms</text>",
            left,
            rows * rowH + 20,
            width + left,
            rows * rowH + 20,
            r.spanMs));
    return s.append("</svg>").toString();
  }

  private static String esc(String s) {
    return s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\"", "&quot;");
  }
}
