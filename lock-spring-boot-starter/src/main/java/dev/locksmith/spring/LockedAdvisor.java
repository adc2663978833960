package dev.locksmith.spring;

import java.lang.reflect.Method;
import org.aopalliance.aop.Advice;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;

/** Applies {@link LockedInterceptor} to every {@link Locked} method, at the configured order. */
final class LockedAdvisor extends AbstractPointcutAdvisor {
  private static final long serialVersionUID = 1L;

  private final transient LockedInterceptor interceptor;
  private final transient Pointcut pointcut =
      new StaticMethodMatcherPointcut() {
        @Override
        public boolean matches(Method method, Class<?> targetClass) {
          return LockedOperations.find(method, targetClass) != null;
        }
      };

  LockedAdvisor(LockedInterceptor interceptor, int order) {
    this.interceptor = interceptor;
    setOrder(order);
  }

  @Override
  public Pointcut getPointcut() {
    return pointcut;
  }

  @Override
  public Advice getAdvice() {
    return interceptor;
  }
}
