package dev.locksmith.spring;

import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.LockEvents;
import dev.locksmith.Locks;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockUri;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.core.type.AnnotationMetadata;
import org.springframework.util.ClassUtils;

/**
 * Spring Boot auto-configuration: one {@link LockClient} from {@code locksmith.*} (unless the
 * application defines its own), closed on shutdown; {@link LockTemplate}; the {@link Locked}
 * advice; Micrometer meters when a {@code MeterRegistry} bean and {@code lock-micrometer} are
 * present.
 */
@AutoConfiguration
@ConditionalOnClass(LockClient.class)
@EnableConfigurationProperties(LocksmithProperties.class)
@Import(LocksmithAutoConfiguration.ProxyRegistrar.class)
public class LocksmithAutoConfiguration {
  private static final Set<String> CORE = Set.of("uri", "lease", "renew", "reentrant", "recheck");
  private static final Pattern NAMED = Pattern.compile("`([A-Za-z0-9_.-]+)`");

  /** Creates the auto-configuration; Spring does. */
  public LocksmithAutoConfiguration() {}

  /**
   * @param properties {@code locksmith.*}
   * @param events the application's own {@link LockEvents} bean, if it has exactly one
   * @param beans for the optional {@code MeterRegistry}
   * @return the client; closed with the context
   * @throws IllegalStateException naming every bad {@code locksmith.*} property, secrets redacted
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  public LockClient lockClient(LocksmithProperties properties, ObjectProvider<LockEvents> events, BeanFactory beans) {
    LockConfig config = config(properties, events.getIfUnique(() -> LockEvents.NONE), beans,
        beans.getBeanProvider(HeldLeaseTracker.class).getIfUnique());
    try {
      return Locks.connect(config);
    } catch (LockConfigurationException e) {
      throw new IllegalStateException("Locksmith could not connect with locksmith.uri=" + LockUri.redact(properties.getUri())
          + ": " + prefixed(e.getMessage()), e);
    }
  }

  static LockConfig config(LocksmithProperties p, LockEvents events, BeanFactory beans, HeldLeaseTracker tracker) {
    List<String> problems = new ArrayList<>();
    if (p.getUri() == null || p.getUri().isBlank()) {
      problems.add("`locksmith.uri` was empty but it must be a lock URI such as redis://localhost:6379 or local:");
    }
    String name = p.getClientName();
    if (name == null || name.isBlank()) {
      problems.add("`locksmith.client-name` was '" + name + "' but it must be a name for the client, such as orders");
    }
    if (!problems.isEmpty()) {
      throw new IllegalStateException("Invalid Locksmith settings: " + String.join("; ", problems));
    }
    LockConfig.Builder b = LockConfig.builder().uri(p.getUri());
    for (Map.Entry<String, String> o : p.getOptions().entrySet()) {
      b.option(o.getKey(), o.getValue() == null ? "" : o.getValue());
    }
    if (p.getLease() != null) {
      b.option("lease", Durations.format(p.getLease()));
    }
    if (p.getRenew() != null) {
      b.option("renew", p.getRenew().toString());
    }
    if (p.getReentrant() != null) {
      b.option("reentrant", p.getReentrant().toString());
    }
    if (p.getRecheck() != null) {
      b.option("recheck", Durations.format(p.getRecheck()));
    }
    LockConfig plain;
    try {
      plain = b.build();
    } catch (LockConfigurationException e) {
      throw new IllegalStateException("Invalid Locksmith settings: " + prefixed(e.getMessage()), e);
    }
    if (p.getMetrics().isEnabled() && ClassUtils.isPresent("io.micrometer.core.instrument.MeterRegistry", null)
        && ClassUtils.isPresent("dev.locksmith.micrometer.LockMetrics", null)) {
      events = MetricsSupport.withMetrics(events, beans, plain.uri().scheme(), name, p.getMetrics().isLockNameTag());
    }
    if (tracker != null) {
      events = tracker.then(events);
    }
    return b.events(events).build();
  }

  /** Names settings as the application writes them: `lease` becomes `locksmith.lease`, a backend option `locksmith.options.x`. */
  static String prefixed(String message) {
    Matcher m = NAMED.matcher(message);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      String key = m.group(1);
      String named = key.startsWith("locksmith.") ? key : CORE.contains(key) ? "locksmith." + key : "locksmith.options." + key;
      m.appendReplacement(out, Matcher.quoteReplacement("`" + named + "`"));
    }
    m.appendTail(out);
    return out.toString();
  }

  /**
   * @param client the lock client
   * @return the programmatic way to run code under a lock
   */
  @Bean
  @ConditionalOnMissingBean
  public LockTemplate lockTemplate(LockClient client, BeanFactory beans, LocksmithProperties properties) {
    return new LockTemplate(client, observer(beans, client, properties.getClientName()));
  }

  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static LockedOperations locksmithLockedOperations() {
    return new LockedOperations();
  }

  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static LockedMethodValidator locksmithLockedMethodValidator(LockedOperations operations) {
    return new LockedMethodValidator(operations);
  }

  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static LockedAdvisor locksmithLockedAdvisor(LockedOperations operations, ObjectProvider<LockClient> client,
      BeanFactory beans, org.springframework.core.env.Environment env) {
    // read from the Environment: the advisor is made before @ConfigurationProperties beans can be bound
    int order = env.getProperty("locksmith.annotation.order", Integer.class, LocksmithProperties.DEFAULT_ORDER);
    String clientName = env.getProperty("locksmith.client-name", "default");
    return new LockedAdvisor(new LockedInterceptor(operations, client, new BeanFactoryResolver(beans),
        c -> observer(beans, c, clientName)), order);
  }

  /** Observations of acquire and hold when Micrometer's observation API, lock-micrometer and an ObservationRegistry bean are present. */
  static LockObserver observer(BeanFactory beans, LockClient client, String clientName) {
    if (!ClassUtils.isPresent("io.micrometer.observation.ObservationRegistry", null)
        || !ClassUtils.isPresent("dev.locksmith.micrometer.LockObservations", null)) {
      return LockObserver.PLAIN;
    }
    return ObservationSupport.observer(beans, client.config().uri().scheme(), clientName);
  }

  /** The actuator endpoint listing held leases, when Spring Boot's actuator is present. */
  @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
  static class EndpointConfiguration {
    @Bean
    @ConditionalOnMissingBean
    HeldLeaseTracker locksmithHeldLeaseTracker() {
      return new HeldLeaseTracker();
    }

    @Bean
    @ConditionalOnMissingBean
    LocksmithEndpoint locksmithEndpoint(LockClient client, HeldLeaseTracker tracker) {
      return new LocksmithEndpoint(client, tracker);
    }
  }

  /** The health indicator "locksmith", on Spring Boot 4's health module. */
  @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  static class HealthConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "locksmithHealthIndicator")
    LocksmithHealthIndicator locksmithHealthIndicator(LockClient client) {
      return new LocksmithHealthIndicator(client);
    }
  }

  /** Makes sure an auto-proxy creator exists and proxies classes, as Spring Boot's own AOP setup does. */
  static final class ProxyRegistrar implements ImportBeanDefinitionRegistrar {
    @Override
    public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
      AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
      AopConfigUtils.forceAutoProxyCreatorToUseClassProxying(registry);
    }
  }
}
