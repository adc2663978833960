package dev.locksmith.bench;

/**
 * Counts who held a contended lock, in the order they held it. {@link #acquired(int, boolean)} is
 * called by a client right after its acquire returned, while it holds the lock, so the order of
 * calls is the order of holdings. A hand-off is a holding by a different client than the one
 * before; a barging lock, whose releasing client takes the lock straight back, makes few of them.
 * Also checks mutual exclusion: a holding that starts while another is still open (for a semaphore
 * of N permits: while N are) is counted as an overlap (a broken lock, or a lease that expired under
 * its holder).
 */
final class HandoffCounter {
  private final long[] perClient;
  private final int capacity;
  private int last = -1;
  private int open;
  private int mostOpen;
  private long handoffs;
  private long overlaps;

  HandoffCounter(int clients) {
    this(clients, 1);
  }

  /**
   * @param clients the clients, numbered from 0
   * @param capacity how many may hold at once: 1 for a lock, the permits for a semaphore (a holding
   *     that starts while that many are open is an overlap)
   */
  HandoffCounter(int clients, int capacity) {
    this.perClient = new long[clients];
    this.capacity = capacity;
  }

  /**
   * @param client the client that now holds the lock, from 0
   * @param counted whether this holding falls in the measured window (the holder is tracked either
   *     way)
   * @return whether this holding is a hand-off: the previous holding was another client's
   */
  synchronized boolean acquired(int client, boolean counted) {
    if (open >= capacity) {
      overlaps++;
    }
    open++;
    mostOpen = Math.max(mostOpen, open);
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

  /**
   * @return the most holdings open at once
   */
  synchronized int mostOpen() {
    return mostOpen;
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
