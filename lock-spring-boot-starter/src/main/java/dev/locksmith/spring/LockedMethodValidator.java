package dev.locksmith.spring;

import java.lang.reflect.Method;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Parses every {@link Locked} method of every bean when the bean is created, so a bad annotation
 * fails the application's start, naming the method, instead of the first call.
 */
final class LockedMethodValidator implements BeanPostProcessor {
  private final LockedOperations operations;
  private final Environment env;

  LockedMethodValidator(LockedOperations operations, Environment env) {
    this.operations = operations;
    this.env = env;
  }

  @Override
  public Object postProcessBeforeInitialization(Object bean, String beanName) {
    Class<?> type = ClassUtils.getUserClass(bean);
    if (!AnnotationUtils.isCandidateClass(type, Locked.class)) {
      return bean;
    }
    for (Method m :
        ReflectionUtils.getUniqueDeclaredMethods(type, ReflectionUtils.USER_DECLARED_METHODS)) {
      if (LockedOperations.find(m, type) != null) {
        LockedOperation op =
            operations.get(m, type); // throws, naming the method, when the annotation is not valid
        if (!op.client.isEmpty()
            && !env.containsProperty("locksmith.clients." + op.client + ".uri")) {
          throw new IllegalStateException(
              "@Locked on "
                  + op.where
                  + " is not valid: `client` was '"
                  + op.client
                  + "' but no client has that name; declare it with locksmith.clients."
                  + op.client
                  + ".uri");
        }
      }
    }
    return bean;
  }
}
