package dev.locksmith.tck;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.LifecycleMethodExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;
import org.opentest4j.TestAbortedException;

/**
 * Makes every failure of a rule say, in words, which property broke: a failure whose message does
 * not already read "... broken: ..." is reported as "{@code <property> broken: rule N.M:
 * <message>}", the original kept as its cause. Skips pass through unchanged.
 */
final class RuleFailureWording
    implements TestExecutionExceptionHandler, LifecycleMethodExecutionExceptionHandler {
  private static final Pattern RULE = Pattern.compile("rule(\\d+)_(\\d+)_.*");
  private static final Map<String, String> PROPERTIES =
      Map.ofEntries(
          Map.entry("1", "mutual exclusion"),
          Map.entry("2", "ownership"),
          Map.entry("3", "expiry"),
          Map.entry("4", "renewal"),
          Map.entry("5", "fencing"),
          Map.entry("6", "timeouts"),
          Map.entry("7", "interrupts"),
          Map.entry("8", "cancellation"),
          Map.entry("9", "reentrancy"),
          Map.entry("10", "FIFO"),
          Map.entry("11", "notified wake-up"),
          Map.entry("12", "bad input"),
          Map.entry("13", "many locks"),
          Map.entry("14", "loss detection"),
          Map.entry("15", "closing"),
          Map.entry("16", "state reads"),
          Map.entry("17", "lease control"),
          Map.entry("18", "semaphores"),
          Map.entry("19", "read-write locks"));

  /** Errors of the kit's background threads surface after the test: word them the same way. */
  @Override
  public void handleAfterEachMethodExecutionException(ExtensionContext context, Throwable thrown)
      throws Throwable {
    handleTestExecutionException(context, thrown);
  }

  @Override
  public void handleTestExecutionException(ExtensionContext context, Throwable thrown)
      throws Throwable {
    if (thrown instanceof TestAbortedException) {
      throw thrown;
    }
    String message = String.valueOf(thrown.getMessage());
    Matcher m = RULE.matcher(context.getTestMethod().map(Method::getName).orElse(""));
    if (!m.matches() || message.contains(" broken: ") || message.startsWith("broken: ")) {
      throw thrown;
    }
    String property = PROPERTIES.getOrDefault(m.group(1), "rule " + m.group(1));
    String what =
        thrown instanceof AssertionError
            ? message
            : thrown.getClass().getSimpleName()
                + (thrown.getMessage() == null ? "" : ": " + thrown.getMessage());
    AssertionError worded =
        new AssertionError(
            property
                + " broken: rule "
                + m.group(1)
                + "."
                + m.group(2)
                + " ("
                + context.getDisplayName()
                + "): "
                + what,
            thrown);
    worded.setStackTrace(thrown.getStackTrace());
    throw worded;
  }
}
