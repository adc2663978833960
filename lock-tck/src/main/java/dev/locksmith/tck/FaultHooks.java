package dev.locksmith.tck;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Ways to hurt a backend, for the rules and comparisons that need them. Every method is optional:
 * the default throws {@link UnsupportedOperationException}, and a rule that needs a hook the
 * backend does not offer is reported as skipped with the hook's name, never as passed. Each hook's
 * javadoc says what it must do, what it may do, and what the kit then accepts of the backend;
 * {@link #revoke(String)} in particular may end the holder's session, where that is the server's
 * only way to take a lock away.
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
   * Makes the server take an exclusive lock away from its holder without the holder's knowledge:
   * delete the key, row or node, or, where the server can only do that by ending the holder's
   * session or connection (PostgreSQL advisory locks: {@code pg_terminate_backend}; a ZooKeeper or
   * etcd session), end that session. Used by rules 2.5–2.8, 4.4, 4.5, 14.2, 17.3 and 17.10.
   *
   * <p><b>On a held lock it must</b> return only once the server no longer holds the lock for that
   * lease (wait if ending a session takes a moment): another client can then take it at once, and
   * the holder's release, renewal, {@code extend} and {@code releaseAfter}, each owner-checked on
   * the server, find it no longer theirs. It must leave every other client's locks alone.
   *
   * <p><b>It may</b> end the holder's whole session. Every other lease of that session is then lost
   * with it; the backend reports them, and the revoked one, as {@code SESSION_LOST} ({@code
   * BackendContext.allLeasesLost}). So a revoked lease may be reported lost with {@code TAKEN}
   * (what a renewal that finds another owner or none answers), or with {@code SESSION_LOST} when it
   * was granted for a session ({@code Poll.grantedForSession}) and the revoke ended that session;
   * never {@code RENEWAL_FAILED} (the server was unreachable: the answer of a renewal that says
   * "retry" for a lock another owner holds), {@code EXPIRED} or {@code CLIENT_CLOSED}. The kit
   * checks the reason in rules 4.4 and 4.5 and, in 4.5, that every other lease reported lost with
   * the session really lost its lock.
   *
   * <p><b>On a lock nobody holds</b> it should do nothing and return; it may throw instead (say,
   * {@link IllegalStateException}: nothing to revoke). The kit never revokes a lock nobody has
   * taken. It revokes a lock that may just have been freed only in rule 2.8, where the revoke races
   * the holder's own release; there an exception counts as "nothing to revoke", and a release that
   * fails with {@code BackendUnavailableException} because the revoke ended its session is
   * accepted. The kit revokes exclusive locks only, never a semaphore's permit or a side of a
   * read-write lock, and may call it from any thread while the holder's own call is in flight.
   *
   * @param lockName the lock's name as the user gave it
   * @throws UnsupportedOperationException if the backend offers no such hook: the rules that need
   *     it are skipped, naming it
   */
  default void revoke(String lockName) {
    throw new UnsupportedOperationException("revoke");
  }

  /**
   * Freezes the server (SIGSTOP): connections stay open, nothing is answered, until {@link
   * #resumeServer()}, which the kit always calls afterwards (rule 14.3). Whether the server's own
   * clocks (session timeouts) run meanwhile is up to the server.
   */
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
   * @return the address clients connect to (the one server, or the one a cut-off client uses), so
   *     that a proxy can be put in front of it
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

  /**
   * @return every address a client connects to, for a backend whose client talks to several servers
   *     at once (Redlock): a cut-off client then goes through one proxy per server. By default
   *     {@link #serverAddress()} alone.
   */
  default java.util.List<InetSocketAddress> serverAddresses() {
    return java.util.List.of(serverAddress());
  }

  /**
   * @param proxies one proxy per address of {@link #serverAddresses()}, in its order
   * @return the backend URI with each server replaced by its proxy; by default {@link
   *     #uriVia(InetSocketAddress)} of the one proxy
   */
  default String uriVia(java.util.List<InetSocketAddress> proxies) {
    if (proxies.size() != 1) {
      throw new UnsupportedOperationException("uriVia");
    }
    return uriVia(proxies.get(0));
  }

  /** Kills the leader (or primary) of a replicated server, leaving a majority running. */
  default void killLeader() {
    throw new UnsupportedOperationException("killLeader");
  }

  /**
   * Brings back what {@link #killLeader()} killed, on the same address (it rejoins as a follower or
   * replica of the new leader), and waits until the set is whole again, so that the failover can
   * run once more: the fault comparison runs it several times (FAULTS.md 7, in rounds).
   */
  default void restoreLeader() {
    throw new UnsupportedOperationException("restoreLeader");
  }

  /**
   * Kills a majority of the servers of a backend that needs a quorum of them (Redlock's servers, a
   * consensus cluster's members), so that no lock can be taken until {@link #restartMajority()}.
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
      public java.util.List<InetSocketAddress> serverAddresses() {
        return base.serverAddresses();
      }

      @Override
      public String uriVia(java.util.List<InetSocketAddress> proxies) {
        return base.uriVia(proxies);
      }

      @Override
      public void killLeader() {
        base.killLeader();
      }

      @Override
      public void restoreLeader() {
        base.restoreLeader();
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
