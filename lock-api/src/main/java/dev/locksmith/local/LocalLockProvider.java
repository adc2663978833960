package dev.locksmith.local;

import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.BackendContext;
import dev.locksmith.spi.LockBackend;
import dev.locksmith.spi.LockProvider;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The {@code local:} backend: locks shared by every client in this JVM that names the same space
 * ({@code local:} is the space {@code default}; {@code local:orders} is the space {@code orders}).
 * Leased, fenced, FIFO and woken by notification, it is the compatibility kit's reference, and what
 * you use in your own unit tests in place of a server. It does not coordinate separate processes.
 *
 * <p>Its static methods inject faults into a space, so your tests can check how your code handles a
 * lost lease or an outage:
 *
 * <pre>{@code
 * try (LockClient client = Locks.connect("local:my-test?lease=200ms")) {
 *   Lease lease = client.lock("job").acquire();
 *   LocalLockProvider.revoke("my-test", "job");          // as if the server forgot the lock
 *   lease.lost().toCompletableFuture().get(1, SECONDS);   // your loss handling runs
 * }
 * }</pre>
 */
public final class LocalLockProvider implements LockProvider {
  private static final Pattern SPACE = Pattern.compile("[A-Za-z0-9._\\-]{0,64}");

  /** Made by {@link java.util.ServiceLoader}. */
  public LocalLockProvider() {}

  @Override
  public Set<String> schemes() {
    return Set.of("local");
  }

  @Override
  public Set<String> optionNames() {
    return Set.of();
  }

  @Override
  public LockBackend open(BackendConfig config, BackendContext context) {
    String space = config.uri().path();
    if (!config.uri().hosts().isEmpty()
        || config.uri().raw().contains("//")
        || !SPACE.matcher(space).matches()) {
      config.problem(
          "`uri` was '"
              + config.uri()
              + "' but a local URI must be local: or local:SPACE, where SPACE is up to 64 letters,"
              + " digits, '.', '_' or '-'");
    }
    config.check();
    return new LocalBackend(
        LocalSpace.named(space.isEmpty() ? "default" : space), context.recheck());
  }

  /**
   * Frees a lock as if the server had lost it: its holder's next renewal finds it gone and reports
   * the lease lost. The semaphore and the read-write lock of the same name lose every lease too.
   *
   * @param space the space ({@code default} for {@code local:})
   * @param lockName the lock
   */
  public static void revoke(String space, String lockName) {
    LocalSpace s = LocalSpace.named(Objects.requireNonNull(space, "space"));
    s.revoke(Objects.requireNonNull(lockName, "lockName"));
    s.revokeShared(LocalSpace.sharedKey(lockName, dev.locksmith.spi.Claim.permit(1)));
    s.revokeShared(LocalSpace.sharedKey(lockName, dev.locksmith.spi.Claim.read()));
  }

  /**
   * Simulates an outage: every call to the space fails with {@link
   * dev.locksmith.BackendUnavailableException} until {@link #resume(String)}.
   *
   * @param space the space ({@code default} for {@code local:})
   */
  public static void suspend(String space) {
    LocalSpace.named(Objects.requireNonNull(space, "space")).suspend();
  }

  /**
   * Ends a simulated outage.
   *
   * @param space the space
   */
  public static void resume(String space) {
    LocalSpace.named(Objects.requireNonNull(space, "space")).resume();
  }

  /**
   * @param space the space
   * @param lockName the lock
   * @return whether someone holds the lock right now (an expired lease does not count)
   */
  public static boolean isHeld(String space, String lockName) {
    return LocalSpace.named(Objects.requireNonNull(space, "space"))
            .holder(Objects.requireNonNull(lockName, "lockName"))
        != null;
  }
}
