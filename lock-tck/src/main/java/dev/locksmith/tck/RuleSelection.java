package dev.locksmith.tck;

import java.lang.reflect.Method;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * For a developer working on one rule group: {@code -Dlocksmith.tck.rules=20,21} (a comma list of
 * rule numbers, or of rules such as {@code 20.6}) runs only those rules of the kit against a
 * backend, and disables the others with a reason that names the property. Without the property (as
 * in CI) every rule runs.
 */
final class RuleSelection implements ExecutionCondition {
  static final String PROPERTY = "locksmith.tck.rules";
  private static final Pattern RULE = Pattern.compile("rule(\\d+)_(\\d+)_.*");

  @Override
  public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
    String wanted = System.getProperty(PROPERTY, "").trim();
    if (wanted.isEmpty()) {
      return ConditionEvaluationResult.enabled("every rule runs");
    }
    Set<String> selected =
        Stream.of(wanted.split(","))
            .map(String::trim)
            .filter(s -> !s.isEmpty())
            .collect(Collectors.toSet());
    Optional<Method> method = context.getTestMethod();
    if (method.isEmpty()) {
      return ConditionEvaluationResult.enabled("a group: its rules decide");
    }
    Matcher m = RULE.matcher(method.get().getName());
    if (!m.matches()) {
      return ConditionEvaluationResult.enabled("not a numbered rule");
    }
    if (selected.contains(m.group(1)) || selected.contains(m.group(1) + "." + m.group(2))) {
      return ConditionEvaluationResult.enabled("selected by " + PROPERTY);
    }
    return ConditionEvaluationResult.disabled(
        "not among -D" + PROPERTY + "=" + wanted + " (unset runs every rule)");
  }
}
