package dev.locksmith.spi;

/**
 * Implemented by every client that {@link dev.locksmith.Locks#connect(String)} returns, for fault
 * tests: {@code ((Abandonable) client).abandon()} makes the client vanish as a crash would. It
 * stops renewing and drops its connections without releasing anything, so the server frees the
 * locks only when their leases or sessions run out. The client is closed afterwards.
 */
public interface Abandonable {

  /** Stops the client without releasing its locks. */
  void abandon();
}
