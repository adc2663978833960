package dev.locksmith.etcd;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * A one-member etcd of lock-etcd's test fixture (its test-jar), started once per test JVM, as a
 * lock URI for the adapter tests.
 */
public final class AdapterEtcd {
  private static EtcdCluster cluster;

  private AdapterEtcd() {}

  /**
   * @return etcd://127.0.0.1:PORT
   */
  public static synchronized String uri() throws InterruptedException {
    if (cluster == null) {
      try {
        cluster = EtcdCluster.start(1, "adapters");
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      EtcdCluster started = cluster;
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    try {
                      started.close();
                    } catch (IOException e) {
                      // the JVM is exiting; the data directory is temporary
                    }
                  }));
    }
    return "etcd://" + cluster.hosts();
  }
}
