package dev.locksmith.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Draws the report's figures as one SVG of horizontal bar panels; no library, just text. */
final class Chart {
  private static final int WIDTH = 900;

  /** Room for the longest target label (40 characters and its bound) at the default font. */
  private static final int LABEL = 340;

  private static final int BAR_MAX = 440;
  private static final int ROW = 20;

  private Chart() {}

  static String svg(BenchMain.Results r) {
    List<Panel> panels = new ArrayList<>();
    Map<String, Double> ratios = new LinkedHashMap<>();
    Map<String, String> verdicts = new LinkedHashMap<>();
    for (Report.Target t : Report.targets(r)) {
      Double ratio = t.ratio();
      // Every target with a figure gets a row: a growth of 0 or less (no growth at all) cannot sit
      // on a log scale, so it is drawn as a stub with its value, not left out.
      if (ratio != null) {
        String label =
            t.what
                .replaceAll(" \\(.*\\)", "")
                .replace(", Locksmith / ", " vs ")
                .replace(
                    "round trips per renewal period, 10,000 leases held",
                    "round trips / period, 10,000 leases")
                .replace(
                    "contended waiter p99 vs hand-written sleep loop", "waiter p99 vs sleep loop")
                .replace("server requests/s while holding ", "requests/s, ")
                .replace("8-thread throughput", "8-thread ops/s")
                .replace("uncontended p50", "p50")
                .replace("contended hand-offs/s", "hand-offs/s");
        label = label.length() > 40 ? label.substring(0, 39) + "…" : label;
        ratios.put(label + " (" + (t.atMost ? "≤ " : "≥ ") + Report.fmtBound(t.bound) + ")", ratio);
        verdicts.put(
            label + " (" + (t.atMost ? "≤ " : "≥ ") + Report.fmtBound(t.bound) + ")", t.verdict());
      }
    }
    Panel targets =
        new Panel(
            "Targets: each ratio from this run (green: met, red: missed; log scale)", ratios, true);
    targets.colors = verdicts;
    panels.add(targets);
    panels.add(
        panel(
            "Uncontended acquire + release, 1 thread: p50 latency (µs, log scale, lower is better)",
            r.uncontended.keySet(),
            impl -> r.un(impl, "p50Us"),
            true));
    panels.add(
        panel(
            "Uncontended, 8 threads on distinct names: throughput (ops/s, log scale, higher is"
                + " better)",
            r.uncontended.keySet(),
            impl -> r.un(impl, "opsPerSec8"),
            true));
    panels.add(
        panel(
            "Contended, 4 clients, 1 ms holds: hand-offs per second (log scale, higher is better)",
            r.contended.keySet(),
            impl -> r.con(impl, "handoffsPerSec"),
            true));
    panels.add(
        panel(
            "Contended: waiter p99 wait (ms, log scale, lower is better)",
            r.contended.keySet(),
            impl -> Report.ms(r.con(impl, "waiterP99Us")),
            true));
    panels.add(
        panel(
            "10,000 held locks: round trips per renewal period (lower is better; target ≤ 100)",
            r.scale.keySet(),
            impl -> Report.roundTrips(r, impl),
            false));
    int height = 40;
    for (Panel p : panels) {
      height += p.height();
    }
    StringBuilder s = new StringBuilder();
    s.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"")
        .append(WIDTH)
        .append("\" height=\"")
        .append(height)
        .append("\" font-family=\"sans-serif\" font-size=\"12\">\n");
    s.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    s.append("<text x=\"10\" y=\"22\" font-size=\"15\" font-weight=\"bold\">lock-bench")
        .append(r.quick ? " (--quick)" : "")
        .append(
            ": Locksmith (blue), raw floor (grey), off-the-shelf (orange), sleep loop"
                + " (red)</text>\n");
    int y = 40;
    for (Panel p : panels) {
      y = p.draw(s, y);
    }
    s.append("</svg>\n");
    return s.toString();
  }

  interface Figure {
    Double of(String impl);
  }

  private static Panel panel(String title, Iterable<String> impls, Figure figure, boolean log) {
    Map<String, Double> values = new LinkedHashMap<>();
    for (String impl : impls) {
      Double v = figure.of(impl);
      if (v != null && v > 0) {
        values.put(impl, v);
      }
    }
    return new Panel(title, values, log);
  }

  static String color(String impl) {
    if (impl.startsWith("locksmith")) {
      return "#2f6fb5";
    }
    if (impl.startsWith("raw")) {
      return "#8c8c8c";
    }
    if (impl.startsWith("blogloop")) {
      return "#c0392b";
    }
    return "#e08a1e";
  }

  static final class Panel {
    final String title;
    final Map<String, Double> values;
    final boolean log;

    /** When set: the verdict per row, which picks the bar's colour. */
    Map<String, String> colors;

    Panel(String title, Map<String, Double> values, boolean log) {
      this.title = title;
      this.values = values;
      this.log = log;
    }

    int height() {
      return 30 + Math.max(1, values.size()) * ROW + 14;
    }

    int draw(StringBuilder s, int y) {
      s.append("<text x=\"10\" y=\"")
          .append(y + 16)
          .append("\" font-weight=\"bold\">")
          .append(escape(title))
          .append("</text>\n");
      int row = y + 26;
      if (values.isEmpty()) {
        s.append("<text x=\"")
            .append(LABEL)
            .append("\" y=\"")
            .append(row + 14)
            .append("\" fill=\"#888\">not measured</text>\n");
        return y + height();
      }
      double max =
          values.values().stream()
              .mapToDouble(Double::doubleValue)
              .filter(v -> v > 0)
              .max()
              .orElse(1);
      double min =
          values.values().stream()
              .mapToDouble(Double::doubleValue)
              .filter(v -> v > 0)
              .min()
              .orElse(1);
      double logMin = Math.floor(Math.log10(min)) - 0.3;
      double logMax = Math.log10(max);
      for (Map.Entry<String, Double> e : values.entrySet()) {
        double v = e.getValue();
        double frac =
            v <= 0 ? 0 : log ? (Math.log10(v) - logMin) / Math.max(1e-9, logMax - logMin) : v / max;
        int w = (int) Math.max(1, Math.round(frac * BAR_MAX));
        s.append("<text x=\"")
            .append(LABEL - 6)
            .append("\" y=\"")
            .append(row + 14)
            .append("\" text-anchor=\"end\">")
            .append(escape(e.getKey()))
            .append("</text>\n");
        s.append("<rect x=\"")
            .append(LABEL)
            .append("\" y=\"")
            .append(row + 3)
            .append("\" width=\"")
            .append(w)
            .append("\" height=\"")
            .append(ROW - 6)
            .append("\" fill=\"")
            .append(
                colors == null
                    ? color(e.getKey())
                    : colors.get(e.getKey()).equals("met")
                        ? "#2e8b57"
                        : colors.get(e.getKey()).startsWith("level") ? "#d4a017" : "#c0392b")
            .append("\"/>\n");
        s.append("<text x=\"")
            .append(LABEL + w + 5)
            .append("\" y=\"")
            .append(row + 14)
            .append("\">")
            .append(escape(Report.fmt(v)))
            .append("</text>\n");
        row += ROW;
      }
      return y + height();
    }
  }

  static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }
}
