package dev.locksmith.jdbc;

import dev.locksmith.spi.Claim;
import dev.locksmith.spi.LockAttempt;
import dev.locksmith.spi.Poll;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One acquisition of a semaphore permit or a side of a read-write lock ({@link SharedTable}).
 *
 * <p>Wake-up: on PostgreSQL the waiter registers with the client's {@link ReleaseListener} under
 * the resource's {@link SharedTable#wakeKey} before its first read, and every release or writer
 * withdrawal announces that key; between notifications it polls only when a lease in its way runs
 * out, or by {@link JdbcBackend#FALLBACK_POLL_MILLIS}. Elsewhere (MySQL, MariaDB, H2) it polls with
 * the backend's jittered backoff ({@code backoff-min} to {@code backoff-max}), starting again from
 * the shortest whenever what is in its way changed: the named-lock bells of exclusive locks have
 * one holder per bell and do not fit a resource with many holders.
 *
 * <p>A waiting writer polls at least every third of its mark's life, so that its mark, which keeps
 * new readers out, lives on while it waits and ends by itself soon after it vanishes.
 */
final class SharedAttempt implements LockAttempt {
  private static final Logger LOG = LoggerFactory.getLogger(SharedAttempt.class);

  private final SharedTable table;
  private final String name;
  private final Claim claim;
  private final String ownerId;
  private final long leaseMillis;
  private final String holder;
  private final Runnable wake;

  /** PostgreSQL only; null where waiters poll. */
  private final ReleaseListener listener;

  private final String endpoint;
  private final BiFunction<String, SQLException, RuntimeException> unavailable;
  private final long backoffMinNanos;
  private final long backoffMaxNanos;
  private final String key;

  private long backoff;

  /**
   * The resource's fence and what was in our way at the last busy poll: a change restarts the
   * backoff.
   */
  private long lastFence = -1;

  private int lastInTheWay = -1;
  private boolean listening;
  private volatile boolean marked;
  private volatile boolean maybeHeld;

  SharedAttempt(
      SharedTable table,
      String name,
      Claim claim,
      String ownerId,
      long leaseMillis,
      String holder,
      Runnable wake,
      ReleaseListener listener,
      String endpoint,
      BiFunction<String, SQLException, RuntimeException> unavailable,
      long backoffMinNanos,
      long backoffMaxNanos) {
    this.table = table;
    this.name = name;
    this.claim = claim;
    this.ownerId = ownerId;
    this.leaseMillis = leaseMillis;
    this.holder = holder;
    this.wake = wake;
    this.listener = listener;
    this.endpoint = endpoint;
    this.unavailable = unavailable;
    this.backoffMinNanos = backoffMinNanos;
    this.backoffMaxNanos = backoffMaxNanos;
    this.backoff = backoffMinNanos;
    this.key = SharedTable.wakeKey(SharedTable.kind(claim), name);
  }

  private String what() {
    return Claim.noun(claim.kind()) + " '" + name + "' (" + claim + ")";
  }

  @Override
  public Poll poll() throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException("interrupted before polling " + what());
    }
    if (listener != null && !listening) {
      listener.register(key, wake); // before the read: a release committed after it wakes us
      listening = true;
    }
    SharedTable.Take t;
    try {
      t = table.tryTake(name, claim, ownerId, leaseMillis, holder, () -> maybeHeld = true);
    } catch (SQLException e) {
      throw unavailable.apply("acquiring " + what(), e);
    }
    if (t.granted) {
      maybeHeld = false;
      marked = false;
      stopListening();
      return Poll.granted(t.fence, null);
    }
    marked = t.marked;
    long untilFree = TimeUnit.MILLISECONDS.toNanos(t.remainingMillis);
    // A waiting writer refreshes its mark well before it could run out.
    long cap = marked ? TimeUnit.MILLISECONDS.toNanos(table.markMillis / 3) : Long.MAX_VALUE;
    if (listener != null) {
      long fallback = TimeUnit.MILLISECONDS.toNanos(JdbcBackend.FALLBACK_POLL_MILLIS);
      return Poll.busy(Duration.ofNanos(Math.max(0, Math.min(Math.min(untilFree, fallback), cap))));
    }
    if (t.fence != lastFence || t.inTheWay != lastInTheWay) {
      // A resource that changes hands between our polls is free only now and then, and only a
      // waiter that looks often sees it: start again from the shortest backoff.
      lastFence = t.fence;
      lastInTheWay = t.inTheWay;
      backoff = backoffMinNanos;
    }
    long jittered = backoff / 2 + ThreadLocalRandom.current().nextLong(backoff / 2 + 1);
    backoff = Math.min(backoffMaxNanos, backoff * 2);
    return Poll.busy(Duration.ofNanos(Math.max(0, Math.min(Math.min(jittered, untilFree), cap))));
  }

  private void stopListening() {
    if (listening) {
      listener.unregister(key, wake);
      listening = false;
    }
  }

  @Override
  public void abandon() {
    stopListening();
    if (marked) {
      // Take our mark away at once: readers it keeps out may go now.
      try {
        table.withdraw(name, claim, ownerId);
      } catch (SQLException | RuntimeException e) {
        LOG.warn(
            "withdrawing the waiting writer of {} on {} failed; its mark expires within {} ms: {}",
            what(),
            endpoint,
            table.markMillis,
            e.toString());
      }
      marked = false;
    }
    if (maybeHeld) {
      // The commit of a grant failed in flight: the database may have granted it. Undo it,
      // owner-checked.
      try {
        table.release(name, claim, ownerId);
      } catch (SQLException | RuntimeException e) {
        LOG.warn(
            "undoing an ambiguous acquire of {} on {} failed; the lease expires with its time: {}",
            what(),
            endpoint,
            e.toString());
      }
    }
  }
}
