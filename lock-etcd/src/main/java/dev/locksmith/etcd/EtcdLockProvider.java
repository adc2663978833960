package dev.locksmith.etcd;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockException;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import java.util.Set;

/**
 * The {@code etcd://} backend: fair, fenced locks on etcd v3 through jetcd.
 *
 * <pre>{@code
 * try (LockClient client = Locks.connect("etcd://user:secret@h1:2379,h2:2379,h3:2379/myapp/locks?ttl=10s")) {
 *   try (Lease lease = client.lock("orders").acquire(Duration.ofSeconds(30))) {
 *     store.write(order, lease.fencingToken());
 *   }
 * }
 * }</pre>
 *
 * <p>The path of the URI is the key prefix (default {@code /locksmith}). Options: {@code ttl} (the
 * client's etcd lease; whole seconds, default 10s), {@code connect-timeout} and {@code
 * request-timeout} (default 5s each), {@code tls} (true for https endpoints), {@code tls-ca},
 * {@code tls-cert} and {@code tls-key} (PEM files). Each client keeps one etcd lease alive; all its
 * locks hang on it, and they are reported lost together if it is lost.
 */
public final class EtcdLockProvider implements LockProvider {

  /** Made by {@link java.util.ServiceLoader}. */
  public EtcdLockProvider() {}

  @Override
  public Set<String> schemes() {
    return Set.of("etcd");
  }

  @Override
  public Set<String> optionNames() {
    return EtcdSettings.OPTIONS;
  }

  @Override
  public LockBackend open(BackendConfig config, BackendContext context) {
    long openedAt = System.nanoTime();
    EtcdSettings settings = EtcdSettings.read(config);
    config.check();
    CallerRunsExecutor calls = new CallerRunsExecutor(context.clientId());
    Client client;
    try {
      client = connect(settings, config, calls);
    } catch (RuntimeException | Error e) {
      calls.shutdownNow();
      throw e;
    }
    EtcdBackend backend = new EtcdBackend(settings, context, client, calls);
    try {
      backend.start(openedAt);
      return backend;
    } catch (InterruptedException e) {
      backend.abandonAfterFailedConnect();
      Thread.currentThread().interrupt();
      throw new LockException("interrupted while connecting to " + settings.describe(), e);
    } catch (RuntimeException | Error e) {
      backend.abandonAfterFailedConnect();
      throw e;
    }
  }

  private static Client connect(
      EtcdSettings settings, BackendConfig config, CallerRunsExecutor calls) {
    ClientBuilder b =
        Client.builder()
            // the hot path's requests are sent from the calling thread (CallerRunsExecutor); jetcd
            // does not shut down an
            // executor it was given, the backend does
            .executorService(calls)
            .endpoints(settings.endpoints.toArray(String[]::new))
            .connectTimeout(settings.connectTimeout)
            .retryMaxDuration(settings.requestTimeout)
            // One connection per member, used in turn: when a member dies, calls go on on the
            // others
            // (pick_first, jetcd's default, stalled for a minute when the connected leader was
            // killed).
            .loadBalancerPolicy("round_robin")
            // Calls wait for a connection (after a server restart, say) up to our own deadline on
            // each call.
            .waitForReady(true)
            // "no key under this prefix" in a transaction, for lock sets (EtcdLockSets)
            .interceptor(new RangeCompares());
    if (settings.user != null) {
      b.user(KeyNames.bytes(settings.user)).password(KeyNames.bytes(settings.password));
    }
    if (settings.tls) {
      try {
        b.sslContext(
            ssl -> {
              if (settings.tlsCa != null) {
                ssl.trustManager(settings.tlsCa.toFile());
              }
              if (settings.tlsCert != null) {
                ssl.keyManager(settings.tlsCert.toFile(), settings.tlsKey.toFile());
              }
            });
      } catch (Exception e) {
        config.problem(
            "`tls-ca`, `tls-cert` or `tls-key` could not be read as PEM (certificates, and a PKCS#8"
                + " key): "
                + EtcdCalls.describe(e));
        config.check();
      }
    }
    try {
      return b.build();
    } catch (RuntimeException e) {
      throw new BackendUnavailableException(
          "cannot set up a client for " + settings.describe() + ": " + EtcdCalls.describe(e), e);
    }
  }
}
