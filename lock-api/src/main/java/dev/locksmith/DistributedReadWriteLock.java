package dev.locksmith;

/**
 * A named read-write lock of one {@link LockClient}: many readers at once, or one writer. Each side
 * is a {@link DistributedLock} whose leases are leased, renewed, owner-checked and fenced like a
 * lock's. Made by {@link LockClient#readWriteLock(String)}; cheap and thread-safe.
 *
 * <pre>{@code
 * DistributedReadWriteLock prices = client.readWriteLock("prices");
 * try (Lease read = prices.readLock().acquire(Duration.ofSeconds(5))) {
 *   show(loadPrices());
 * }
 * try (Lease write = prices.writeLock().acquire(Duration.ofSeconds(5))) {
 *   storePrices(fetchPrices(), write.fencingToken());
 * }
 * }</pre>
 *
 * <p><b>Guarantees</b> (where the backend declares {@link Guarantees.Feature#READ_WRITE_LOCKS}):
 *
 * <ul>
 *   <li>A write lease is exclusive of every other lease, read or write, of every client; read
 *       leases share the lock with each other.
 *   <li>Writers are preferred: once a writer waits, no new reader is granted until that writer has
 *       had the lock or given up, so a steady stream of readers never starves a writer. Backends
 *       that queue every waiter in order (ZooKeeper, etcd) grant in arrival order instead: a reader
 *       waits only for the writers ahead of it. Readers can wait behind a steady stream of writers.
 *   <li>Fencing tokens come from one counter per read-write lock: a write lease's token is above
 *       every earlier lease's, and a read lease's above every earlier write lease's.
 *   <li>Neither upgrading nor downgrading: a thread that holds one side through this client and
 *       asks for the other gets {@link IllegalStateException} at once from a waiting acquire (it
 *       would wait for itself), and an empty answer from {@code tryAcquire()} or a zero timeout.
 *       Release the side held first. Each side is reentrant per thread as {@link
 *       LockOptions#reentrant()} says.
 *   <li>An exclusive lock, a semaphore and a read-write lock of the same name are different
 *       resources.
 *   <li>{@link DistributedLock#state()} of either side is {@link LockState#unknown()}; {@link
 *       Lease#extend} and {@link Lease#releaseAfter} are for exclusive locks only.
 * </ul>
 */
public interface DistributedReadWriteLock {

  /**
   * @return the read-write lock's name
   */
  String name();

  /**
   * @return the shared side: its leases coexist with each other, never with a write lease
   */
  DistributedLock readLock();

  /**
   * @return the exclusive side: its lease excludes every other lease of this read-write lock
   */
  DistributedLock writeLock();
}
