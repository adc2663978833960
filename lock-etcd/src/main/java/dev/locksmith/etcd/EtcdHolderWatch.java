package dev.locksmith.etcd;

import dev.locksmith.spi.HolderWatch;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.WatchOption;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An election observer's watch on one lock ({@link EtcdBackend#watchHolder}): one etcd watch of
 * every put and delete under the lock's prefix (a grant, a release, a waiter, a key whose lease
 * ended), each calling the observer. A watch that fails calls it too, and is opened again after
 * {@link #REOPEN_AFTER_NANOS} until closed. Part of the backend, in a file of its own.
 */
final class EtcdHolderWatch implements HolderWatch {
  // the backend's logger, as for the other watches
  private static final Logger LOG = LoggerFactory.getLogger(EtcdBackend.class);

  static final long REOPEN_AFTER_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final EtcdBackend backend;
  private final ByteSequence prefix;
  private final Runnable changed;
  private volatile Watch.Watcher watcher;
  private volatile boolean closed;

  /** Which opening is current: a failure of an older one, closed by {@link #reopen}, is not. */
  private final java.util.concurrent.atomic.AtomicInteger opening =
      new java.util.concurrent.atomic.AtomicInteger();

  EtcdHolderWatch(EtcdBackend backend, ByteSequence prefix, Runnable changed) {
    this.backend = backend;
    this.prefix = prefix;
    this.changed = changed;
  }

  /** Opens the etcd watch: a call that does not block; etcd's confirmation calls the observer. */
  EtcdHolderWatch open() {
    if (closed || backend.isClosed()) {
      return this;
    }
    int mine = opening.incrementAndGet();
    WatchOption option = WatchOption.builder().isPrefix(true).withCreateNotify(true).build();
    Watch.Watcher w =
        backend
            .client
            .getWatchClient()
            .watch(
                prefix,
                option,
                Watch.listener(
                    response -> {
                      for (var event : response.getEvents()) {
                        backend.saw(event.getKeyValue().getModRevision());
                      }
                      changed.run(); // created, or keys changed
                    },
                    error -> {
                      if (mine != opening.get()) {
                        return; // an older opening, closed
                      }
                      LOG.debug(
                          "{}: the holder watch of {} failed: {}",
                          backend.settings.describe(),
                          prefix,
                          EtcdCalls.describe(error));
                      changed.run();
                      if (!closed) {
                        backend.schedule(this::reopen, REOPEN_AFTER_NANOS);
                      }
                    }));
    watcher = w;
    if (closed) {
      EtcdDeleteWatch.closeQuietly(w); // closed meanwhile
    }
    return this;
  }

  private void reopen() {
    Watch.Watcher old = watcher;
    if (old != null) {
      EtcdDeleteWatch.closeQuietly(old);
    }
    open();
  }

  @Override
  public boolean seesGrants() {
    return true;
  }

  @Override
  public void close() {
    closed = true;
    Watch.Watcher w = watcher;
    if (w != null) {
      EtcdDeleteWatch.closeQuietly(w);
    }
  }
}
