package dev.locksmith.etcd;

import dev.locksmith.etcd.EtcdBackend.Session;
import io.etcd.jetcd.ByteSequence;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The deletes of keys of one {@link EtcdBackend} that must not be lost: a key of ours left behind
 * would stay on a lease the client keeps alive and block its lock for good, so a delete that failed
 * is retried with every keep-alive. Part of the backend, in a file of its own (issue 30).
 */
final class EtcdDeleteRetries {
  // the backend's logger: these messages were logged under its name before they moved here
  private static final Logger LOG = LoggerFactory.getLogger(EtcdBackend.class);

  private final EtcdBackend backend;

  EtcdDeleteRetries(EtcdBackend backend) {
    this.backend = backend;
  }

  /**
   * Deletes a key of ours whatever its state, waiting at most the request timeout; never throws.
   *
   * @param deleted run once the key is known to be gone (now, or after a retry in the background)
   */
  void deleteQuietly(ByteSequence key, Session session, String why, Runnable deleted) {
    backend.keys.remove(key);
    try {
      backend.saw(
          backend
              .calls
              .awaitUninterruptibly(
                  () -> backend.client.getKVClient().delete(key),
                  backend.settings.requestTimeout,
                  why)
              .getHeader()
              .getRevision());
      deleted.run();
    } catch (RuntimeException e) {
      LOG.warn(
          "{}: deleting key {} ({}) failed; retrying in the background: {}",
          backend.settings.describe(),
          key,
          why,
          e.getMessage());
      retryLater(key, session, deleted);
    }
  }

  /** A delete that failed: retried with every keep-alive until it succeeds or the lease is gone. */
  private static final class PendingDelete {
    final Session session;
    final Runnable deleted;

    PendingDelete(Session session, Runnable deleted) {
      this.session = session;
      this.deleted = deleted;
    }
  }

  private final Map<ByteSequence, PendingDelete> pendingDeletes = new ConcurrentHashMap<>();

  /**
   * Deletes a key of ours in the background, with every keep-alive until it succeeds or its session
   * is gone.
   */
  void deleteLater(ByteSequence key, Session s, Runnable deleted) {
    retryLater(key, s, deleted);
  }

  /** Queues a failed delete for {@link #retryDeletes}; dropped once the backend is closed. */
  void retryLater(ByteSequence key, Session s, Runnable deleted) {
    if (!backend.isClosed()) {
      pendingDeletes.put(key, new PendingDelete(s, deleted));
    }
  }

  /**
   * Sends each queued delete again, on the keep-alive thread after each keep-alive; a delete of a
   * key whose session is dead is dropped.
   */
  void retryDeletes() {
    for (Map.Entry<ByteSequence, PendingDelete> e : pendingDeletes.entrySet()) {
      PendingDelete pd = e.getValue();
      if (pd.session != null && pd.session.dead) {
        pendingDeletes.remove(e.getKey(), pd); // etcd drops the key with its lease
        continue;
      }
      try {
        var f = backend.client.getKVClient().delete(e.getKey());
        f.get(backend.settings.requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
        if (pendingDeletes.remove(e.getKey(), pd)) {
          pd.deleted.run();
        }
        LOG.info("{}: deleted key {} on retry", backend.settings.describe(), e.getKey());
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
        return;
      } catch (Exception ex) {
        LOG.debug("retrying the delete of {} failed: {}", e.getKey(), ex.toString());
      }
    }
  }

  /**
   * @return whether a delete waits for a retry
   */
  boolean pending() {
    return !pendingDeletes.isEmpty();
  }
}
