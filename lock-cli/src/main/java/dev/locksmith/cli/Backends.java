package dev.locksmith.cli;

import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import dev.locksmith.spi.LockUri;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.function.IntFunction;
import java.util.function.Supplier;

/**
 * Where a subcommand's backend comes from: --backend, then --config FILE, then LOCKSMITH_URI /
 * locksmith.uri. Every problem with it is a {@link BadConfiguration} that names its source, the
 * value (secrets hidden) and what is valid: exit status 78, never a stack trace.
 */
final class Backends {
  /**
   * The valid values of the settings every client reads, for problems the library reports in a
   * foreign exception.
   */
  private static final Map<String, String> VALID =
      Map.of(
          "lease", "a duration from 1ms to 7d, such as 30s",
          "recheck", "a duration from 1ms to 1h, such as 1s",
          "renew", "true or false",
          "reentrant", "true or false");

  private Backends() {}

  /**
   * A backend configuration that cannot be used; the message is one paragraph, secrets hidden. Exit
   * status 78.
   */
  static final class BadConfiguration extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BadConfiguration(String message) {
      super(message);
    }
  }

  /** A backend configuration and where it came from. */
  static final class Backend {
    private final String source;
    private final LockConfig config;

    Backend(String source, LockConfig config) {
      this.source = source;
      this.config = config;
    }

    LockConfig config() {
      return config;
    }

    /**
     * @return the URI to show, secrets hidden however the password is written
     */
    String display() {
      return Secrets.display(config.uri().raw());
    }

    /**
     * @return a client; a scheme no provider serves is a {@link BadConfiguration} naming the source
     */
    LockClient connect() {
      return connect(config, source);
    }

    static LockClient connect(LockConfig config, String source) {
      try {
        return Locks.connect(config);
      } catch (LockConfigurationException e) {
        throw new BadConfiguration(source + ": " + e.getMessage());
      }
    }
  }

  /**
   * @param args the subcommand's options
   * @param fallbackUri the URI when none is given, or null when one is required
   * @return the backend
   * @throws Args.UsageException when none is given and there is no fallback, or --config cannot be
   *     read
   * @throws BadConfiguration when the configuration is bad
   */
  static Backend resolve(Args args, String fallbackUri) {
    String uri = args.get("backend");
    if (uri != null) {
      return fromUri("--backend", uri);
    }
    String file = args.get("config");
    if (file != null) {
      Properties p = new Properties();
      try (InputStream in = Files.newInputStream(Path.of(file))) {
        p.load(in);
      } catch (IOException | RuntimeException e) {
        throw new Args.UsageException(
            "--config was '"
                + file
                + "' but it must be a readable properties file with locksmith.uri ("
                + e.getClass().getSimpleName()
                + ": "
                + e.getMessage()
                + ")");
      }
      String source = "--config " + file;
      List<String> keys = new ArrayList<>(p.stringPropertyNames());
      keys.removeIf(k -> !k.startsWith("locksmith.") || k.equals("locksmith.uri"));
      return new Backend(
          source,
          read(
              source,
              p.getProperty("locksmith.uri"),
              () -> LockConfig.fromProperties(p),
              keys,
              i -> {
                Properties without = new Properties();
                without.putAll(p);
                without.remove(keys.get(i));
                return LockConfig.fromProperties(without);
              },
              i -> keys.get(i).substring("locksmith.".length()),
              i -> p.getProperty(keys.get(i))));
    }
    String fromProperty = System.getProperty("locksmith.uri");
    String fromEnv = System.getenv("LOCKSMITH_URI");
    if (fromProperty != null || fromEnv != null) {
      String source = fromProperty != null ? "the system property locksmith.uri" : "LOCKSMITH_URI";
      return new Backend(
          source,
          read(
              source,
              fromProperty != null ? fromProperty : fromEnv,
              LockConfig::fromEnvironment,
              List.of(),
              null,
              null,
              null));
    }
    if (fallbackUri == null) {
      throw new Args.UsageException(
          "no backend: give --backend URI, --config FILE, or set LOCKSMITH_URI");
    }
    return fromUri("the default backend", fallbackUri);
  }

  /**
   * @param source what to call the URI in messages, such as {@code --backend}
   * @param uri the URI as given
   * @return the backend
   * @throws BadConfiguration when the URI or one of its settings is bad
   */
  static Backend fromUri(String source, String uri) {
    List<String> pairs = new ArrayList<>();
    int q = uri.indexOf('?');
    if (q >= 0) {
      for (String pair : uri.substring(q + 1).split("&")) {
        pairs.add(pair);
      }
    }
    return new Backend(
        source,
        read(
            source,
            uri,
            () -> LockConfig.fromUri(uri),
            pairs,
            i -> {
              List<String> rest = new ArrayList<>(pairs);
              rest.remove(i);
              return LockConfig.fromUri(
                  uri.substring(0, q) + (rest.isEmpty() ? "" : "?" + String.join("&", rest)));
            },
            i -> Secrets.decode(pairs.get(i).split("=", 2)[0]),
            i -> {
              String[] kv = pairs.get(i).split("=", 2);
              return kv.length < 2 ? "" : Secrets.decode(kv[1]);
            }));
  }

  /**
   * Reads a configuration; turns what the library reports, in its own exception or a foreign one,
   * into a {@link BadConfiguration} naming the source.
   *
   * @param settings the settings besides the URI, so that the one the library failed on can be
   *     found
   * @param without reads the configuration without setting i
   */
  private static LockConfig read(
      String source,
      String uri,
      Supplier<LockConfig> reader,
      List<String> settings,
      IntFunction<LockConfig> without,
      IntFunction<String> key,
      IntFunction<String> value) {
    if (uri != null) {
      checkPasswordReadable(source, uri);
    }
    try {
      return reader.get();
    } catch (LockConfigurationException e) {
      throw new BadConfiguration(source + ": " + e.getMessage());
    } catch (RuntimeException e) {
      // The library failed with something other than its configuration error (an arithmetic
      // overflow on a huge duration, say): find the setting it failed on, by leaving out each in
      // turn.
      for (int i = 0; i < settings.size(); i++) {
        if (readsWithoutForeignFailure(without, i)) {
          String k = key.apply(i);
          throw new BadConfiguration(
              source
                  + ": invalid lock configuration: `"
                  + k
                  + "` was '"
                  + value.apply(i)
                  + "' but it must be "
                  + VALID.getOrDefault(k.toLowerCase(Locale.ROOT), "a value the backend accepts")
                  + " (the library failed on it with "
                  + e.getClass().getSimpleName()
                  + ": "
                  + e.getMessage()
                  + ")");
        }
      }
      throw new BadConfiguration(
          source
              + ": invalid lock configuration: "
              + (uri == null ? "" : "'" + Secrets.display(uri) + "' ")
              + "could not be read: "
              + e.getClass().getSimpleName()
              + ": "
              + e.getMessage());
    }
  }

  private static boolean readsWithoutForeignFailure(IntFunction<LockConfig> without, int i) {
    try {
      without.apply(i);
      return true;
    } catch (LockConfigurationException e) {
      return true;
    } catch (RuntimeException e) {
      return false;
    }
  }

  /**
   * The library reads the userinfo up to the first {@code /}, {@code ?} or {@code #}; a password
   * holding one unencoded is misread, and the library's message would then name the wrong problem
   * and show part of the password as a host or port. Say what is wrong instead.
   */
  private static void checkPasswordReadable(String source, String uri) {
    String password = Secrets.password(uri);
    if (password == null || password.chars().noneMatch(c -> c == '/' || c == '?' || c == '#')) {
      return;
    }
    try {
      String read = LockUri.parse(uri).password();
      if (read == null || password.equals(read) || Secrets.decode(password).equals(read)) {
        return; // read as written, or the '@' was not a userinfo's (a query value, say): nothing
        // misread
      }
    } catch (IllegalArgumentException e) {
      // misread: reported below
    }
    throw new BadConfiguration(
        source
            + ": invalid lock configuration: `uri` was '"
            + Secrets.display(uri)
            + "' but the password in it must be percent-encoded where it holds '/', '?' or '#'"
            + " (write them as %2F, %3F and %23, and '%' as %25), or the URI cannot be read");
  }
}
