package dev.locksmith.bench;

/** One holding of a lock by a {@link LockImpl}, released once. */
interface Held {
  void release() throws Exception;
}
