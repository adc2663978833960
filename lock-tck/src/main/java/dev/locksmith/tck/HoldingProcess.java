package dev.locksmith.tck;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.Locks;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A separate JVM that takes a lock and holds it until it is killed, for rules about processes that
 * vanish. The URI comes from {@code LOCKSMITH_URI} (never the command line, where other users could
 * read a password); the lock name and lease are the arguments. It prints {@code HELD <token>} once
 * it holds the lock, and renews it until killed. With a third argument it first gives the lease up
 * with {@link Lease#releaseAfter}, keeping the lock held on the server for that many milliseconds,
 * then prints the line and waits to be killed.
 */
public final class HoldingProcess {
  private HoldingProcess() {}

  /**
   * @param args lock name, lease in milliseconds, optionally a hold after release in milliseconds
   * @throws Exception if the lock cannot be taken
   */
  public static void main(String[] args) throws Exception {
    if (args.length != 2 && args.length != 3) {
      System.err.println(
          "usage: HoldingProcess LOCK_NAME LEASE_MILLIS [KEEP_MILLIS]   (URI in LOCKSMITH_URI)");
      System.exit(2);
    }
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    LockConfig config =
        LockConfig.builder()
            .uri(System.getenv("LOCKSMITH_URI"))
            .lease(Duration.ofMillis(Long.parseLong(args[1])))
            .autoRenew(true)
            .build();
    LockClient client = Locks.connect(config);
    Lease lease = client.lock(args[0]).acquire(Duration.ofSeconds(30));
    if (args.length == 3 && !lease.releaseAfter(Duration.ofMillis(Long.parseLong(args[2])))) {
      System.err.println("releaseAfter answered false on a lease just taken");
      System.exit(3);
    }
    out.println("HELD " + lease.fencingToken());
    try {
      Thread.sleep(Long.MAX_VALUE); // held until the parent kills us
    } finally {
      // the lease must stay reachable while we sleep, or the client would release it as dropped
      java.lang.ref.Reference.reachabilityFence(lease);
    }
  }
}
