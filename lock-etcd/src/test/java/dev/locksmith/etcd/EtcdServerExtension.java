package dev.locksmith.etcd;

import io.etcd.jetcd.Client;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Real etcd for a test class: one member or a cluster of three on free loopback ports, started
 * before the class's tests and stopped after them, or started once and shared by every class of the
 * test JVM ({@link #sharedOneMember}). Register it on a static field:
 *
 * <pre>{@code
 * @RegisterExtension static final EtcdServerExtension ETCD = EtcdServerExtension.oneMember("tck");
 * }</pre>
 *
 * Without the etcd binary the class fails; it is never skipped.
 */
public final class EtcdServerExtension implements BeforeAllCallback, AfterAllCallback {
  /** The members shared by the test JVM, by tag; each stopped when the JVM exits. */
  private static final Map<String, EtcdCluster> SHARED = new ConcurrentHashMap<>();

  private final int size;
  private final String tag;
  private final boolean perJvm;
  private String clientScheme = "http";
  private Callable<String[]> extraArgs = () -> new String[0];
  private String rootPassword;
  private EtcdCluster cluster;
  private Client admin;

  private EtcdServerExtension(int size, String tag, boolean perJvm) {
    this.size = size;
    this.tag = tag;
    this.perJvm = perJvm;
  }

  /**
   * @param tag a word for directory and process names
   * @return one member for the class that registers it
   */
  public static EtcdServerExtension oneMember(String tag) {
    return new EtcdServerExtension(1, tag, false);
  }

  /**
   * @param tag a word for directory and process names
   * @return a cluster of three members for the class that registers it
   */
  public static EtcdServerExtension threeMembers(String tag) {
    return new EtcdServerExtension(3, tag, false);
  }

  /**
   * @param tag a word for directory and process names; classes that give the same tag share one
   *     member, started by the first of them and stopped when the test JVM exits
   * @return one member shared by the test JVM
   */
  public static EtcdServerExtension sharedOneMember(String tag) {
    return new EtcdServerExtension(1, tag, true);
  }

  /**
   * Serves clients over TLS.
   *
   * @param args etcd's flags for it ({@code --cert-file}, {@code --key-file}), made when the
   *     members start, after the class's static set-up
   * @return this
   */
  EtcdServerExtension https(Callable<String[]> args) {
    this.clientScheme = "https";
    this.extraArgs = args;
    return this;
  }

  /**
   * Turns authentication on once the members run: user root with this password.
   *
   * @return this
   */
  EtcdServerExtension withRootAuth(String password) {
    this.rootPassword = password;
    return this;
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    if (perJvm) {
      cluster = SHARED.computeIfAbsent(tag, k -> startShared());
    } else {
      cluster = start();
    }
    started.push(cluster);
  }

  /**
   * The servers started for the class and for each of its {@code @Nested} classes (which get
   * BeforeAll/AfterAll calls of their own), innermost first: each is stopped when its class ends,
   * and the enclosing class's is current again. Without it the enclosing class's servers were
   * overwritten by the first nested class's and never stopped.
   */
  private final java.util.Deque<EtcdCluster> started = new java.util.ArrayDeque<>();

  private EtcdCluster start() throws Exception {
    EtcdCluster started = EtcdCluster.start(size, tag, clientScheme, extraArgs.call());
    if (rootPassword != null) {
      try {
        started.enableRootAuth(rootPassword);
      } catch (Exception e) {
        started.close();
        throw e;
      }
    }
    return started;
  }

  private EtcdCluster startShared() {
    try {
      EtcdCluster started = start();
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
      return started;
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException("etcd " + tag + " did not start: " + e, e);
    }
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    try {
      if (admin != null) {
        admin.close();
        admin = null;
      }
    } finally {
      EtcdCluster ended = started.poll();
      cluster = started.peek();
      if (ended != null && !perJvm) {
        ended.close();
      }
    }
  }

  /**
   * @return {@code etcd://127.0.0.1:p1,...} over every member, without path or options
   */
  public String uri() {
    return "etcd://" + hosts();
  }

  /**
   * @return {@code 127.0.0.1:p1,127.0.0.1:p2,...}
   */
  public String hosts() {
    return cluster().hosts();
  }

  /**
   * @return a jetcd client over every member, made on first use and closed after the class
   */
  public synchronized Client admin() {
    if (admin == null) {
      admin = Client.builder().endpoints(cluster().endpoints()).build();
    }
    return admin;
  }

  /**
   * @return the members, for pausing, killing and restarting them
   */
  EtcdCluster cluster() {
    if (cluster == null) {
      throw new IllegalStateException(
          "etcd " + tag + " runs only between the class's BeforeAll and AfterAll");
    }
    return cluster;
  }
}
