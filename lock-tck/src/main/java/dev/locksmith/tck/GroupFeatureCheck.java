package dev.locksmith.tck;

import java.lang.reflect.Method;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.InvocationInterceptor;
import org.junit.jupiter.api.extension.ReflectiveInvocationContext;

/**
 * Asks for the feature of a rule's group ({@link RequiresFeature} on the interface that declares
 * the rule) as the rule's first step, within the rule's own invocation: a backend without it skips
 * the rule with the same reason, and a failure of the check is worded by {@link RuleFailureWording}
 * as a failure of the rule, as when each rule asked for it itself.
 */
final class GroupFeatureCheck implements InvocationInterceptor {
  private static final Pattern RULE = Pattern.compile("rule(\\d+)_(\\d+)_.*");

  @Override
  public void interceptTestMethod(
      Invocation<Void> invocation,
      ReflectiveInvocationContext<Method> invocationContext,
      ExtensionContext extensionContext)
      throws Throwable {
    Method rule = invocationContext.getExecutable();
    RequiresFeature group = rule.getDeclaringClass().getAnnotation(RequiresFeature.class);
    Object target = invocationContext.getTarget().orElse(null);
    if (group != null && target instanceof KitRules rules) {
      Matcher m = RULE.matcher(rule.getName());
      if (!m.matches()) {
        throw new IllegalStateException(
            "a rule's method name starts with rule<N>_<M>_, not " + rule.getName());
      }
      try {
        rules.requireFeature(group.value(), m.group(1) + "." + m.group(2));
      } catch (Throwable e) {
        invocation.skip();
        throw e;
      }
    }
    invocation.proceed();
  }
}
