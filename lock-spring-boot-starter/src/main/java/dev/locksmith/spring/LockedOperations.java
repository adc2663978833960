package dev.locksmith.spring;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.MethodClassKey;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * The parsed {@link Locked} methods, per method and bean class: parsed once, at startup where
 * possible.
 */
final class LockedOperations {
  private final Map<MethodClassKey, LockedOperation> cache = new ConcurrentHashMap<>();

  static Locked find(Method method, Class<?> targetClass) {
    Method specific =
        targetClass == null ? method : AopUtils.getMostSpecificMethod(method, targetClass);
    Locked a = AnnotatedElementUtils.findMergedAnnotation(specific, Locked.class);
    return a != null || specific == method
        ? a
        : AnnotatedElementUtils.findMergedAnnotation(method, Locked.class);
  }

  /**
   * @return the operation, or null if the method is not {@link Locked}
   * @throws IllegalStateException if the annotation is not valid
   */
  LockedOperation get(Method method, Class<?> targetClass) {
    MethodClassKey k = new MethodClassKey(method, targetClass);
    LockedOperation op = cache.get(k);
    if (op != null) {
      return op;
    }
    Locked a = find(method, targetClass);
    if (a == null) {
      return null;
    }
    Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
    op = LockedOperation.of(specific, targetClass, a);
    cache.putIfAbsent(k, op);
    return op;
  }
}
