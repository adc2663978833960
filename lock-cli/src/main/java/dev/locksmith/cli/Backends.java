package dev.locksmith.cli;

import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.Locks;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

/** Where a subcommand's backend comes from: --backend, then --config FILE, then LOCKSMITH_URI / locksmith.uri. */
final class Backends {
  private Backends() {}

  static LockConfig config(Args args, String fallbackUri) {
    String uri = args.get("backend");
    if (uri != null) {
      return LockConfig.fromUri(uri);
    }
    String file = args.get("config");
    if (file != null) {
      Properties p = new Properties();
      try (InputStream in = Files.newInputStream(Path.of(file))) {
        p.load(in);
      } catch (IOException e) {
        throw new Args.UsageException("--config was '" + file + "' but it cannot be read: " + e.getMessage());
      }
      return LockConfig.fromProperties(p);
    }
    if (System.getenv("LOCKSMITH_URI") != null || System.getProperty("locksmith.uri") != null) {
      return LockConfig.fromEnvironment();
    }
    if (fallbackUri == null) {
      throw new Args.UsageException("no backend: give --backend URI, --config FILE, or set LOCKSMITH_URI");
    }
    return LockConfig.fromUri(fallbackUri);
  }

  static LockClient connect(LockConfig config) {
    return Locks.connect(config);
  }
}
