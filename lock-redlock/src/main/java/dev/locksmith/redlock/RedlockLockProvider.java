package dev.locksmith.redlock;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.redis.internal.RedisKeys;
import dev.locksmith.redis.internal.RedisNode;
import dev.locksmith.redis.internal.RedisScripts;
import dev.locksmith.redis.internal.RedisSettings;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import dev.locksmith.spi.LockUri;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code redlock://} backend: Redlock over N independent Redis servers (masters without
 * replication between them), so that a lock survives the loss of a minority of them.
 *
 * <pre>{@code
 * try (LockClient client = Locks.connect("redlock://r1:6379,r2:6379,r3:6379,r4:6379,r5:6379?lease=10s")) {
 *   try (Lease lease = client.lock("order-42").acquire(Duration.ofSeconds(5))) {
 *     store.write(order, lease.fencingToken());   // tokens drawn from a majority: they never go back
 *   }
 * }
 * }</pre>
 *
 * <p>A lock is held when a majority of the servers hold its key for us, for the lease less the time
 * the acquisition took and a clock-drift allowance. Options: those of {@code redis://} ({@code
 * namespace}, {@code database}, {@code user}, {@code password}, {@code tls}, {@code
 * connect-timeout}, {@code command-timeout}, {@code pool-size}), applied to every server, plus
 * {@code drift-factor} (default 0.01: the allowance is lease * drift-factor + 2ms) and {@code
 * server-timeout} (how long one server may take to answer an acquire; default a tenth of the lease,
 * from 10ms up to the command timeout). Found by {@link java.util.ServiceLoader}; users do not call
 * it directly.
 */
public final class RedlockLockProvider implements LockProvider {
  private static final Logger LOG = LoggerFactory.getLogger(RedlockLockProvider.class);
  private static final AtomicInteger CLIENTS = new AtomicInteger();
  static final String FORM =
      "redlock://[user:password@]h1:p1,h2:p2,h3:p3[,...][/database], such as "
          + "redlock://r1:6379,r2:6379,r3:6379";

  /** Made by {@link java.util.ServiceLoader}. */
  public RedlockLockProvider() {}

  /**
   * @return {@code redlock}
   */
  @Override
  public Set<String> schemes() {
    return Set.of("redlock");
  }

  /**
   * @return the options listed in the class comment
   */
  @Override
  public Set<String> optionNames() {
    Set<String> all = new HashSet<>(RedisSettings.OPTIONS);
    all.addAll(RedlockSettings.OPTIONS);
    return Set.copyOf(all);
  }

  /**
   * Checks every setting once, then checks every server at once (PING, SCRIPT LOAD), each within
   * the connect timeout. A minority of servers may be down: they are used when they come back.
   *
   * @throws dev.locksmith.LockConfigurationException listing every bad setting, before connecting
   * @throws BackendUnavailableException naming the servers that cannot be used (passwords redacted)
   *     if fewer than a majority can
   */
  @Override
  public LockBackend open(BackendConfig config, BackendContext context) {
    List<RedisSettings> servers = RedisSettings.readEach(config, 3, FORM);
    RedlockSettings redlock = RedlockSettings.read(config, servers.get(0).commandTimeout());
    config.check();
    String shown = LockUri.redact(config.uri().withoutQuery());
    int tag = CLIENTS.incrementAndGet();
    AtomicInteger threads = new AtomicInteger();
    ExecutorService executor =
        Executors.newCachedThreadPool(
            r -> {
              Thread t =
                  new Thread(r, "locksmith-redlock-" + tag + "-" + threads.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    List<RedisNode> nodes = new ArrayList<>();
    try {
      for (RedisSettings s : servers) {
        nodes.add(RedisNode.create(s));
      }
      RedisKeys keys = new RedisKeys(servers.get(0).namespace());
      List<Integer> indexes = new ArrayList<>();
      for (int i = 0; i < servers.size(); i++) {
        indexes.add(i);
      }
      Fanout<Boolean> probes =
          Fanout.start(
              indexes,
              i -> {
                RedisNode.probe(servers.get(i));
                // one pooled connection made now, not by the first acquire, whose per-server
                // timeout is short;
                // a renewal of a key no lock can have (names are never empty) reads and writes
                // nothing
                nodes
                    .get(i)
                    .eval(
                        RedisScripts.RENEW,
                        List.of(keys.owner(""), keys.token("")),
                        List.of("warm-up", "1"));
                return true;
              },
              executor);
      int quorum = RedlockBackend.quorum(servers.size());
      // each probe is bounded by the connect timeout (connect, then PING and SCRIPT LOAD)
      long deadline =
          System.nanoTime() + servers.get(0).connectTimeout().toNanos() * 2 + 50_000_000L;
      probes.awaitUninterruptibly(deadline, f -> false);
      if (Thread.currentThread().isInterrupted()) {
        throw new BackendUnavailableException("interrupted while connecting to " + shown);
      }
      List<String> unusable = new ArrayList<>();
      for (int i = 0; i < servers.size(); i++) {
        Object a = probes.answer(i);
        if (a instanceof Throwable) {
          unusable.add(((Throwable) a).getMessage());
        } else if (a == null) {
          unusable.add(
              "Redis server "
                  + servers.get(i).endpoint()
                  + " did not answer within "
                  + Durations.format(servers.get(i).connectTimeout().multipliedBy(2)));
        }
      }
      if (servers.size() - unusable.size() < quorum) {
        throw new BackendUnavailableException(
            "only "
                + (servers.size() - unusable.size())
                + " of the "
                + servers.size()
                + " Redis servers of "
                + shown
                + " can be used, and locks need a majority of "
                + quorum
                + ": "
                + String.join("; ", unusable));
      }
      for (String problem : unusable) {
        LOG.warn(
            "{}: starting without this server, a minority; it is used again when it answers: {}",
            shown,
            problem);
      }
      return new RedlockBackend(nodes, keys, context, redlock, executor, shown);
    } catch (RuntimeException e) {
      for (RedisNode node : nodes) {
        node.close();
      }
      executor.shutdownNow();
      throw e;
    }
  }
}
