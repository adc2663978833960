package dev.locksmith.zookeeper;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockException;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lease control on ZooKeeper. {@code extend} writes an expiry into the holder's node, and {@code
 * releaseAfter} replaces the holder's node, in one multi, by a persistent {@link NodeNames#HOLD}
 * node that says the same; both are for locks only. Both expiries are judged by the ZooKeeper
 * leader's clock ({@link ZooKeeperBackend#leaderNow()}): the waiter first in line deletes an
 * expired head with a versioned delete ({@link ZooKeeperBackend#deleteExpiredHead}), so an extend
 * that lands first wins. {@code renew}, which the core does not call for a session backend, checks
 * that each node is still ours.
 */
final class ZooKeeperLeaseControl {
  private static final Logger LOG = LoggerFactory.getLogger(ZooKeeperLeaseControl.class);

  private final ZooKeeperBackend backend;

  ZooKeeperLeaseControl(ZooKeeperBackend backend) {
    this.backend = backend;
  }

  /**
   * Never called by the core for a session backend; answers by checking that each node is still
   * ours, all checks in flight at once.
   */
  List<Renewal> renew(List<BackendLease> leases) {
    AtomicReferenceArray<Renewal> out = new AtomicReferenceArray<>(leases.size());
    CountDownLatch done = new CountDownLatch(leases.size());
    for (int i = 0; i < leases.size(); i++) {
      int index = i;
      ZooKeeperBackend.Held h = (ZooKeeperBackend.Held) leases.get(i).state();
      try {
        backend
            .curator
            .checkExists()
            .inBackground(
                (c, event) -> {
                  Stat stat = event.getStat();
                  int rc = event.getResultCode();
                  if (rc == KeeperException.Code.OK.intValue()
                      && stat != null
                      && stat.getCzxid() == h.czxid) {
                    out.set(index, Renewal.renewed());
                  } else if (rc == KeeperException.Code.OK.intValue()
                      || rc == KeeperException.Code.NONODE.intValue()) {
                    out.set(index, Renewal.lost("node " + h.path + " is gone"));
                  } else {
                    out.set(
                        index,
                        Renewal.failed(
                            KeeperException.create(KeeperException.Code.get(rc), h.path)));
                  }
                  done.countDown();
                })
            .forPath(h.path);
      } catch (Exception e) {
        out.set(index, Renewal.failed(e));
        done.countDown();
      }
    }
    try {
      done.await(backend.callTimeoutMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    List<Renewal> result = new ArrayList<>(leases.size());
    for (int i = 0; i < leases.size(); i++) {
      Renewal r = out.get(i);
      result.add(
          r != null
              ? r
              : Renewal.failed(
                  new BackendUnavailableException(
                      "no answer from ZooKeeper at " + backend.settings.hosts)));
    }
    return result;
  }

  /** Milliseconds, rounded up: a lease is never made shorter than asked. */
  static long ceilMillis(Duration d) {
    long ms = d.toMillis();
    return Math.max(1, d.minusMillis(ms).isZero() ? ms : ms + 1);
  }

  /**
   * Expiries on the server are kept for locks only: a waiter deletes an expired head, and only a
   * lock's first waiter reads its head's data. For a permit or side every waiter would have to read
   * and judge the expiry of each node in its way, so with {@code autoRenew(false)} the client ends
   * such a lease at its expiry itself, and the server when the session ends.
   */
  private void requireLock(BackendLease lease, String method) {
    if (!lease.claim().isExclusive()) {
      throw new UnsupportedOperationException(
          backend
              + " implements "
              + method
              + " for locks only, not for the "
              + lease.claim()
              + " lease on "
              + Claim.noun(lease.claim().kind())
              + " '"
              + lease.name()
              + "'");
    }
  }

  /**
   * Writes "expires {@code newLease} after this write" into our own node: a setData on its path,
   * which holds Curator's random protection id and our owner id, so it succeeds only while the node
   * is still ours. A waiter's delete of an expired node is versioned by what it read, so whichever
   * of the two the leader orders first wins: an extend that lands first makes the delete fail, a
   * delete that lands first makes this answer false.
   */
  boolean extend(BackendLease lease, Duration newLease) {
    requireLock(lease, "extend");
    ZooKeeperBackend.Held h = (ZooKeeperBackend.Held) lease.state();
    backend.checkOpen();
    h.expiring = true; // before the write: a waiter's delete racing it is the lease running out
    try {
      Stat stat =
          backend
              .curator
              .setData()
              .forPath(h.path, NodeData.expiring(h.ownerId, ceilMillis(newLease)));
      return stat.getCzxid() == h.czxid;
    } catch (KeeperException.NoNodeException e) {
      return false; // expired and deleted by a waiter, revoked, or gone with our session
    } catch (KeeperException.NoAuthException e) {
      throw new BackendUnavailableException(
          "ZooKeeper at " + backend.settings.hosts + " refused to write " + h.path + " (NoAuth)",
          e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BackendUnavailableException(
          "interrupted while extending lock '"
              + h.name
              + "' on ZooKeeper at "
              + backend.settings.hosts
              + "; the old expiry may stand",
          e);
    } catch (Exception e) {
      throw new BackendUnavailableException(
          "could not extend lock '"
              + h.name
              + "' on ZooKeeper at "
              + backend.settings.hosts
              + " within the `"
              + ZooKeeperSettings.CONNECTION_TIMEOUT
              + "` of "
              + Durations.format(backend.settings.connectionTimeout)
              + "; the old expiry may stand: "
              + e,
          e);
    }
  }

  /**
   * One multi: create the persistent {@link NodeNames#HOLD} node ("expires {@code keep} after this
   * write") and delete our own node. If our node is gone, the multi fails as a whole and nothing is
   * held for us. A hold node left from before (it can only be there if something other than this
   * backend took the lock past it) is replaced in the same multi, by a versioned delete, once it
   * has expired or if it would end before ours; otherwise it stands and only our node goes.
   */
  boolean releaseAfter(BackendLease lease, Duration keep) {
    requireLock(lease, "releaseAfter");
    ZooKeeperBackend.Held h = (ZooKeeperBackend.Held) lease.state();
    backend.held.remove(h.ownerId, h); // our own delete must not be reported as a loss
    backend.checkOpen();
    String hold = ZKPaths.makePath(ZKPaths.getPathAndNode(h.path).getPath(), NodeNames.HOLD);
    long keepMillis = ceilMillis(keep);
    byte[] data = NodeData.expiring(h.ownerId, keepMillis);
    List<CuratorOp> ops = List.of();
    try {
      int staleVersion = -1; // the version of an old hold node to replace; -1: none
      for (int round = 0; round < ZooKeeperBackend.ROUNDS; round++) {
        ops = new ArrayList<>(3);
        if (staleVersion >= 0) {
          ops.add(backend.curator.transactionOp().delete().withVersion(staleVersion).forPath(hold));
        }
        ops.add(
            backend
                .curator
                .transactionOp()
                .create()
                .withMode(CreateMode.PERSISTENT)
                .forPath(hold, data));
        // a write to our node before its delete: the waiter next in line, watching our node's data,
        // is told "changed"
        // and reads the children (finding the hold), where a delete alone would tell it the lock is
        // its own
        ops.add(backend.curator.transactionOp().setData().forPath(h.path, data));
        ops.add(backend.curator.transactionOp().delete().forPath(h.path));
        try {
          backend.curator.transaction().forOperations(ops);
          return true;
        } catch (KeeperException e) {
          int failed = failedOp(e);
          boolean onOwnNode = failed >= ops.size() - 2;
          boolean onCreate = failed == ops.size() - 3;
          if (onOwnNode && e.code() == KeeperException.Code.NONODE) {
            return false; // not ours any more: expired and deleted by a waiter, or revoked
          }
          if (!onCreate || e.code() != KeeperException.Code.NODEEXISTS) {
            if (failed == 0 && staleVersion >= 0) {
              staleVersion = -1; // the old hold changed or went meanwhile: look again
              continue;
            }
            throw e;
          }
        }
        // a hold node stands already
        Stat stat = new Stat();
        NodeData existing;
        try {
          existing = NodeData.parse(backend.curator.getData().storingStatIn(stat).forPath(hold));
        } catch (KeeperException.NoNodeException gone) {
          continue;
        }
        if (existing.owner.equals(h.ownerId)
            && backend.curator.checkExists().forPath(h.path) == null) {
          return true; // ours: a retry after a connection loss found our own multi done
        }
        long now = backend.leaderNow();
        if (!existing.expires() || existing.expiresAt(stat) >= now + keepMillis) {
          // it outlasts ours: keep it, and give up our node as long as it stands unchanged
          try {
            backend
                .curator
                .transaction()
                .forOperations(
                    backend
                        .curator
                        .transactionOp()
                        .check()
                        .withVersion(stat.getVersion())
                        .forPath(hold),
                    backend.curator.transactionOp().delete().forPath(h.path));
            return true;
          } catch (KeeperException e) {
            if (failedOp(e) == 1 && e.code() == KeeperException.Code.NONODE) {
              return false;
            }
            continue;
          }
        }
        staleVersion = stat.getVersion();
      }
      throw new BackendUnavailableException(
          "could not set the hold on lock '"
              + h.name
              + "' on ZooKeeper at "
              + backend.settings.hosts
              + ": its hold node changed on every one of "
              + ZooKeeperBackend.ROUNDS
              + " tries");
    } catch (InterruptedException e) {
      // the node must not outlive the interrupt: finish in the background (a multi that was done
      // already fails there as a whole, changing nothing), keep the flag
      holdInBackground(h, ops);
      Thread.currentThread().interrupt();
      return true;
    } catch (KeeperException.NoAuthException e) {
      throw new BackendUnavailableException(
          "ZooKeeper at "
              + backend.settings.hosts
              + " refused to create "
              + hold
              + " or delete "
              + h.path
              + " (NoAuth)",
          e);
    } catch (LockException e) {
      throw e;
    } catch (Exception e) {
      throw new BackendUnavailableException(
          "could not release lock '"
              + h.name
              + "' with a hold of "
              + Durations.format(keep)
              + " on ZooKeeper at "
              + backend.settings.hosts
              + "; its node stays until its expiry or session ends: "
              + e,
          e);
    }
  }

  private void holdInBackground(ZooKeeperBackend.Held h, List<CuratorOp> ops) {
    if (backend.closed || ops.isEmpty()) {
      return;
    }
    try {
      backend
          .curator
          .transaction()
          .inBackground(
              (c, e) -> {
                if (e.getResultCode() != KeeperException.Code.OK.intValue()) {
                  LOG.debug(
                      "the hold on {} set in the background failed ({}); the node goes at its"
                          + " expiry or with the session",
                      h,
                      KeeperException.Code.get(e.getResultCode()));
                }
              })
          .forOperations(ops);
    } catch (Exception e) {
      LOG.debug("setting the hold on {} in the background failed: {}", h, e.toString());
    }
  }

  /**
   * @return the index of the operation a failed multi failed on, or -1 if it does not say
   */
  static int failedOp(KeeperException e) {
    List<OpResult> results = e.getResults();
    if (results != null) {
      for (int i = 0; i < results.size(); i++) {
        if (results.get(i) instanceof OpResult.ErrorResult) {
          int err = ((OpResult.ErrorResult) results.get(i)).getErr();
          if (err != KeeperException.Code.OK.intValue()
              && err != KeeperException.Code.RUNTIMEINCONSISTENCY.intValue()) {
            return i;
          }
        }
      }
    }
    return -1;
  }
}
