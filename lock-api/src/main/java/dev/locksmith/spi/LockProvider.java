package dev.locksmith.spi;

import java.util.Set;

/**
 * Makes backends for one or more URI schemes. Found by {@link java.util.ServiceLoader}: list the
 * class in {@code META-INF/services/dev.locksmith.spi.LockProvider}; it needs a public no-argument
 * constructor.
 *
 * <pre>{@code
 * public final class MyProvider implements LockProvider {
 *   public Set<String> schemes() { return Set.of("mystore"); }
 *   public Set<String> optionNames() { return Set.of("pool-size"); }
 *   public LockBackend open(BackendConfig config, BackendContext context) {
 *     int pool = config.integer("pool-size", 8, 1, 256);
 *     config.check();                       // every problem at once, before connecting
 *     return new MyBackend(config.uri(), pool, context);
 *   }
 * }
 * }</pre>
 */
public interface LockProvider {

  /**
   * @return the schemes served, lower case: {@code redis}, or {@code jdbc:postgresql} for JDBC URIs
   */
  Set<String> schemes();

  /**
   * @return the backend options understood, beyond the settings every client understands
   */
  Set<String> optionNames();

  /**
   * @param key an option key
   * @return whether this provider understands it; override to accept a family of keys (such as JDBC
   *     driver properties)
   */
  default boolean acceptsOption(String key) {
    return optionNames().contains(key);
  }

  /**
   * Opens a backend. Read and check every option first ({@link BackendConfig#check()}), then
   * connect; on failure close whatever was opened, so nothing is left behind.
   *
   * @param config the URI and backend options
   * @param context callbacks into the client's core
   * @return the backend, connected
   * @throws dev.locksmith.LockConfigurationException for bad options
   * @throws dev.locksmith.BackendUnavailableException if the server cannot be reached, naming it
   *     with secrets redacted
   */
  LockBackend open(BackendConfig config, BackendContext context);
}
