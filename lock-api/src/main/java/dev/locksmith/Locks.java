package dev.locksmith;

import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import dev.locksmith.spi.LockUri;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The entry point: connects to a lock backend chosen by the URI's scheme.
 *
 * <pre>{@code
 * try (LockClient client = Locks.connect("redis://localhost:6379?lease=10s")) {
 *   try (Lease lease = client.lock("orders:42").acquire(Duration.ofSeconds(5))) {
 *     process(order, lease.fencingToken());
 *   }
 * }
 * }</pre>
 *
 * <p>Backends are found with {@link ServiceLoader}; each backend artifact registers its {@link
 * LockProvider}. The in-process {@code local:} backend is always present. Changing the backend is
 * changing the URI.
 */
public final class Locks {
  private static final Logger LOG = LoggerFactory.getLogger(Locks.class);

  /** Which artifact serves which of our own schemes, to say what to add when one is missing. */
  private static final Map<String, String> ARTIFACTS =
      Map.ofEntries(
          Map.entry("redis", "dev.locksmith:lock-redis"),
          Map.entry("rediss", "dev.locksmith:lock-redis"),
          Map.entry("redis-sentinel", "dev.locksmith:lock-redis"),
          Map.entry("rediss-sentinel", "dev.locksmith:lock-redis"),
          Map.entry("redis-cluster", "dev.locksmith:lock-redis"),
          Map.entry("rediss-cluster", "dev.locksmith:lock-redis"),
          Map.entry("redlock", "dev.locksmith:lock-redlock"),
          Map.entry("jdbc", "dev.locksmith:lock-jdbc"),
          Map.entry("zookeeper", "dev.locksmith:lock-zookeeper"),
          Map.entry("etcd", "dev.locksmith:lock-etcd"),
          Map.entry("local", "dev.locksmith:lock-api"));

  private Locks() {}

  /**
   * @param uri a lock URI such as {@code redis://localhost:6379}, {@code jdbc:postgresql://db/app},
   *     {@code zookeeper://zk1:2181,zk2:2181/locks} or {@code local:}, with optional settings as
   *     query parameters
   * @return a connected client
   * @throws LockConfigurationException if the URI or a setting is bad, or no backend serves the
   *     scheme
   * @throws BackendUnavailableException if the server cannot be reached
   */
  public static LockClient connect(String uri) {
    return connect(LockConfig.fromUri(uri));
  }

  /**
   * Connects with the configuration in system properties ({@code locksmith.uri}, …) or the
   * environment ({@code LOCKSMITH_URI}, …); see {@link LockConfig#fromEnvironment()}.
   *
   * @return a connected client
   */
  public static LockClient connect() {
    return connect(LockConfig.fromEnvironment());
  }

  /**
   * @param config the configuration
   * @return a connected client
   * @throws LockConfigurationException if a setting is bad, or no backend serves the scheme
   * @throws BackendUnavailableException if the server cannot be reached
   */
  public static LockClient connect(LockConfig config) {
    if (config == null) {
      throw new NullPointerException(
          "`config` was null but it must be a LockConfig, such as LockConfig.fromUri(\"local:\")");
    }
    return open(config, provider(config));
  }

  /**
   * The provider {@link #connect(LockConfig)} opens a configuration with: the one on the class path
   * that serves the URI's scheme, or the class the {@code provider} setting names. For tools that
   * wrap a provider (the compatibility kit records every call through it) and then connect with
   * {@link #connect(LockConfig, LockProvider)}.
   *
   * @param config the configuration
   * @return the provider
   * @throws LockConfigurationException if no provider, or more than one, serves the scheme
   */
  public static LockProvider provider(LockConfig config) {
    if (config == null) {
      throw new NullPointerException(
          "`config` was null but it must be a LockConfig, such as LockConfig.fromUri(\"local:\")");
    }
    return provider(config.uri(), config.provider());
  }

  /**
   * Connects through a provider instance instead of looking one up by scheme: for a backend built
   * around an object no URI can name (a {@code DataSource} the application already has), and for
   * test doubles. The URI's scheme must be one the provider serves.
   *
   * @param config the configuration
   * @param provider the provider to open the backend with
   * @return a connected client
   * @throws LockConfigurationException if a setting is bad or the provider does not serve the
   *     scheme
   * @throws BackendUnavailableException if the server cannot be reached
   */
  public static LockClient connect(LockConfig config, LockProvider provider) {
    if (config == null) {
      throw new NullPointerException(
          "`config` was null but it must be a LockConfig, such as LockConfig.fromUri(\"local:\")");
    }
    if (provider == null) {
      throw new NullPointerException("`provider` was null but it must be a LockProvider");
    }
    if (provider.schemes().stream().noneMatch(s -> s.equalsIgnoreCase(config.uri().scheme()))) {
      throw new LockConfigurationException(
          List.of(
              "`uri` was '"
                  + config.uri()
                  + "' but provider "
                  + provider.getClass().getName()
                  + " serves only the schemes "
                  + new TreeSet<>(provider.schemes())));
    }
    return open(config, provider);
  }

  private static LockClient open(LockConfig config, LockProvider provider) {
    LockUri uri = config.uri();
    List<String> problems = new ArrayList<>();
    Map<String, String> options = new LinkedHashMap<>();
    Set<String> valid = new TreeSet<>(LockConfig.CORE_KEYS);
    valid.addAll(provider.optionNames());
    config
        .backendOptions()
        .forEach(
            (key, value) -> {
              String meant =
                  provider.optionNames().contains(key) ? null : LockConfig.nearCoreKey(key);
              if (meant != null && config.isLenient(key)) {
                LOG.warn(
                    "ignoring environment setting '{}' (LOCKSMITH_{}): did you mean `{}`?",
                    key,
                    key.toUpperCase(java.util.Locale.ROOT).replace('-', '_'),
                    meant);
              } else if (meant != null) {
                // refused even where the provider passes unknown keys on (JDBC driver properties):
                // the
                // driver would ignore it, and the setting the user meant would silently not apply
                problems.add(
                    "`"
                        + key
                        + "` was '"
                        + unknownValue(value)
                        + "' but it is not a setting; did you mean `"
                        + meant
                        + "`? Settings are case-sensitive; valid settings of scheme '"
                        + uri.scheme()
                        + "' are "
                        + valid);
              } else if (config.isLenient(key) && !provider.optionNames().contains(key)) {
                // an environment variable that names no option of this backend: environments hold
                // unrelated LOCKSMITH_* variables, which must not reach a provider that passes keys
                // on
                LOG.debug(
                    "ignoring environment setting '{}': scheme '{}' has no such option",
                    key,
                    uri.scheme());
              } else if (provider.acceptsOption(key)) {
                options.put(key, value);
              } else if (config.isLenient(key)) {
                LOG.debug(
                    "ignoring environment setting '{}': scheme '{}' has no such option",
                    key,
                    uri.scheme());
              } else {
                problems.add(
                    "`"
                        + key
                        + "` was '"
                        + unknownValue(value)
                        + "' but it is not a setting of scheme '"
                        + uri.scheme()
                        + "'; valid settings are "
                        + valid);
              }
            });
    if (uri.password() != null && options.containsKey("password")) {
      problems.add(
          "`password` was given twice, in the URI's user info and as the setting `password`; give"
              + " it once");
    }
    BackendConfig backendConfig = new BackendConfig(uri, options, problems);
    ClientCore core = new ClientCore(config);
    LockBackend backend;
    try {
      backend = provider.open(backendConfig, core);
    } catch (RuntimeException e) {
      core.close();
      throw e;
    }
    try {
      backendConfig
          .check(); // in case the provider did not: never hand out a client built on bad settings
      core.start(backend);
    } catch (RuntimeException e) {
      backend.close();
      core.close();
      throw e;
    }
    LOG.debug("connected to {} with {}", uri, provider.getClass().getName());
    return core;
  }

  /** The value of a key nobody knows is never shown: it may be a secret under a misspelt name. */
  private static String unknownValue(String value) {
    return value.isEmpty() ? "" : "****";
  }

  /**
   * @return the schemes of every provider on the class path, such as {@code [local, redis]}
   */
  public static Set<String> schemes() {
    Set<String> all = new TreeSet<>();
    for (LockProvider p : providers()) {
      all.addAll(p.schemes());
    }
    return all;
  }

  private static LockProvider provider(LockUri uri, String chosen) {
    String scheme = uri.scheme();
    List<LockProvider> all = providers();
    List<LockProvider> matching =
        all.stream()
            .filter(p -> p.schemes().stream().anyMatch(s -> s.equalsIgnoreCase(scheme)))
            .collect(Collectors.toList());
    if (chosen != null) {
      List<LockProvider> named =
          matching.stream()
              .filter(p -> p.getClass().getName().equals(chosen))
              .collect(Collectors.toList());
      if (named.isEmpty()) {
        throw new LockConfigurationException(
            List.of(
                "`provider` was '"
                    + chosen
                    + "' but no provider of that class serves scheme '"
                    + scheme
                    + "'; providers for it: "
                    + classNames(matching)));
      }
      return named.get(0);
    }
    if (matching.size() > 1) {
      throw new LockConfigurationException(
          List.of(
              "`uri` was '"
                  + uri
                  + "' but "
                  + matching.size()
                  + " providers serve scheme '"
                  + scheme
                  + "': "
                  + classNames(matching)
                  + "; choose one with the setting provider=<class name> (query parameter,"
                  + " locksmith.provider or LOCKSMITH_PROVIDER)"));
    }
    if (matching.isEmpty()) {
      Set<String> available = new TreeSet<>();
      all.forEach(p -> available.addAll(p.schemes()));
      String family = scheme.startsWith("jdbc:") ? "jdbc" : scheme;
      String artifact = ARTIFACTS.get(family);
      throw new LockConfigurationException(
          List.of(
              "`uri` was '"
                  + uri
                  + "' but no lock provider serves scheme '"
                  + scheme
                  + "'; schemes available: "
                  + available
                  + "; "
                  + (artifact != null
                      ? "add the artifact " + artifact + " to the class path"
                      : "add the artifact of a provider for '" + scheme + "' to the class path")));
    }
    return matching.get(0);
  }

  private static List<String> classNames(List<LockProvider> providers) {
    return providers.stream()
        .map(p -> p.getClass().getName())
        .sorted()
        .collect(Collectors.toList());
  }

  private static List<LockProvider> providers() {
    ClassLoader loader = Thread.currentThread().getContextClassLoader();
    if (loader == null) {
      loader = Locks.class.getClassLoader();
    }
    List<LockProvider> found = new ArrayList<>();
    try {
      for (LockProvider p : ServiceLoader.load(LockProvider.class, loader)) {
        found.add(p);
      }
    } catch (ServiceConfigurationError e) {
      throw new LockConfigurationException(
          List.of("a lock provider on the class path could not be loaded: " + e.getMessage()));
    }
    if (found.stream().noneMatch(p -> p.getClass().getClassLoader() == Locks.class.getClassLoader())
        && loader != Locks.class.getClassLoader()) {
      for (LockProvider p : ServiceLoader.load(LockProvider.class, Locks.class.getClassLoader())) {
        if (found.stream().noneMatch(f -> f.getClass() == p.getClass())) {
          found.add(p);
        }
      }
    }
    return found;
  }
}
