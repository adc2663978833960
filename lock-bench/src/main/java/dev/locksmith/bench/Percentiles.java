package dev.locksmith.bench;

import java.util.Arrays;

/** Exact percentiles of a set of samples (the runs here keep at most a few hundred thousand). */
final class Percentiles {
  private final long[] sorted;

  Percentiles(long[] samples) {
    this.sorted = samples.clone();
    Arrays.sort(sorted);
  }

  int count() {
    return sorted.length;
  }

  /**
   * @param p from 0 to 100 @return the nearest-rank percentile, 0 when there are no samples
   */
  long at(double p) {
    if (sorted.length == 0) {
      return 0;
    }
    int rank = (int) Math.ceil(p / 100.0 * sorted.length);
    return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
  }

  long max() {
    return sorted.length == 0 ? 0 : sorted[sorted.length - 1];
  }
}
