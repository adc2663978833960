package dev.locksmith;

/**
 * Root of every exception Locksmith throws on its own account. It is unchecked: a lock that cannot
 * be had is an outcome you handle where it matters, not a signature everyone carries.
 *
 * <p>Argument errors are the JDK's own: {@link NullPointerException} for a null argument and {@link
 * IllegalArgumentException} for a bad value, each naming the parameter. {@link
 * InterruptedException} is never wrapped.
 */
public class LockException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what went wrong, naming the lock or setting involved
   */
  public LockException(String message) {
    super(message);
  }

  /**
   * @param message what went wrong, naming the lock or setting involved
   * @param cause the underlying failure
   */
  public LockException(String message, Throwable cause) {
    super(message, cause);
  }
}
