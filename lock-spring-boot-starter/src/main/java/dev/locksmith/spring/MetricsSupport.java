package dev.locksmith.spring;

import dev.locksmith.LockEvents;
import dev.locksmith.micrometer.LockMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.BeanFactory;

/** Kept apart so the starter loads no Micrometer class when Micrometer is absent. */
final class MetricsSupport {
  private MetricsSupport() {}

  static LockEvents withMetrics(
      LockEvents events, BeanFactory beans, String scheme, String client, boolean lockNames) {
    MeterRegistry registry = beans.getBeanProvider(MeterRegistry.class).getIfUnique();
    if (registry == null) {
      return events;
    }
    return LockMetrics.builder(registry)
        .backend(scheme)
        .client(client)
        .lockNameTag(lockNames)
        .then(events)
        .build();
  }
}
