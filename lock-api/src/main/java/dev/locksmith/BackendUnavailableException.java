package dev.locksmith;

/**
 * The lock server could not be reached or refused us: connection refused, timed out, wrong
 * credentials, not the server we expected, no quorum. The message names the endpoint(s) with
 * secrets redacted.
 */
public final class BackendUnavailableException extends LockException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what failed, naming the endpoint(s) with secrets redacted
   */
  public BackendUnavailableException(String message) {
    super(message);
  }

  /**
   * @param message what failed, naming the endpoint(s) with secrets redacted
   * @param cause the underlying failure
   */
  public BackendUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
