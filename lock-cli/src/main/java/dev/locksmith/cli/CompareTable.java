package dev.locksmith.cli;

import dev.locksmith.Guarantees.Promise;
import dev.locksmith.tck.compare.Report;
import dev.locksmith.tck.compare.Result;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The comparison as {@code lockctl compare} prints it: per backend, in the order given, one row per
 * scenario in FAULTS.md order, in six columns that fit a terminal of 100 columns (long cells wrap
 * within their column). The figures behind each verdict are in the report files.
 */
final class CompareTable {
  static final int WIDTH = 100;
  private static final String[] HEADINGS = {
    "#", "scenario", "declared", "predicted", "observed", "result"
  };
  private static final int[] WIDTHS = {2, 42, 8, 18, 8, 9};
  private static final String GAP = "  ";

  private CompareTable() {}

  /**
   * @param report the comparison's outcome
   * @param labels the backends' labels, in the order they were given
   * @param quick whether only the quick scenarios ran
   * @return the table, the reasons why scenarios did not run, and the disagreements, each line at
   *     most {@link #WIDTH} wide
   */
  static String render(Report report, List<String> labels, boolean quick) {
    StringBuilder b = new StringBuilder();
    b.append("Fault comparison").append(quick ? " (quick)" : "").append('\n');
    for (String line :
        wrap(
            "declared, predicted, observed: S safe (no overlap, no lost update); F safe only with"
                + " fencing (holds overlapped, the fenced counter lost nothing); U unsafe (the"
                + " fenced counter lost updates or tokens went backwards); A not acquirable during"
                + " the fault.",
            WIDTH)) {
      b.append(line).append('\n');
    }
    List<Result> rows = new ArrayList<>(report.results());
    // a stable order: backend as given, then scenario number; scenarios of one number keep their
    // run order
    rows.sort(
        Comparator.comparingInt((Result r) -> labels.indexOf(r.target()))
            .thenComparingInt(r -> r.fault().ordinal()));
    Map<String, List<Result>> byTarget = new LinkedHashMap<>();
    rows.forEach(r -> byTarget.computeIfAbsent(r.target(), k -> new ArrayList<>()).add(r));
    for (Map.Entry<String, List<Result>> target : byTarget.entrySet()) {
      b.append('\n').append(target.getKey()).append('\n');
      row(b, HEADINGS);
      Map<String, List<String>> notRun = new LinkedHashMap<>();
      for (Result r : target.getValue()) {
        String number = Integer.toString(r.fault().ordinal() + 1);
        String result = r.notRunReason() != null ? "not run" : r.agrees() ? "agrees" : "DISAGREES";
        row(b, number, r.scenario(), letter(r.declared()), r.predicted(), r.observed(), result);
        if (r.notRunReason() != null) {
          notRun.computeIfAbsent(r.notRunReason(), k -> new ArrayList<>()).add(number);
        }
      }
      notRun.forEach(
          (reason, numbers) -> {
            List<String> lines =
                wrap("not run: " + String.join(", ", numbers) + ": " + reason, WIDTH - 4);
            for (int i = 0; i < lines.size(); i++) {
              b.append(i == 0 ? "  " : "    ").append(lines.get(i)).append('\n');
            }
          });
    }
    b.append('\n');
    for (Result r : report.failures()) {
      for (String line :
          wrap(
              "DISAGREES: "
                  + r.target()
                  + ", "
                  + (r.fault().ordinal() + 1)
                  + " "
                  + r.scenario()
                  + ": declared "
                  + letter(r.declared())
                  + ", observed "
                  + r.observed()
                  + (r.note().isEmpty() ? "" : "; " + r.note()),
              WIDTH)) {
        b.append(line).append('\n');
      }
    }
    long failed = report.failures().size();
    long notRun = report.results().stream().filter(r -> r.notRunReason() != null).count();
    b.append(
        String.format(
            Locale.ROOT,
            "%d results: %d agree with the declared guarantee, %d disagree, %d not run.%n",
            report.results().size(),
            report.results().size() - failed - notRun,
            failed,
            notRun));
    return b.toString();
  }

  /**
   * @return the letter of the legend for a declaration
   */
  static String letter(Promise p) {
    switch (p) {
      case SAFE:
        return "S";
      case SAFE_WITH_FENCING:
        return "F";
      case UNSAFE:
        return "U";
      case UNAVAILABLE:
        return "A";
      default:
        return "n/a";
    }
  }

  private static void row(StringBuilder b, String... cells) {
    List<List<String>> wrapped = new ArrayList<>();
    int lines = 1;
    for (int i = 0; i < cells.length; i++) {
      List<String> w = wrap(cells[i], WIDTHS[i]);
      wrapped.add(w);
      lines = Math.max(lines, w.size());
    }
    for (int line = 0; line < lines; line++) {
      StringBuilder l = new StringBuilder();
      for (int i = 0; i < cells.length; i++) {
        String part = line < wrapped.get(i).size() ? wrapped.get(i).get(line) : "";
        l.append(
            i == 0
                ? String.format(Locale.ROOT, "%" + WIDTHS[i] + "s", part)
                : GAP + pad(part, WIDTHS[i]));
      }
      b.append(l.toString().stripTrailing()).append('\n');
    }
  }

  private static String pad(String s, int width) {
    return s.length() >= width ? s : s + " ".repeat(width - s.length());
  }

  /**
   * @return the text in lines of at most {@code width}, broken at spaces; a word longer than that
   *     is cut
   */
  static List<String> wrap(String text, int width) {
    List<String> lines = new ArrayList<>();
    StringBuilder line = new StringBuilder();
    for (String word : text.split(" ")) {
      while (word.length() > width) {
        if (line.length() > 0) {
          lines.add(line.toString());
          line.setLength(0);
        }
        lines.add(word.substring(0, width));
        word = word.substring(width);
      }
      if (line.length() > 0 && line.length() + 1 + word.length() > width) {
        lines.add(line.toString());
        line.setLength(0);
      }
      if (line.length() > 0) {
        line.append(' ');
      }
      line.append(word);
    }
    if (line.length() > 0 || lines.isEmpty()) {
      lines.add(line.toString());
    }
    return lines;
  }
}
