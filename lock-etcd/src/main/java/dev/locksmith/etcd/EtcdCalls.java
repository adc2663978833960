package dev.locksmith.etcd;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.spi.Durations;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * Waits for jetcd's futures with a deadline, and turns failures into messages that name the server.
 */
final class EtcdCalls {
  private final EtcdSettings settings;

  EtcdCalls(EtcdSettings settings) {
    this.settings = settings;
  }

  /**
   * Sends a call from this thread ({@link CallerRunsExecutor#send}) and waits for its answer.
   *
   * @param call starts the call (jetcd's), or hands back one already started
   * @param what what was asked, such as "granting a lease"
   * @param timeoutOption the option that set the deadline, for the message
   */
  <T> T await(
      Supplier<CompletableFuture<T>> call, Duration timeout, String what, String timeoutOption)
      throws InterruptedException {
    return await(call, Durations.toNanosSaturated(timeout), timeout, what, timeoutOption);
  }

  /**
   * As {@link #await(Supplier, Duration, String, String)}, waiting {@code waitNanos}: what is left
   * of {@code timeout} once the caller spent some of it (building the client, before a connect's
   * first call), which the message states.
   */
  <T> T await(
      Supplier<CompletableFuture<T>> call,
      long waitNanos,
      Duration timeout,
      String what,
      String timeoutOption)
      throws InterruptedException {
    CompletableFuture<T> future = CallerRunsExecutor.send(call);
    try {
      return future.get(Math.max(1, waitNanos), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      future.cancel(true);
      throw timedOut(what, timeout, timeoutOption);
    } catch (ExecutionException e) {
      throw failed(what, e.getCause());
    } catch (InterruptedException e) {
      future.cancel(true);
      throw e;
    }
  }

  /**
   * As {@link #await}, but an interrupt neither ends the wait early nor is lost: the flag is set
   * again afterwards.
   */
  <T> T awaitUninterruptibly(Supplier<CompletableFuture<T>> call, Duration timeout, String what) {
    CompletableFuture<T> future = CallerRunsExecutor.send(call);
    boolean interrupted = Thread.interrupted();
    long deadline = System.nanoTime() + Durations.toNanosSaturated(timeout);
    try {
      while (true) {
        try {
          return future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
          interrupted = true;
        } catch (TimeoutException e) {
          future.cancel(true);
          throw timedOut(what, timeout, EtcdSettings.REQUEST_TIMEOUT);
        } catch (ExecutionException e) {
          throw failed(what, e.getCause());
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  BackendUnavailableException timedOut(String what, Duration timeout, String timeoutOption) {
    return new BackendUnavailableException(
        settings.describe()
            + " did not answer "
            + what
            + " within "
            + Durations.format(timeout)
            + " (`"
            + timeoutOption
            + "`); check that etcd runs there and is reachable, and that `tls` ("
            + settings.tls
            + ") matches the server");
  }

  BackendUnavailableException failed(String what, Throwable cause) {
    String detail = describe(cause);
    String hint = "";
    String lower = detail.toLowerCase(java.util.Locale.ROOT);
    if (lower.contains("authentication failed")
        || lower.contains("invalid user")
        || lower.contains("user name is empty")
        || lower.contains("unauthenticated")
        || lower.contains("permission denied")) {
      hint = "; check the user and password in the URI (etcd://user:password@host:port)";
    } else if (lower.contains("ssl")
        || lower.contains("tls")
        || lower.contains("handshake")
        || lower.contains("certificate")) {
      hint = "; check that `tls` (" + settings.tls + ") and the certificates match the server";
    }
    return new BackendUnavailableException(
        settings.describe() + " failed " + what + ": " + detail + hint, cause);
  }

  /**
   * @return the most telling message in a cause chain, without stack noise
   */
  static String describe(Throwable cause) {
    Throwable t = cause;
    String best = null;
    for (int i = 0; t != null && i < 8; i++, t = t.getCause()) {
      String m = t.getMessage();
      if (m != null && !m.isBlank()) {
        best = m;
      }
    }
    if (best == null) {
      best = String.valueOf(cause);
    }
    return best.length() > 300 ? best.substring(0, 300) + "..." : best;
  }

  /**
   * @return whether a failure says the lease does not exist on the server
   */
  static boolean leaseNotFound(Throwable cause) {
    for (Throwable t = cause; t != null; t = t.getCause()) {
      String m = t.getMessage();
      if (m != null && m.toLowerCase(java.util.Locale.ROOT).contains("requested lease not found")) {
        return true;
      }
    }
    return false;
  }
}
