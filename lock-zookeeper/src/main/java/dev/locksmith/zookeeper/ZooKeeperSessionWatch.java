package dev.locksmith.zookeeper;

import dev.locksmith.LeaseLostException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The session's side of the leases a {@link ZooKeeperBackend} holds: listens to Curator's
 * connection state (SUSPENDED puts every lease in doubt until the earliest moment the server may
 * have expired the session; RECONNECTED lifts the doubt for each lease whose node is still there
 * and still ours; LOST is every lease lost), and sets the watch on the node of each lease held for
 * {@link ZooKeeperBackend#WATCH_DELAY} or longer, so a node deleted behind the holder's back is a
 * lost lease.
 */
final class ZooKeeperSessionWatch implements ConnectionStateListener {
  private static final Logger LOG = LoggerFactory.getLogger(ZooKeeperSessionWatch.class);

  private final ZooKeeperBackend backend;

  /** Orders "lease in doubt" against "lease confirmed" so a stale confirmation never wins. */
  private final ReentrantLock stateLock = new ReentrantLock();

  private final AtomicLong connectionEpoch = new AtomicLong();

  ZooKeeperSessionWatch(ZooKeeperBackend backend) {
    this.backend = backend;
  }

  @Override
  public void stateChanged(CuratorFramework client, ConnectionState state) {
    if (backend.closed) {
      return;
    }
    long epoch = connectionEpoch.incrementAndGet();
    switch (state) {
      case SUSPENDED:
      case READ_ONLY:
        backend.connected = false;
        long until = System.nanoTime() + inDoubtNanos();
        LOG.warn(
            "connection to ZooKeeper at {} suspended: {} held lease(s) in doubt for {} ms",
            backend.settings.hosts,
            backend.held.size(),
            TimeUnit.NANOSECONDS.toMillis(until - System.nanoTime()));
        putInDoubt(until, epoch);
        // a lease granted just before the suspension may reach the core's books just after it
        schedule(() -> putInDoubt(until, epoch), 200);
        break;
      case CONNECTED:
      case RECONNECTED:
        backend.connected = true;
        schedule(() -> confirmHeld(epoch), 0);
        break;
      case LOST:
        backend.connected = false;
        // every lease of this client lives in this session; the core also catches a grant that
        // raced this signal
        backend.context.allLeasesLost("the ZooKeeper session ended (Curator reported LOST)");
        for (ZooKeeperBackend.Held h : backend.held.values()) {
          if (backend.held.remove(h.ownerId, h)) {
            backend.deleteInBackground(
                h.path); // gone already if the server expired the session; else free it now
          }
        }
        break;
      default:
        break;
    }
  }

  /**
   * The server expires a session a session timeout after it last heard from the client. The client
   * notices silence after two thirds of the session timeout (ZooKeeper's read timeout), so when
   * SUSPENDED arrives the server may expire us in as little as a third of it.
   */
  private long inDoubtNanos() {
    long sessionMs = backend.settings.sessionTimeout.toMillis();
    try {
      int negotiated = backend.curator.getZookeeperClient().getZooKeeper().getSessionTimeout();
      if (negotiated > 0) {
        sessionMs = negotiated;
      }
    } catch (Exception e) {
      LOG.debug("no negotiated session timeout: {}", e.toString());
    }
    return TimeUnit.MILLISECONDS.toNanos(sessionMs / 3);
  }

  private void putInDoubt(long until, long epoch) {
    stateLock.lock();
    try {
      if (connectionEpoch.get() != epoch) {
        return;
      }
      for (ZooKeeperBackend.Held h : backend.held.values()) {
        backend.context.leaseValidUntil(h.ownerId, until);
      }
    } finally {
      stateLock.unlock();
    }
  }

  /**
   * After a reconnect: each node must still be there and belong to this session before its lease
   * counts again.
   */
  private void confirmHeld(long epoch) {
    long session;
    try {
      session = backend.curator.getZookeeperClient().getZooKeeper().getSessionId();
    } catch (Exception e) {
      LOG.debug("no session to confirm leases with: {}", e.toString());
      return;
    }
    for (ZooKeeperBackend.Held h : backend.held.values()) {
      Stat stat;
      try {
        stat = backend.curator.checkExists().usingWatcher(h.ownWatcher).forPath(h.path);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (Exception e) {
        LOG.debug(
            "re-checking {} after reconnecting failed; it stays in doubt: {}", h, e.toString());
        continue;
      }
      if (stat == null || stat.getCzxid() != h.czxid || stat.getEphemeralOwner() != session) {
        if (backend.held.remove(h.ownerId, h)) {
          backend.context.leaseLost(
              h.ownerId,
              stat == null ? h.deletedReason() : LeaseLostException.Reason.SESSION_LOST,
              stat == null
                  ? "its node " + h.path + " was gone after reconnecting"
                  : "its node " + h.path + " belonged to an earlier session after reconnecting");
          if (stat != null && stat.getCzxid() == h.czxid) {
            backend.deleteInBackground(h.path);
          }
        }
        continue;
      }
      stateLock.lock();
      try {
        if (connectionEpoch.get() == epoch && backend.held.get(h.ownerId) == h) {
          backend.context.leaseValidUntil(h.ownerId, Long.MAX_VALUE);
        }
      } finally {
        stateLock.unlock();
      }
    }
  }

  private void schedule(Runnable task, long delayMillis) {
    try {
      backend.tasks.schedule(
          () -> {
            try {
              task.run();
            } catch (RuntimeException e) {
              LOG.warn("ZooKeeper connection handling failed", e);
            }
          },
          delayMillis,
          TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      // closing
    }
  }

  /**
   * Sets the watch on the node of each lease held for {@link ZooKeeperBackend#WATCH_DELAY} or
   * longer (run by {@link ZooKeeperBackend#tasks} every {@link ZooKeeperBackend#WATCH_DELAY}).
   * Released leases are skipped: most locks are given back before this, and then neither a request
   * nor a watch event is spent on loss detection.
   */
  void watchHeldNodes() {
    try {
      long now = System.nanoTime();
      long delay = ZooKeeperBackend.WATCH_DELAY.toNanos();
      for (ZooKeeperBackend.Held h = backend.unwatched.peek();
          h != null && now - h.grantedAt >= delay;
          h = backend.unwatched.peek()) {
        backend.unwatched.poll();
        if (backend.held.get(h.ownerId) == h) {
          watchOwnNode(h);
        }
      }
    } catch (RuntimeException e) {
      LOG.warn("watching the nodes of held ZooKeeper locks failed; retrying", e);
    }
  }

  /** Sets the watch on a lease's node without waiting; a node already gone is a lost lease. */
  private void watchOwnNode(ZooKeeperBackend.Held h) {
    if (backend.closed) {
      return;
    }
    try {
      backend
          .curator
          .checkExists()
          .usingWatcher(h.ownWatcher)
          .inBackground(
              (c, e) -> {
                if (e.getResultCode() == KeeperException.Code.NONODE.intValue()
                    && backend.held.remove(h.ownerId, h)) {
                  backend.context.leaseLost(h.ownerId, h.deletedReason(), h.deletedDetail());
                } else if (e.getResultCode() != KeeperException.Code.OK.intValue()) {
                  // no watch: a reconnect re-checks (and watches) the node; until then a deletion
                  // is found by that check
                  LOG.debug(
                      "watching {} failed ({}); the node is re-checked after reconnecting",
                      h,
                      KeeperException.Code.get(e.getResultCode()));
                }
              })
          .forPath(h.path);
    } catch (Exception e) {
      LOG.debug(
          "watching {} failed; the node is re-checked after reconnecting: {}", h, e.toString());
    }
  }
}
