package dev.locksmith.etcd;

import dev.locksmith.LeaseLostException;
import dev.locksmith.etcd.EtcdBackend.KeyEntry;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The watch for deleted keys of one {@link EtcdBackend}, its loss detection: a held key deleted
 * behind the holder's back (revoked, or its lease expired) is reported to the core. Open only while
 * a key has been held for {@link EtcdBackend#WATCH_DELAY}; after a gap in the watch, each held key
 * is read again. Part of the backend, in a file of its own (issue 30).
 */
final class EtcdDeleteWatch {
  // the backend's logger: these messages were logged under its name before they moved here
  private static final Logger LOG = LoggerFactory.getLogger(EtcdBackend.class);

  private final EtcdBackend backend;

  /**
   * The watch for deleted keys; open only while a key of ours has been held for {@link
   * EtcdBackend#WATCH_DELAY} or longer.
   */
  private volatile Watch.Watcher deleteWatcher;

  /** The revision {@link #deleteWatcher} started at. */
  private volatile long watchFrom;

  private volatile long watchedRevision;

  /** Keys granted since the last {@link #watchHeldKeys} run, about in grant order. */
  private final java.util.Queue<KeyEntry> granted =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  EtcdDeleteWatch(EtcdBackend backend) {
    this.backend = backend;
  }

  /**
   * Notes the revision the client's first lease was granted at: a watch that fails before it saw an
   * event starts again after it.
   */
  void watchedUpTo(long revision) {
    watchedRevision = revision;
  }

  /**
   * Notes a grant: the key is watched for deletion once it has been held for {@link
   * EtcdBackend#WATCH_DELAY}.
   */
  void granted(KeyEntry entry) {
    entry.heldSince = System.nanoTime();
    entry.held = true;
    granted.add(entry);
  }

  /**
   * Opens the watch for deleted keys once a key has been held for {@link EtcdBackend#WATCH_DELAY},
   * from the lowest create revision of the keys held then (+ 1), so that no deletion of a held key
   * since its creation is missed, and closes it once no key has been held that long (run on the
   * keep-alive thread every {@link EtcdBackend#WATCH_DELAY}). A key granted while the watch is
   * open, but created before it started (a waiter that waited long), starts it again from its
   * revision.
   */
  void watchHeldKeys() {
    try {
      if (backend.isClosed()) {
        return;
      }
      backend.queueWatches.closeIdleQueueWatches();
      long lowestGranted = Long.MAX_VALUE;
      for (KeyEntry e = granted.poll(); e != null; e = granted.poll()) {
        if (e.held) {
          lowestGranted = Math.min(lowestGranted, e.createRevision);
        }
      }
      long now = System.nanoTime();
      long delay = EtcdBackend.WATCH_DELAY.toNanos();
      boolean longHold = false;
      for (KeyEntry e : backend.keys.values()) {
        if (e.held && now - e.heldSince >= delay) {
          longHold = true;
          break;
        }
      }
      Watch.Watcher open = deleteWatcher;
      if (!longHold) {
        if (open != null) {
          deleteWatcher = null;
          closeQuietly(open);
        }
        return;
      }
      if (open != null && (lowestGranted == Long.MAX_VALUE || lowestGranted + 1 >= watchFrom)) {
        return; // open, and it covers every key held
      }
      long lowest = lowestGranted;
      for (KeyEntry e : backend.keys.values()) {
        if (e.held) {
          lowest = Math.min(lowest, e.createRevision);
        }
      }
      if (open != null) {
        deleteWatcher = null;
        closeQuietly(open);
      }
      startDeleteWatch(lowest == Long.MAX_VALUE ? 0 : lowest + 1);
    } catch (RuntimeException e) {
      LOG.warn(
          "{}: watching the keys of held locks failed; retrying", backend.settings.describe(), e);
    }
  }

  private void startDeleteWatch(long fromRevision) {
    if (backend.isClosed()) {
      return;
    }
    ByteSequence prefix = KeyNames.bytes(backend.settings.prefix + "/");
    WatchOption option =
        WatchOption.builder().isPrefix(true).withNoPut(true).withRevision(fromRevision).build();
    watchFrom = fromRevision;
    Watch.Watcher[] self = new Watch.Watcher[1];
    // the error handler acts only for the watch that is open: one closed on purpose must not start
    // again
    self[0] =
        backend
            .client
            .getWatchClient()
            .watch(
                prefix,
                option,
                Watch.listener(
                    this::onDeletes,
                    error -> {
                      if (deleteWatcher == self[0]) {
                        onWatchError(error);
                      }
                    }));
    deleteWatcher = self[0];
  }

  private void onDeletes(WatchResponse response) {
    backend.deleteEvents.addAndGet(response.getEvents().size());
    for (WatchEvent event : response.getEvents()) {
      watchedRevision = Math.max(watchedRevision, event.getKeyValue().getModRevision());
      backend.saw(event.getKeyValue().getModRevision());
      if (event.getEventType() != WatchEvent.EventType.DELETE) {
        continue;
      }
      KeyEntry entry = backend.keys.get(event.getKeyValue().getKey());
      if (entry != null && event.getKeyValue().getModRevision() > entry.createRevision) {
        entry.deleted = true;
        if (entry.held && backend.keys.remove(event.getKeyValue().getKey(), entry)) {
          backend.context.leaseLost(
              entry.ownerId,
              LeaseLostException.Reason.TAKEN,
              "its key "
                  + event.getKeyValue().getKey()
                  + " was deleted from etcd (revoked, or its lease expired)");
        }
      }
    }
  }

  private void onWatchError(Throwable error) {
    if (backend.isClosed()) {
      return;
    }
    String text = EtcdCalls.describe(error);
    boolean compacted = text.toLowerCase(java.util.Locale.ROOT).contains("compact");
    LOG.warn(
        "{}: the watch for deleted keys failed ({}); restarting it",
        backend.settings.describe(),
        text);
    later(
        () -> {
          Watch.Watcher failed = deleteWatcher;
          deleteWatcher = null;
          if (failed != null) {
            closeQuietly(failed);
          }
          if (compacted) {
            startDeleteWatch(0);
            checkHeldKeys();
          } else {
            startDeleteWatch(Math.max(watchFrom, watchedRevision + 1));
          }
        },
        200);
  }

  private void later(Runnable task, long delayMs) {
    backend.schedule(task, TimeUnit.MILLISECONDS.toNanos(delayMs));
  }

  /** After a gap in the watch: ask etcd for each held key, and report those that are gone. */
  private void checkHeldKeys() {
    for (Map.Entry<ByteSequence, KeyEntry> e : backend.keys.entrySet()) {
      if (!e.getValue().held) {
        continue;
      }
      try {
        var r =
            backend
                .client
                .getKVClient()
                .get(e.getKey(), GetOption.builder().withCountOnly(true).build())
                .get(backend.settings.requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
        if (r.getCount() == 0 && backend.keys.remove(e.getKey(), e.getValue())) {
          backend.context.leaseLost(
              e.getValue().ownerId,
              LeaseLostException.Reason.TAKEN,
              "its key " + e.getKey() + " is gone from etcd");
        }
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
        return;
      } catch (Exception ex) {
        LOG.debug("checking key {} failed: {}", e.getKey(), ex.toString());
      }
    }
  }

  /**
   * @return whether the watch is open
   */
  boolean isOpen() {
    return deleteWatcher != null;
  }

  /** Closes the watch, on close and abandon. */
  void close() {
    Watch.Watcher w = deleteWatcher;
    deleteWatcher = null;
    if (w != null) {
      closeQuietly(w);
    }
  }

  /** Closes a watch, this one or a queue watch ({@link EtcdQueueWatches}); never throws. */
  static void closeQuietly(Watch.Watcher w) {
    try {
      w.close();
    } catch (RuntimeException e) {
      LOG.debug("closing the delete watch failed: {}", e.toString());
    }
  }
}
