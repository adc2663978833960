package dev.locksmith.bench;

/**
 * Counts who held a contended lock, in the order they held it. {@link #acquired(int, boolean)} is
 * called by a client right after its acquire returned, while it holds the lock, so the order of
 * calls is the order of holdings. A hand-off is a holding by a different client than the one
 * before; a barging lock, whose releasing client takes the lock straight back, makes few of them.
 * Also checks mutual exclusion: a holding that starts while another is still open is counted as
 * an overlap (a broken lock, or a lease that expired under its holder).
 */
final class HandoffCounter {
  private final long[] perClient;
  private int last = -1;
  private int open;
  private long handoffs;
  private long overlaps;

  HandoffCounter(int clients) {
    this.perClient = new long[clients];
  }

  /**
   * @param client the client that now holds the lock, from 0
   * @param counted whether this holding falls in the measured window (the holder is tracked either way)
   * @return whether this holding is a hand-off: the previous holding was another client's
   */
  synchronized boolean acquired(int client, boolean counted) {
    if (open > 0) {
      overlaps++;
    }
    open++;
    boolean handoff = last >= 0 && last != client;
    if (counted) {
      perClient[client]++;
      if (handoff) {
        handoffs++;
      }
    }
    last = client;
    return handoff;
  }

  /** Called by the holder just before it releases. */
  synchronized void releasing() {
    open--;
  }

  synchronized long handoffs() {
    return handoffs;
  }

  synchronized long overlaps() {
    return overlaps;
  }

  synchronized long[] perClient() {
    return perClient.clone();
  }

  synchronized long total() {
    long sum = 0;
    for (long n : perClient) {
      sum += n;
    }
    return sum;
  }
}
