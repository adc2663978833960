package dev.locksmith.tck.compare;

import java.util.ArrayList;
import java.util.List;

/**
 * Contenders' reports written by hand for the tests of a result's accounting, timed from one base.
 */
abstract class HandWrittenEvents {
  final long base = System.nanoTime();
  final List<Comparison.Event> events = new ArrayList<>();

  /** Adds a contender's report line: {@code kind}, then {@code rest}, separated by spaces. */
  void event(int contender, String kind, String... rest) {
    events.add(new Comparison.Event(contender, kind + " " + String.join(" ", rest)));
  }

  /**
   * @return the report's time field for {@code ms} after the base
   */
  String at(long ms) {
    return Long.toString(base + ms * 1_000_000);
  }
}
