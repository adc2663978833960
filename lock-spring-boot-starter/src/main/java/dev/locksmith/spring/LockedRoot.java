package dev.locksmith.spring;

import java.lang.reflect.Method;

/**
 * The root object of a {@link Locked#key()} expression: {@code #root.method}, {@code
 * #root.methodName}, {@code #root.args}, {@code #root.target}, {@code #root.targetClass}.
 */
public final class LockedRoot {
  private final Method method;
  private final Object[] args;
  private final Object target;
  private final Class<?> targetClass;

  LockedRoot(Method method, Object[] args, Object target, Class<?> targetClass) {
    this.method = method;
    this.args = args;
    this.target = target;
    this.targetClass = targetClass;
  }

  /**
   * @return the locked method
   */
  public Method getMethod() {
    return method;
  }

  /**
   * @return the method's name
   */
  public String getMethodName() {
    return method.getName();
  }

  /**
   * @return the call's arguments
   */
  public Object[] getArgs() {
    return args;
  }

  /**
   * @return the bean the method is called on
   */
  public Object getTarget() {
    return target;
  }

  /**
   * @return the bean's class
   */
  public Class<?> getTargetClass() {
    return targetClass;
  }
}
