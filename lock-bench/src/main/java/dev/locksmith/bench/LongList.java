package dev.locksmith.bench;

import java.util.Arrays;

/** A growable array of longs without boxing, for samples recorded in a timed loop. */
final class LongList {
  private long[] values = new long[1024];
  private int size;

  void add(long v) {
    if (size == values.length) {
      values = Arrays.copyOf(values, size * 2);
    }
    values[size++] = v;
  }

  long[] toArray() {
    return Arrays.copyOf(values, size);
  }
}
