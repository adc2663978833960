package dev.locksmith.tck;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Ways to hurt a backend, for the rules and comparisons that need them. Every method is
 * optional: the default throws {@link UnsupportedOperationException}, and a rule that needs a
 * hook the backend does not offer is reported as skipped with the hook's name, never as passed.
 *
 * <pre>{@code
 * protected FaultHooks faults() {
 *   return new FaultHooks() {
 *     public void revoke(String lockName) { redis.del(prefix + lockName); }
 *     public void pauseServer() { server.pause(); }
 *     public void resumeServer() { server.resume(); }
 *   };
 * }
 * }</pre>
 */
public interface FaultHooks {
  /** Offers no hook. */
  FaultHooks NONE = new FaultHooks() {};

  /**
   * Makes the server forget a lock without the holder's knowledge (delete the key, row or node).
   *
   * @param lockName the lock's name as the user gave it
   */
  default void revoke(String lockName) {
    throw new UnsupportedOperationException("revoke");
  }

  /** Freezes the server (SIGSTOP): connections stay open, nothing is answered. */
  default void pauseServer() {
    throw new UnsupportedOperationException("pauseServer");
  }

  /** Undoes {@link #pauseServer()} (SIGCONT). */
  default void resumeServer() {
    throw new UnsupportedOperationException("resumeServer");
  }

  /** Kills the server (SIGKILL). */
  default void killServer() {
    throw new UnsupportedOperationException("killServer");
  }

  /** Starts the server again after {@link #killServer()}, on the same address. */
  default void restartServer() {
    throw new UnsupportedOperationException("restartServer");
  }

  /**
   * @return the address clients connect to (the one server, or the one a cut-off client uses),
   *     so that a proxy can be put in front of it
   */
  default InetSocketAddress serverAddress() {
    throw new UnsupportedOperationException("serverAddress");
  }

  /**
   * @param proxy a proxy in front of {@link #serverAddress()}
   * @return the backend URI with that server replaced by the proxy, for the client to cut off
   */
  default String uriVia(InetSocketAddress proxy) {
    throw new UnsupportedOperationException("uriVia");
  }

  /** Kills the leader (or primary) of a replicated server, leaving a majority running. */
  default void killLeader() {
    throw new UnsupportedOperationException("killLeader");
  }

  /**
   * Kills a majority of the servers of a backend that needs a quorum of them (Redlock's servers,
   * a consensus cluster's members), so that no lock can be taken until {@link #restartMajority()}.
   */
  default void killMajority() {
    throw new UnsupportedOperationException("killMajority");
  }

  /** Starts the servers that {@link #killMajority()} killed again, on the same addresses. */
  default void restartMajority() {
    throw new UnsupportedOperationException("restartMajority");
  }

  /**
   * Moves the lock server's clock (for that server process alone, such as with faketime).
   *
   * @param jump how far, forwards
   */
  default void jumpServerClock(Duration jump) {
    throw new UnsupportedOperationException("jumpServerClock");
  }

  /**
   * @param revoke how to make the server forget a lock
   * @return these hooks, with {@link #revoke(String)} done by {@code revoke}: so that a kit
   *     subclass adds revocation to the server hooks its module already has
   */
  default FaultHooks withRevoke(Consumer<String> revoke) {
    Objects.requireNonNull(revoke, "revoke");
    FaultHooks base = this;
    return new FaultHooks() {
      @Override
      public void revoke(String lockName) {
        revoke.accept(lockName);
      }

      @Override
      public void pauseServer() {
        base.pauseServer();
      }

      @Override
      public void resumeServer() {
        base.resumeServer();
      }

      @Override
      public void killServer() {
        base.killServer();
      }

      @Override
      public void restartServer() {
        base.restartServer();
      }

      @Override
      public InetSocketAddress serverAddress() {
        return base.serverAddress();
      }

      @Override
      public String uriVia(InetSocketAddress proxy) {
        return base.uriVia(proxy);
      }

      @Override
      public void killLeader() {
        base.killLeader();
      }

      @Override
      public void killMajority() {
        base.killMajority();
      }

      @Override
      public void restartMajority() {
        base.restartMajority();
      }

      @Override
      public void jumpServerClock(Duration jump) {
        base.jumpServerClock(jump);
      }
    };
  }
}
