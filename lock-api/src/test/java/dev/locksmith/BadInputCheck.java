package dev.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.params.provider.Arguments;

/**
 * The checks every bad-input case of every module makes (lock-api's test-jar carries it to the
 * backends' tests): the call ends within its bound with the exception type the API documents, whose
 * message says each expected part (the parameter, the value or its redaction, what is valid); no
 * test secret, as given or percent-encoded, appears in any message, cause, {@code toString()} or
 * line logged meanwhile (slf4j-simple writes to {@code System.err}, which is captured); no new
 * {@code locksmith-*} or non-daemon thread outlives the call.
 */
public final class BadInputCheck {
  private static final String LOG_LEVEL = "org.slf4j.simpleLogger.log.dev.locksmith";

  /** Distinct secrets, each with a character that ends some part of a URI. */
  public static final List<String> SECRETS =
      List.of("Se/cret1", "p@ss#word?x", "hunter2-Q", "Se:cr@t9", "Se?cret5", "tok3n-Z");

  private BadInputCheck() {}

  /** One bad input: what to run, what it must throw, and what its message must say. */
  public record Case(
      String title, Class<? extends Throwable> type, ThrowingCallable call, String... says) {
    @Override
    public String toString() {
      return title;
    }
  }

  /** Something a case does with a lock, for cases of misuse. */
  public interface LockAction {
    /**
     * @param lock the lock
     * @throws Exception whatever the misuse throws
     */
    void run(DistributedLock lock) throws Exception;
  }

  /**
   * @param uri a lock URI
   * @return a call that connects with it, and closes the client should it connect after all
   */
  public static ThrowingCallable connect(String uri) {
    return () -> Locks.connect(uri).close();
  }

  /**
   * @param title what the case tries, shown as the test's name
   * @param type the exception expected
   * @param call the bad input
   * @param says what the message must contain
   * @return the case as a row of a parameterized test
   */
  public static Arguments bad(
      String title, Class<? extends Throwable> type, ThrowingCallable call, String... says) {
    return Arguments.of(new Case(title, type, call, says));
  }

  /**
   * Runs one case and makes every check.
   *
   * @param c the case
   * @param bound the longest it may take
   */
  public static void check(Case c, Duration bound) {
    Set<Thread> before = Thread.getAllStackTraces().keySet();
    PrintStream err = System.err;
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    System.setErr(new PrintStream(new TeeStream(log, err), true, StandardCharsets.UTF_8));
    // loggers first made during the case log everything, so debug lines are searched for secrets
    // too; those made before keep the level of simplelogger.properties
    String level = System.getProperty(LOG_LEVEL);
    System.setProperty(LOG_LEVEL, "debug");
    Throwable thrown;
    try {
      thrown =
          assertTimeoutPreemptively(
              bound, () -> catchThrowable(c.call()), c.title() + " took too long");
    } finally {
      System.setErr(err);
      if (level == null) {
        System.clearProperty(LOG_LEVEL);
      } else {
        System.setProperty(LOG_LEVEL, level);
      }
    }
    assertThat(thrown).as(c.title()).isInstanceOf(c.type());
    assertThat(thrown)
        .as("a type the API documents")
        .isInstanceOfAny(
            LockException.class,
            IllegalArgumentException.class,
            NullPointerException.class,
            IllegalStateException.class,
            IllegalMonitorStateException.class);
    for (String part : c.says()) {
      assertThat(thrown.getMessage()).as("message of " + c.title()).contains(part);
    }
    assertNoSecret(thrown, log.toString(StandardCharsets.UTF_8));
    assertNoThreadLeft(before);
  }

  /**
   * Every test secret, as given and percent-encoded, is absent from messages, causes, toString()
   * and the log.
   */
  public static void assertNoSecret(Throwable thrown, String log) {
    List<String> shown = new ArrayList<>();
    for (Throwable t = thrown; t != null; t = t.getCause()) {
      shown.add(String.valueOf(t.getMessage()));
      shown.add(t.toString());
      for (Throwable s : t.getSuppressed()) {
        shown.add(s.toString());
      }
    }
    shown.add(log);
    for (String secret : SECRETS) {
      String encoded = java.net.URLEncoder.encode(secret, StandardCharsets.UTF_8);
      for (String text : shown) {
        assertThat(text).doesNotContain(secret).doesNotContain(encoded);
      }
    }
  }

  /**
   * The one thread of the JVM, not of a client: the cleaner of dropped leases, started with the
   * first lease any client hands out and kept for the life of the JVM, by design.
   */
  private static final String JVM_WIDE_THREAD = "locksmith-abandoned-leases";

  /**
   * No thread of a client outlives it: none named locksmith-* (but the JVM-wide cleaner of dropped
   * leases), and no new non-daemon one.
   */
  public static void assertNoThreadLeft(Set<Thread> before) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    List<String> left;
    do {
      left = new ArrayList<>();
      for (Thread t : Thread.getAllStackTraces().keySet()) {
        if (t.isAlive()
            && !before.contains(t)
            && !t.getName().startsWith("junit-")
            && !t.getName().equals(JVM_WIDE_THREAD)
            && (t.getName().startsWith("locksmith-") || !t.isDaemon())) {
          left.add(t.getName());
        }
      }
      if (left.isEmpty()) {
        return;
      }
      Thread.onSpinWait();
    } while (System.nanoTime() < deadline);
    assertThat(left).as("threads left behind").isEmpty();
  }

  /** Writes to the capture and to the real stream, so a failing run still shows its log. */
  static final class TeeStream extends java.io.OutputStream {
    private final java.io.OutputStream a;
    private final java.io.OutputStream b;

    TeeStream(java.io.OutputStream a, java.io.OutputStream b) {
      this.a = a;
      this.b = b;
    }

    @Override
    public void write(int x) throws java.io.IOException {
      a.write(x);
      b.write(x);
    }

    @Override
    public void write(byte[] buf, int off, int len) throws java.io.IOException {
      a.write(buf, off, len);
      b.write(buf, off, len);
    }
  }
}
