package dev.locksmith.shedlock;

import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;

/**
 * A separate JVM that runs one ShedLock "job": it locks, unlocks at once (so the server keeps the
 * lock for lockAtLeastFor), prints {@code UNLOCKED <token>}, and waits to be killed. The URI comes
 * from {@code LOCKSMITH_URI}; the arguments are the lock name, lockAtMostFor and lockAtLeastFor in
 * milliseconds.
 */
public final class ShedLockJobProcess {
  private ShedLockJobProcess() {}

  /**
   * @param args lock name, lockAtMostFor ms, lockAtLeastFor ms
   * @throws Exception if the lock cannot be taken
   */
  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    LockClient client = Locks.connect(System.getenv("LOCKSMITH_URI"));
    LocksmithLockProvider provider = new LocksmithLockProvider(client);
    SimpleLock lock =
        provider
            .lock(
                new LockConfiguration(
                    ClockProvider.now(),
                    args[0],
                    Duration.ofMillis(Long.parseLong(args[1])),
                    Duration.ofMillis(Long.parseLong(args[2]))))
            .orElseThrow(() -> new IllegalStateException("lock '" + args[0] + "' was taken"));
    long token = LocksmithLockProvider.currentFencingToken().orElseThrow();
    lock.unlock();
    out.println("UNLOCKED " + token);
    Thread.sleep(Long.MAX_VALUE); // until the parent kills us
  }
}
