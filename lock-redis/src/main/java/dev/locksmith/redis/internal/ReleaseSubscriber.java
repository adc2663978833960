package dev.locksmith.redis.internal;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.Connection;
import redis.clients.jedis.JedisPubSub;
import redis.clients.jedis.JedisShardedPubSub;

/**
 * Internal: for lock-redlock, not for applications; may change.
 *
 * <p>One subscriber connection per client and server, shared by every lock its waiters wait for. A
 * channel is subscribed while at least one waiter of this client waits on it, and unsubscribed when
 * the last one leaves. A message on a channel runs the wake-ups registered for it.
 *
 * <p>A subscription is confirmed asynchronously; its confirmation also runs the wake-ups, so a
 * waiter that found the lock busy just before subscribing polls again and cannot miss a release
 * that happened in between. When the connection drops it is reopened with backoff, every channel
 * subscribed again, and every waiter woken, since messages may have been lost meanwhile. A lost
 * message only delays a waiter: the core polls again after the holder's lease or its recheck
 * interval, whichever comes first.
 */
public final class ReleaseSubscriber implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ReleaseSubscriber.class);
  private static final AtomicInteger THREADS = new AtomicInteger();
  private static final long MIN_BACKOFF_MS = 20;
  private static final long MAX_BACKOFF_MS = 2000;

  /**
   * Internal: for lock-redlock, not for applications; may change. A wake-up that also learns which
   * owner id a release freed: {@link #released} runs for a release message, {@link #run()} for a
   * subscription's confirmation or a reconnect (when a message may have been missed).
   */
  public interface ReleaseWake extends Runnable {
    /**
     * @param ownerId the owner id the release message carries (empty from an older publisher)
     */
    void released(String ownerId);
  }

  private final RedisNode node;
  private final String controlChannel;
  private final boolean sharded;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition stopped = lock.newCondition();
  private final Map<String, Set<Runnable>> wakeUps = new HashMap<>();

  /** Channels the current connection was asked to subscribe to (sent, maybe not confirmed). */
  private final Set<String> sent = new HashSet<>();

  private Thread thread;
  private Connection connection;
  private Listener listener;
  private boolean closed;
  private final AtomicInteger connections = new AtomicInteger();

  /**
   * Makes a subscriber; it connects when the first waiter joins.
   *
   * @param node the server to subscribe on
   * @param controlChannel a channel only this client subscribes to ({@link
   *     RedisKeys#clientChannel}), which keeps the connection subscribed while no waiter waits
   */
  public ReleaseSubscriber(RedisNode node, String controlChannel) {
    this(node, controlChannel, false);
  }

  /**
   * Makes a subscriber; it connects when the first waiter joins.
   *
   * @param node the servers to subscribe on
   * @param controlChannel a channel only this client subscribes to; with {@code sharded}, it must
   *     be in the Cluster slot of the channels this subscriber will be given ({@link
   *     RedisKeys#clientChannel(String, String)}): its slot picks the node to connect to
   * @param sharded whether to use Redis 7's sharded pub/sub (SSUBSCRIBE), as on a Cluster: the
   *     connection goes to the primary that owns the control channel's slot, found again at every
   *     reconnect, so it follows a failover
   */
  public ReleaseSubscriber(RedisNode node, String controlChannel, boolean sharded) {
    this.node = node;
    this.controlChannel = controlChannel;
    this.sharded = sharded;
  }

  /**
   * Registers a wake-up only if this client already subscribes to the channel (then no message to
   * the server is needed and none can be missed from now on).
   *
   * @param channel the lock's release channel
   * @param wake what to run on a release
   * @return whether it was registered
   */
  public boolean joinIfSubscribed(String channel, Runnable wake) {
    lock.lock();
    try {
      Set<Runnable> set = wakeUps.get(channel);
      if (set == null || closed) {
        return false;
      }
      set.add(wake);
      return true;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Registers a wake-up, subscribing to the channel if needed. The wake-up runs once the
   * subscription is confirmed, and for every message on the channel until {@link #leave}.
   *
   * @param channel the lock's release channel
   * @param wake what to run on a release
   */
  public void join(String channel, Runnable wake) {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      Set<Runnable> set = wakeUps.computeIfAbsent(channel, c -> new HashSet<>());
      boolean first = set.isEmpty();
      set.add(wake);
      if (thread == null) {
        start();
      } else if (first && listener != null && listener.live && sent.add(channel)) {
        send(() -> listener.subscribe(channel));
      } else if (!first && listener != null && listener.live && sent.contains(channel)) {
        // already subscribed: nothing to wait for, but the caller polled before joining
        wakeLater(wake);
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Removes a wake-up; unsubscribes when it was the channel's last.
   *
   * @param channel the lock's release channel
   * @param wake the wake-up given to {@link #join}
   */
  public void leave(String channel, Runnable wake) {
    lock.lock();
    try {
      Set<Runnable> set = wakeUps.get(channel);
      if (set == null || !set.remove(wake) || !set.isEmpty()) {
        return;
      }
      wakeUps.remove(channel);
      if (listener != null && listener.live && sent.remove(channel)) {
        send(() -> listener.unsubscribe(channel));
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * @return how many subscriber connections have been opened, for tests
   */
  int connectionsOpened() {
    return connections.get();
  }

  private void wakeLater(Runnable wake) {
    // the caller holds our lock; a wake-up only signals a waiter, so running it here is safe
    wake.run();
  }

  private void send(Runnable command) {
    try {
      command.run();
    } catch (RuntimeException e) {
      // the connection broke; the reader thread sees it too and reconnects, resubscribing all
      LOG.debug("{}: subscriber command failed: {}", node.endpoint(), e.toString());
    }
  }

  private void start() {
    thread = new Thread(this::run, "locksmith-redis-subscriber-" + THREADS.incrementAndGet());
    thread.setDaemon(true);
    thread.start();
  }

  private void run() {
    long backoff = MIN_BACKOFF_MS;
    boolean warned = false;
    while (true) {
      Connection jedis;
      Listener current;
      String[] channels;
      lock.lock();
      try {
        if (closed) {
          return;
        }
        try {
          jedis = node.dedicatedConnection(sharded ? controlChannel : null);
        } catch (RuntimeException e) {
          jedis = null;
          LOG.debug("{}: cannot open the subscriber connection: {}", node.endpoint(), e.toString());
        }
      } finally {
        lock.unlock();
      }
      if (jedis == null) {
        if (!backOff(backoff)) {
          return;
        }
        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
        continue;
      }
      lock.lock();
      try {
        if (closed) {
          jedis.close();
          return;
        }
        current = new Listener();
        connection = jedis;
        listener = current;
        sent.clear();
        sent.add(controlChannel);
        if (!sharded) {
          sent.addAll(wakeUps.keySet());
        }
        // SSUBSCRIBE takes channels of one slot only: the others follow one by one once the
        // control channel is confirmed (see Listener#subscribed)
        channels = sent.toArray(new String[0]);
      } finally {
        lock.unlock();
      }
      try {
        connections.incrementAndGet();
        jedis.setTimeoutInfinite(); // a subscriber waits for messages as long as it takes
        current.proceed(jedis, channels); // returns when the connection ends
      } catch (RuntimeException e) {
        if (isClosed()) {
          return;
        }
        if (current.confirmedOnce) {
          backoff = MIN_BACKOFF_MS;
          warned = false;
        }
        if (!warned) {
          LOG.warn(
              "{}: release notifications interrupted ({}); reconnecting, waiters fall back to"
                  + " rechecking meanwhile",
              node.endpoint(),
              e.toString());
          warned = true;
        } else {
          LOG.debug("{}: subscriber reconnect failed: {}", node.endpoint(), e.toString());
        }
      } finally {
        lock.lock();
        try {
          current.live = false;
          if (connection == jedis) {
            connection = null;
            listener = null;
          }
        } finally {
          lock.unlock();
        }
        try {
          jedis.close();
        } catch (RuntimeException e) {
          LOG.debug("closing the subscriber connection failed: {}", e.toString());
        }
      }
      if (!backOff(backoff)) {
        return;
      }
      backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
    }
  }

  /**
   * @return false if closed meanwhile
   */
  private boolean backOff(long millis) {
    lock.lock();
    try {
      if (closed) {
        return false;
      }
      stopped.await(millis, TimeUnit.MILLISECONDS);
      return !closed;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } finally {
      lock.unlock();
    }
  }

  private boolean isClosed() {
    lock.lock();
    try {
      return closed;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Runs with the subscriber thread; callbacks come from it. Plain pub/sub (SUBSCRIBE) on one
   * server or a Sentinel set's primary, sharded pub/sub (SSUBSCRIBE) on a Cluster node.
   */
  private final class Listener {
    volatile boolean live;
    volatile boolean confirmedOnce;
    private final JedisPubSub plain;
    private final JedisShardedPubSub shard;

    Listener() {
      if (sharded) {
        plain = null;
        shard =
            new JedisShardedPubSub() {
              @Override
              public void onSSubscribe(String channel, int subscribedChannels) {
                subscribed(channel);
              }

              @Override
              public void onSMessage(String channel, String message) {
                message(channel, message);
              }
            };
      } else {
        shard = null;
        plain =
            new JedisPubSub() {
              @Override
              public void onSubscribe(String channel, int subscribedChannels) {
                subscribed(channel);
              }

              @Override
              public void onMessage(String channel, String message) {
                message(channel, message);
              }
            };
      }
    }

    void proceed(Connection connection, String[] channels) {
      if (shard != null) {
        shard.proceed(connection, channels);
      } else {
        plain.proceed(connection, channels);
      }
    }

    void subscribe(String channel) {
      if (shard != null) {
        shard.ssubscribe(channel);
      } else {
        plain.subscribe(channel);
      }
    }

    void unsubscribe(String channel) {
      if (shard != null) {
        shard.sunsubscribe(channel);
      } else {
        plain.unsubscribe(channel);
      }
    }

    private void subscribed(String channel) {
      lock.lock();
      try {
        if (!live) {
          live = true;
          confirmedOnce = true;
          // channels joined while we were connecting were not in the initial SUBSCRIBE
          for (String c : wakeUps.keySet()) {
            if (sent.add(c)) {
              send(() -> subscribe(c));
            }
          }
        }
        if (!sent.contains(channel)) {
          return; // left again before the confirmation came
        }
        if (!wakeUps.containsKey(channel) && !channel.equals(controlChannel)) {
          // its last waiter left while we were reconnecting, after the channel list was taken
          sent.remove(channel);
          send(() -> unsubscribe(channel));
          return;
        }
        wakeAll(channel);
      } finally {
        lock.unlock();
      }
    }

    private void message(String channel, String message) {
      lock.lock();
      try {
        wakeAll(channel, message);
      } finally {
        lock.unlock();
      }
    }

    private void wakeAll(String channel) {
      wakeAll(channel, null);
    }

    private void wakeAll(String channel, String message) {
      Set<Runnable> set = wakeUps.get(channel);
      if (set != null) {
        for (Runnable wake : set) {
          try {
            if (message != null && wake instanceof ReleaseWake) {
              ((ReleaseWake) wake).released(message);
            } else {
              wake.run();
            }
          } catch (RuntimeException e) {
            LOG.warn("a wake-up for {} failed", channel, e);
          }
        }
      }
    }
  }

  /** Closes the connection and stops the thread. */
  @Override
  public void close() {
    Thread t;
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      wakeUps.clear();
      stopped.signalAll();
      if (connection != null) {
        try {
          connection.close(); // the reader thread fails out of subscribe() and sees `closed`
        } catch (RuntimeException e) {
          LOG.debug("closing the subscriber connection failed: {}", e.toString());
        }
      }
      t = thread;
    } finally {
      lock.unlock();
    }
    for (int i = 0; t != null && t.isAlive() && i < 4; i++) {
      try {
        t.join(500);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      lock.lock();
      try {
        if (connection != null) {
          connection.close(); // it may have connected after the first close
        }
      } catch (RuntimeException e) {
        LOG.debug("closing the subscriber connection failed: {}", e.toString());
      } finally {
        lock.unlock();
      }
    }
  }
}
