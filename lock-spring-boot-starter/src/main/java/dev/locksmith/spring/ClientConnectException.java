package dev.locksmith.spring;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockException;

/**
 * A client the starter makes could not reach its lock server at start. Names the property that set
 * the URI and the URI with secrets redacted, so {@link LocksmithFailureAnalyzer} can say what to
 * check; its cause is the backend's {@link BackendUnavailableException}.
 */
final class ClientConnectException extends LockException {
  private static final long serialVersionUID = 1L;

  private final String property;
  private final String redactedUri;

  /**
   * @param property the property that set the URI, such as {@code locksmith.uri}
   * @param redactedUri the URI, secrets redacted
   * @param cause what the backend reported
   */
  ClientConnectException(String property, String redactedUri, BackendUnavailableException cause) {
    super(
        "Locksmith could not connect to the lock server at "
            + redactedUri
            + " (`"
            + property
            + "`): "
            + cause.getMessage(),
        cause);
    this.property = property;
    this.redactedUri = redactedUri;
  }

  /**
   * @return the property that set the URI, such as {@code locksmith.clients.orders.uri}
   */
  String property() {
    return property;
  }

  /**
   * @return the URI, secrets redacted
   */
  String redactedUri() {
    return redactedUri;
  }
}
