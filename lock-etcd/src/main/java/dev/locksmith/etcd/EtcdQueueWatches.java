package dev.locksmith.etcd;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The queue watches of one {@link EtcdBackend}: one watch for the deletes of one range, shared by
 * every attempt of the client that waits on that range ({@link EtcdAttempt}), kept open for {@link
 * EtcdBackend#QUEUE_WATCH_LINGER} after its last waiter left. Part of the backend, in a file of its
 * own (issue 30).
 */
final class EtcdQueueWatches {
  // the backend's logger: these messages were logged under its name before they moved here
  private static final Logger LOG = LoggerFactory.getLogger(EtcdBackend.class);

  /**
   * What an attempt waiting on a range hears from the range's queue watch; called on jetcd's
   * threads, must not block.
   */
  interface QueueListener {
    /** A key of the range was deleted. */
    void deleted(KeyValue kv);

    /** etcd registered the watch, or the watch failed: read again. */
    void recheck();
  }

  /**
   * One watch for the deletes of one range, shared by every attempt of this client that waits on
   * that range; each attempt picks out the delete of the key it waits for (no herd of reads).
   */
  static final class QueueWatch {
    final ByteSequence range;
    final Set<QueueListener> listeners = ConcurrentHashMap.newKeySet();

    /**
     * etcd confirmed the watch: every delete after a read sent from now on reaches the listeners.
     */
    volatile boolean created;

    /** The watch failed: listeners move to a new one. */
    volatile boolean broken;

    /** {@link System#nanoTime()} since when no attempt listens; 0 while one does. */
    volatile long idleSince;

    volatile Watch.Watcher watcher;

    QueueWatch(ByteSequence range) {
      this.range = range;
    }
  }

  private final EtcdBackend backend;

  /** The queue watches open, by range. */
  private final Map<ByteSequence, QueueWatch> queueWatches = new ConcurrentHashMap<>();

  EtcdQueueWatches(EtcdBackend backend) {
    this.backend = backend;
  }

  /**
   * Makes {@code listener} hear the deletes of {@code range}, through this client's queue watch of
   * that range, opened now if none is open ({@code open}); a delete reaches it only if etcd
   * registered the watch ({@link QueueWatch#created}) before the read that found the key waited for
   * was served.
   *
   * @return the watch listened to, or null if none was open and {@code open} is false
   */
  QueueWatch listen(ByteSequence range, QueueListener listener, boolean open) {
    QueueWatch listened =
        queueWatches.compute(
            range,
            (r, current) -> {
              QueueWatch q = current;
              if (q == null || q.broken) {
                if (!open || backend.isClosed()) {
                  return current;
                }
                if (q != null) {
                  closeQueueWatchLater(q);
                }
                q = openQueueWatch(r);
              }
              q.listeners.add(listener);
              q.idleSince = 0;
              return q;
            });
    // none open (or a broken one left in place, not opened again): not listening
    return listened == null || listened.broken || !listened.listeners.contains(listener)
        ? null
        : listened;
  }

  /**
   * Stops {@code listener} hearing from {@code watch}; the watch closes after {@link
   * EtcdBackend#QUEUE_WATCH_LINGER} with nobody listening.
   */
  void unlisten(QueueWatch watch, QueueListener listener) {
    watch.listeners.remove(listener);
    if (watch.listeners.isEmpty()) {
      watch.idleSince = System.nanoTime();
    }
  }

  /** Opens the watch: a call that does not block (jetcd sends the request from its own threads). */
  private QueueWatch openQueueWatch(ByteSequence range) {
    QueueWatch q = new QueueWatch(range);
    WatchOption option =
        WatchOption.builder().isPrefix(true).withNoPut(true).withCreateNotify(true).build();
    q.watcher =
        backend
            .client
            .getWatchClient()
            .watch(
                range,
                option,
                Watch.listener(
                    response -> {
                      if (response.isCreatedNotify()) {
                        q.created = true;
                        q.listeners.forEach(QueueListener::recheck);
                        return;
                      }
                      for (WatchEvent event : response.getEvents()) {
                        if (event.getEventType() == WatchEvent.EventType.DELETE) {
                          backend.saw(event.getKeyValue().getModRevision());
                          for (QueueListener l : q.listeners) {
                            l.deleted(event.getKeyValue());
                          }
                        }
                      }
                    },
                    error -> {
                      if (!q.broken) {
                        q.broken = true;
                        LOG.debug(
                            "{}: the watch of {} for waiters failed: {}",
                            backend.settings.describe(),
                            range,
                            EtcdCalls.describe(error));
                        q.listeners.forEach(QueueListener::recheck);
                        closeQueueWatchLater(q);
                      }
                    }));
    backend.queueWatchesOpened.incrementAndGet();
    if (q.broken) {
      closeQueueWatchLater(q); // failed before the watcher was known
    }
    return q;
  }

  /**
   * Drops a broken queue watch from the map and closes it, on the keep-alive thread (not inside a
   * map update or a jetcd callback).
   */
  private void closeQueueWatchLater(QueueWatch q) {
    q.broken = true;
    backend.schedule(
        () -> {
          queueWatches.remove(q.range, q);
          Watch.Watcher w = q.watcher;
          if (w != null) {
            EtcdDeleteWatch.closeQuietly(w);
          }
        },
        0);
  }

  /**
   * Closes the queue watches nobody has listened to for {@link EtcdBackend#QUEUE_WATCH_LINGER}; run
   * on the keep-alive thread with every turn of {@link EtcdDeleteWatch#watchHeldKeys}.
   */
  void closeIdleQueueWatches() {
    long now = System.nanoTime();
    for (QueueWatch q : queueWatches.values()) {
      if (q.listeners.isEmpty() && q.idleSince == 0) {
        q.idleSince = now; // a listen and an unlisten crossed: idle from now
      }
      long since = q.idleSince;
      if (since == 0 || now - since < EtcdBackend.QUEUE_WATCH_LINGER.toNanos()) {
        continue;
      }
      boolean[] dropped = new boolean[1];
      queueWatches.computeIfPresent(
          q.range,
          (r, current) -> {
            if (current == q && q.listeners.isEmpty()) {
              dropped[0] = true;
              return null;
            }
            return current;
          });
      if (dropped[0]) {
        EtcdDeleteWatch.closeQuietly(q.watcher);
      }
    }
  }

  /**
   * @return whether this client has a queue watch open on {@code range} (for tests)
   */
  boolean isOpen(ByteSequence range) {
    QueueWatch q = queueWatches.get(range);
    return q != null && !q.broken;
  }

  /**
   * @return whether this client has a queue watch open on {@code range} that etcd registered (for
   *     tests)
   */
  boolean isRegistered(ByteSequence range) {
    QueueWatch q = queueWatches.get(range);
    return q != null && !q.broken && q.created;
  }

  /** Closes every queue watch, on close and abandon: their listeners read again and fail. */
  void closeAll() {
    for (QueueWatch q : queueWatches.values()) {
      q.broken = true;
      q.listeners.forEach(QueueListener::recheck);
      EtcdDeleteWatch.closeQuietly(q.watcher);
    }
    queueWatches.clear();
  }
}
