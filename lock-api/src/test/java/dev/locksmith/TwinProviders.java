package dev.locksmith;

import dev.locksmith.local.LocalLockProvider;
import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import dev.locksmith.spi.LockUri;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Two providers claiming the scheme "twin", registered for tests only, to exercise the ambiguity
 * error.
 */
public final class TwinProviders {
  private TwinProviders() {}

  abstract static class Twin implements LockProvider {
    @Override
    public Set<String> schemes() {
      return Set.of("twin");
    }

    @Override
    public Set<String> optionNames() {
      return Set.of("color");
    }

    @Override
    public LockBackend open(BackendConfig config, BackendContext context) {
      config.string("color", "red");
      config.check();
      return new LocalLockProvider()
          .open(new BackendConfig(LockUri.parse("local:twin"), Map.of(), List.of()), context);
    }
  }

  /** First twin. */
  public static final class A extends Twin {}

  /** Second twin. */
  public static final class B extends Twin {}
}
