package dev.locksmith.spi;

import java.util.Objects;

/** The outcome of renewing one lease. */
public final class Renewal {
  private static final Renewal RENEWED = new Renewal(Kind.RENEWED, null, null);

  /** What happened. */
  public enum Kind {
    /** Renewed for another lease, counted from the start of the renewal. */
    RENEWED,
    /** The server no longer has us as the holder. */
    LOST,
    /** The server could not be reached; the core retries until the lease would expire. */
    FAILED
  }

  private final Kind kind;
  private final String detail;
  private final Throwable cause;

  private Renewal(Kind kind, String detail, Throwable cause) {
    this.kind = kind;
    this.detail = detail;
    this.cause = cause;
  }

  /**
   * @return renewed
   */
  public static Renewal renewed() {
    return RENEWED;
  }

  /**
   * @param detail what the server said, such as "key gone" or "owned by another client"
   * @return lost
   */
  public static Renewal lost(String detail) {
    return new Renewal(Kind.LOST, Objects.requireNonNull(detail, "detail"), null);
  }

  /**
   * @param cause why the server could not be reached
   * @return failed, to be retried
   */
  public static Renewal failed(Throwable cause) {
    return new Renewal(Kind.FAILED, String.valueOf(cause), Objects.requireNonNull(cause, "cause"));
  }

  /**
   * @return what happened
   */
  public Kind kind() {
    return kind;
  }

  /**
   * @return the server's answer for {@link Kind#LOST} or {@link Kind#FAILED}
   */
  public String detail() {
    return detail;
  }

  /**
   * @return the failure, for {@link Kind#FAILED}
   */
  public Throwable cause() {
    return cause;
  }

  @Override
  public String toString() {
    return kind == Kind.RENEWED ? "renewed" : kind + "(" + detail + ")";
  }
}
