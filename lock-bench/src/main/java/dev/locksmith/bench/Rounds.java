package dev.locksmith.bench;

import java.util.Arrays;

/**
 * The arithmetic of interleaved rounds: per-round ratios of two implementations measured side by
 * side, their median, their spread (min and max), and the median's 95 % confidence interval, on
 * which a target's verdict is decided.
 */
final class Rounds {
  private Rounds() {}

  /**
   * @return {@code a[i] / b[i]} for every round both measured (a missing, NaN or zero figure drops
   *     the round), or null when either side has no rounds
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

  /**
   * @return the median (mean of the two middle values for an even count), NaN for no values
   */
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

  /** The confidence an interval of the median must have at least: 95 %. */
  static final double CONFIDENCE = 0.95;

  /**
   * How many of the lowest and of the highest per-round values the confidence interval of the
   * median leaves out, plus one: the interval is {@code [x(k), x(n-k+1)]} of the sorted values,
   * with the largest {@code k} whose coverage is at least {@link #CONFIDENCE}. That is the
   * distribution-free interval of a median (it assumes only that rounds are independent, not any
   * shape of their noise): the true median lies below {@code x(k)} only if at most {@code k-1} of
   * {@code n} rounds fell below it, which has probability {@code P(Binomial(n, 1/2) <= k-1)}, and
   * likewise above. With fewer than 6 rounds no interval reaches 95 %, and the min-max (k = 1) is
   * used; with 6 to 8 rounds it is the min-max; 9 to 11 drop one round at each end, 12 to 14 two.
   */
  static int intervalRank(int n) {
    int k = 1;
    while (k + 1 <= (n + 1) / 2 && coverage(n, k + 1) >= CONFIDENCE) {
      k++;
    }
    return k;
  }

  /**
   * @return the probability that {@code [x(k), x(n-k+1)]} of n independent rounds holds their true
   *     median
   */
  static double coverage(int n, int k) {
    double below = 0; // P(Binomial(n, 1/2) <= k - 1)
    double choose = 1;
    for (int i = 0; i <= k - 1; i++) {
      below += choose;
      choose = choose * (n - i) / (i + 1);
    }
    return 1 - 2 * below / Math.pow(2, n);
  }

  /**
   * @return the lower end of the median's confidence interval ({@link #intervalRank}), NaN for no
   *     values
   */
  static double low(double[] v) {
    if (v == null || v.length == 0) {
      return Double.NaN;
    }
    double[] s = v.clone();
    Arrays.sort(s);
    return s[intervalRank(s.length) - 1];
  }

  /**
   * @return the upper end of the median's confidence interval ({@link #intervalRank}), NaN for no
   *     values
   */
  static double high(double[] v) {
    if (v == null || v.length == 0) {
      return Double.NaN;
    }
    double[] s = v.clone();
    Arrays.sort(s);
    return s[s.length - intervalRank(s.length)];
  }

  /**
   * @return "met" when the median's confidence interval ({@link #low} to {@link #high}) is on the
   *     right side of the bound, "missed" when it is on the wrong side, "undecided" when it
   *     straddles it (then the target is not met). Below 9 rounds the interval is the min-max, so
   *     every round must be on the right side.
   */
  static String verdict(double[] ratios, boolean atMost, double bound) {
    double lo = low(ratios);
    double hi = high(ratios);
    boolean allRight = atMost ? hi <= bound : lo >= bound;
    boolean allWrong = atMost ? lo > bound : hi < bound;
    return allRight ? "met" : allWrong ? "missed" : "undecided";
  }
}
