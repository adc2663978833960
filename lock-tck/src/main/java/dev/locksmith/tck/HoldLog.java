package dev.locksmith.tck;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Records holds of one lock as (client, token, start, end) and checks them: no two overlap, and
 * fencing tokens grow in the order of the holds. Thread-safe. Time is {@link System#nanoTime()},
 * the same clock for every process of a Linux machine. Backends' failover tests use it the way the
 * kit's rule 1.1 does.
 *
 * <pre>{@code
 * HoldLog log = new HoldLog();
 * try (Lease lease = lock.acquire(timeout)) {
 *   long start = System.nanoTime();
 *   ... work ...
 *   log.record(clientIndex, lease.fencingToken(), start, System.nanoTime());
 * }
 * log.assertNoOverlap();
 * log.assertTokensIncrease();
 * }</pre>
 */
public final class HoldLog {
  private final ConcurrentLinkedQueue<long[]> holds = new ConcurrentLinkedQueue<>();

  /**
   * @param client which client held the lock
   * @param token the lease's fencing token
   * @param start when the hold began (after acquire returned)
   * @param end when it ended (before release was called)
   */
  public void record(int client, long token, long start, long end) {
    holds.add(new long[] {client, token, start, end});
  }

  /**
   * @return how many holds were recorded
   */
  public int size() {
    return holds.size();
  }

  private List<long[]> sorted() {
    List<long[]> list = new ArrayList<>(holds);
    list.sort(Comparator.comparingLong(h -> h[2]));
    return list;
  }

  private static String show(long[] h) {
    return "client " + h[0] + " token " + h[1] + " [" + h[2] + ".." + h[3] + "]";
  }

  /**
   * @return the first two holds that overlapped, described, or null if none did
   */
  public String firstOverlap() {
    List<long[]> list = sorted();
    int count = 0;
    String first = null;
    for (int i = 1; i < list.size(); i++) {
      if (list.get(i)[2] - list.get(i - 1)[3] < 0) {
        count++;
        if (first == null) {
          first = show(list.get(i - 1)) + " and " + show(list.get(i));
        }
      }
    }
    return first == null ? null : first + (count > 1 ? " (" + count + " overlaps in all)" : "");
  }

  /**
   * @return the first hold whose token did not exceed the one before, described, or null
   */
  public String firstTokenInversion() {
    List<long[]> list = sorted();
    for (int i = 1; i < list.size(); i++) {
      if (list.get(i)[1] <= list.get(i - 1)[1]) {
        return "token "
            + list.get(i)[1]
            + " followed token "
            + list.get(i - 1)[1]
            + " ("
            + show(list.get(i - 1))
            + " then "
            + show(list.get(i))
            + ")";
      }
    }
    return null;
  }

  /**
   * @throws AssertionError naming the first two holds that overlapped
   */
  public void assertNoOverlap() {
    String overlap = firstOverlap();
    if (overlap != null) {
      throw new AssertionError("mutual exclusion broken: holds overlapped: " + overlap);
    }
  }

  /**
   * @throws AssertionError naming the first hold whose token did not exceed the one before
   */
  public void assertTokensIncrease() {
    String inversion = firstTokenInversion();
    if (inversion != null) {
      throw new AssertionError("fencing broken under contention: " + inversion);
    }
  }
}
