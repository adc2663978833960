package dev.locksmith.spring;

import io.micrometer.observation.ObservationRegistry;
import org.springframework.beans.factory.BeanFactory;

/** Kept apart so the starter loads no Micrometer class when Micrometer is absent. */
final class ObservationSupport {
  private ObservationSupport() {}

  static LockObserver observer(BeanFactory beans, String scheme, String client) {
    ObservationRegistry registry = beans.getBeanProvider(ObservationRegistry.class).getIfUnique();
    return registry == null || registry.isNoop()
        ? LockObserver.PLAIN
        : new ObservingLockObserver(registry, scheme, client);
  }
}
