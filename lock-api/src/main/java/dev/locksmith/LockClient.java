package dev.locksmith;

/**
 * A connection to one lock backend, made by {@link Locks#connect(String)}. Thread-safe; share one
 * per application and backend. Closing it releases every lease it holds and stops its
 * background threads.
 *
 * <pre>{@code
 * try (LockClient client = Locks.connect("redis://localhost:6379")) {
 *   try (Lease lease = client.lock("orders:42").acquire(Duration.ofSeconds(10))) {
 *     ...
 *   }
 * }
 * }</pre>
 */
public interface LockClient extends AutoCloseable {

  /**
   * @param name the lock's name: 1 to 255 characters, no control characters; any other Unicode
   *     is allowed and stored as is
   * @return the lock, held with the client's default options
   * @throws NullPointerException if {@code name} is null
   * @throws IllegalArgumentException if {@code name} is empty, too long or has control characters
   * @throws IllegalStateException if the client is closed
   */
  DistributedLock lock(String name);

  /**
   * @param name the lock's name, as for {@link #lock(String)}
   * @param options how this lock is held
   * @return the lock
   * @throws NullPointerException if an argument is null
   * @throws IllegalArgumentException if {@code name} is not valid
   * @throws IllegalStateException if the client is closed
   */
  DistributedLock lock(String name, LockOptions options);

  /** @return what the backend promises, as data */
  Guarantees guarantees();

  /** @return the configuration the client was made from (its URI redacted in {@code toString()}) */
  LockConfig config();

  /**
   * Releases every lease this client holds, withdraws its waiters (they fail with
   * {@link LockException}), and closes the connection. Idempotent.
   */
  @Override
  void close();
}
