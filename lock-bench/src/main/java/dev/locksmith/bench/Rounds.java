package dev.locksmith.bench;

import java.util.Arrays;

/**
 * The arithmetic of interleaved rounds: per-round ratios of two implementations measured side by
 * side, their median, and their spread (min and max), on which a target's verdict is decided.
 */
final class Rounds {
  private Rounds() {}

  /**
   * @return {@code a[i] / b[i]} for every round both measured (a missing, NaN or zero figure drops the round), or null
   *     when either side has no rounds
   */
  static double[] ratios(double[] a, double[] b) {
    if (a == null || b == null) {
      return null;
    }
    int n = Math.min(a.length, b.length);
    double[] out = new double[n];
    int k = 0;
    for (int i = 0; i < n; i++) {
      if (!Double.isNaN(a[i]) && !Double.isNaN(b[i]) && b[i] != 0) {
        out[k++] = a[i] / b[i];
      }
    }
    return k == 0 ? null : Arrays.copyOf(out, k);
  }

  /** @return the median (mean of the two middle values for an even count), NaN for no values */
  static double median(double[] v) {
    if (v == null || v.length == 0) {
      return Double.NaN;
    }
    double[] s = v.clone();
    Arrays.sort(s);
    int m = s.length / 2;
    return s.length % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2;
  }

  static double min(double[] v) {
    return v == null || v.length == 0 ? Double.NaN : Arrays.stream(v).min().getAsDouble();
  }

  static double max(double[] v) {
    return v == null || v.length == 0 ? Double.NaN : Arrays.stream(v).max().getAsDouble();
  }

  /**
   * @return "met" when every round is on the right side of the bound, "missed" when every round is on the wrong side,
   *     "undecided" when the spread straddles it (then the target is not met)
   */
  static String verdict(double[] ratios, boolean atMost, double bound) {
    boolean allRight = true;
    boolean allWrong = true;
    for (double r : ratios) {
      boolean right = atMost ? r <= bound : r >= bound;
      allRight &= right;
      allWrong &= !right;
    }
    return allRight ? "met" : allWrong ? "missed" : "undecided";
  }
}
