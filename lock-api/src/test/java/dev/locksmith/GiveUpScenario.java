package dev.locksmith;

import static dev.locksmith.Kept.keep;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Drives one client through every way an acquire gives up, for tests of what reports those give-ups
 * ({@link LockEvents}, meters). Each name in {@link #NAMES} is first held by another client, then
 * the client under test gives up on it in that name's way:
 *
 * <ul>
 *   <li>{@code busy}: {@code tryAcquire()} finds it held;
 *   <li>{@code timeout}: {@code acquire(}{@link #TIMEOUT}{@code )} runs out;
 *   <li>{@code interrupted}: a waiting thread is interrupted;
 *   <li>{@code cancelled}: the future of {@code acquireAsync} is cancelled;
 *   <li>{@code closed}: the client is closed under a waiting thread.
 * </ul>
 *
 * The client under test is closed when {@link #run} returns.
 */
public final class GiveUpScenario {
  /** The names, one per way to give up, in the order they are driven. */
  public static final List<String> NAMES =
      List.of("busy", "timeout", "interrupted", "cancelled", "closed");

  /** How long the {@code timeout} name's acquire waits. */
  public static final Duration TIMEOUT = Duration.ofMillis(20);

  /** A wait of the test's own, for one name. */
  @FunctionalInterface
  public interface Probe {
    /**
     * Returns once what the test waits for has happened for {@code name}.
     *
     * @param name one of {@link #NAMES}
     * @throws InterruptedException if interrupted while waiting
     */
    void await(String name) throws InterruptedException;
  }

  private GiveUpScenario() {}

  /**
   * Holds every name with {@code holder}, then makes {@code client} give up on each in turn.
   *
   * @param holder the client that holds every name for the whole run
   * @param client the client under test; closed by the {@code closed} step
   * @param waiting returns once {@code client} waits for the name (a test that cannot see the
   *     waiter may pause instead: an interrupt or a cancel before the wait starts gives up the same
   *     way)
   * @param gaveUp returns once the test has observed the name's give-up
   * @throws InterruptedException if a probe or a join is interrupted
   */
  public static void run(LockClient holder, LockClient client, Probe waiting, Probe gaveUp)
      throws InterruptedException {
    for (String name : NAMES) {
      keep(holder.lock(name).acquire(Duration.ofSeconds(5)));
    }
    if (client.lock("busy").tryAcquire().isPresent()) {
      throw new AssertionError("tryAcquire of 'busy' got a lease although another client holds it");
    }
    gaveUp.await("busy");

    try {
      client.lock("timeout").acquire(TIMEOUT);
      throw new AssertionError("acquire of 'timeout' got a lease although another client holds it");
    } catch (LockTimeoutException expected) {
      // the give-up this step is for
    }
    gaveUp.await("timeout");

    Thread interrupted =
        waiter(
            () -> {
              try {
                client.lock("interrupted").acquire();
              } catch (InterruptedException expected) {
                // the give-up this step is for
              }
            });
    waiting.await("interrupted");
    interrupted.interrupt();
    interrupted.join(5_000);
    gaveUp.await("interrupted");

    CompletableFuture<Lease> cancelled = client.lock("cancelled").acquireAsync(Duration.ofHours(1));
    waiting.await("cancelled");
    cancelled.cancel(true);
    gaveUp.await("cancelled");

    Thread closed =
        waiter(
            () -> {
              try {
                client.lock("closed").acquire();
              } catch (LockException expected) {
                // the client was closed under the waiter: the give-up this step is for
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    waiting.await("closed");
    client.close();
    closed.join(5_000);
    gaveUp.await("closed");
  }

  private static Thread waiter(Runnable body) {
    Thread t = new Thread(body, "give-up-waiter");
    t.setDaemon(true);
    t.start();
    return t;
  }
}
