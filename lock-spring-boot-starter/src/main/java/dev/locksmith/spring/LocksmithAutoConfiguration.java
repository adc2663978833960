package dev.locksmith.spring;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.LockEvents;
import dev.locksmith.Locks;
import dev.locksmith.spi.Durations;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.beans.factory.NoUniqueBeanDefinitionException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.AutowireCapableBeanFactory;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.beans.factory.config.NamedBeanHolder;
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
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;
import org.springframework.util.ClassUtils;

/**
 * Spring Boot auto-configuration: one {@link LockClient} from {@code locksmith.*} (unless the
 * application defines its own), closed on shutdown; {@link LockTemplate}; the {@link Locked}
 * advice; Micrometer meters when a {@code MeterRegistry} bean and {@code lock-micrometer} are
 * present. A {@code locksmith.*} property that is not one of {@link LocksmithProperties}' fails the
 * start, as does a bad value; each client the starter connects is logged at INFO with its scheme
 * and redacted URI.
 */
@AutoConfiguration
@ConditionalOnClass(LockClient.class)
@EnableConfigurationProperties(LocksmithProperties.class)
@Import(LocksmithAutoConfiguration.ProxyRegistrar.class)
public class LocksmithAutoConfiguration {
  private static final Logger LOG = LoggerFactory.getLogger(LocksmithAutoConfiguration.class);
  private static final Set<String> CORE =
      Set.of("uri", "lease", "renew", "reentrant", "recheck", "fencing-floor", "application");
  private static final Pattern NAMED = Pattern.compile("`([A-Za-z0-9_.-]+)`");

  /** Creates the auto-configuration; Spring does. */
  public LocksmithAutoConfiguration() {}

  /**
   * @param properties {@code locksmith.*}
   * @param events the application's own {@link LockEvents} bean, if it has exactly one
   * @param beans for the optional {@code MeterRegistry}
   * @return the client; closed with the context
   * @throws LockConfigurationException naming every bad {@code locksmith.*} property, secrets
   *     redacted
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  public LockClient lockClient(
      LocksmithProperties properties, ObjectProvider<LockEvents> events, BeanFactory beans) {
    Settings s =
        new Settings(
            "locksmith.",
            properties.getUri(),
            properties.getLease(),
            properties.getRenew(),
            properties.getReentrant(),
            properties.getRecheck(),
            properties.getFencingFloor(),
            properties.getOptions(),
            properties.getClientName());
    HeldLeaseTracker tracker = beans.getBeanProvider(HeldLeaseTracker.class).getIfUnique();
    LockClient client =
        properties.getJdbc().isUseApplicationDatasource()
            ? overApplicationDataSource(
                s, properties, events.getIfUnique(() -> LockEvents.NONE), beans, tracker)
            : connect(s, properties, events.getIfUnique(() -> LockEvents.NONE), beans, tracker);
    return tracker == null ? client : tracker.track(client);
  }

  /**
   * {@code locksmith.jdbc.use-application-datasource=true}: the default client on the application's
   * DataSource bean.
   */
  private static LockClient overApplicationDataSource(
      Settings s,
      LocksmithProperties p,
      LockEvents events,
      BeanFactory beans,
      HeldLeaseTracker tracker) {
    String property = "locksmith.jdbc.use-application-datasource";
    List<String> problems = new ArrayList<>();
    if (s.uri() != null && !s.uri().isBlank() && !"local:".equals(s.uri().trim())) {
      problems.add(
          "`locksmith.uri` is set but `"
              + property
              + "` is true, which locks on the application's DataSource"
              + " instead of a URI: remove `locksmith.uri`, or set `"
              + property
              + "` to false");
    }
    if (!ClassUtils.isPresent(
        "dev.locksmith.jdbc.JdbcLocks", LocksmithAutoConfiguration.class.getClassLoader())) {
      problems.add(
          "`"
              + property
              + "` is true but lock-jdbc is not on the class path: add the dependency"
              + " dev.locksmith:lock-jdbc, or set `"
              + property
              + "` to false");
    }
    if (s.clientName() == null || s.clientName().isBlank()) {
      problems.add(
          "`locksmith.client-name` was '"
              + s.clientName()
              + "' but it must be a name for the client, such as orders");
    }
    if (!problems.isEmpty()) {
      throw new LockConfigurationException(problems);
    }
    NamedBeanHolder<javax.sql.DataSource> dataSource;
    try {
      dataSource =
          ((AutowireCapableBeanFactory) beans).resolveNamedBean(javax.sql.DataSource.class);
    } catch (NoUniqueBeanDefinitionException e) {
      throw new LockConfigurationException(
          List.of(
              "`"
                  + property
                  + "` is true but the application has "
                  + e.getNumberOfBeansFound()
                  + " DataSource beans "
                  + e.getBeanNamesFound()
                  + " and none is @Primary:"
                  + " mark the one to lock on @Primary, or set `"
                  + property
                  + "` to false and `locksmith.uri` to a jdbc: URI"));
    } catch (NoSuchBeanDefinitionException e) {
      throw new LockConfigurationException(
          List.of(
              "`"
                  + property
                  + "` is true but the application has no DataSource bean: add"
                  + " spring-boot-starter-jdbc with spring.datasource.url (or define a DataSource"
                  + " bean), or set `"
                  + property
                  + "` to false and `locksmith.uri` to a jdbc: URI"));
    }
    if (beans instanceof ConfigurableBeanFactory configurable) {
      // the client releases its leases when the context closes: close it before the pool
      configurable.registerDependentBean(dataSource.getBeanName(), "lockClient");
    }
    Map<String, String> settings = new java.util.LinkedHashMap<>();
    s.options().forEach((k, v) -> settings.put(k, v == null ? "" : v));
    if (s.lease() != null) {
      settings.put("lease", Durations.format(s.lease()));
    }
    if (s.renew() != null) {
      settings.put("renew", s.renew().toString());
    }
    if (s.reentrant() != null) {
      settings.put("reentrant", s.reentrant().toString());
    }
    if (s.recheck() != null) {
      settings.put("recheck", Durations.format(s.recheck()));
    }
    if (s.fencingFloor() != null) {
      settings.put("fencing-floor", s.fencingFloor().toString());
    }
    String app = application(s, p, beans);
    if (app != null) {
      settings.put("application", app);
    }
    LockClient client;
    try {
      client =
          JdbcSupport.connect(
              dataSource.getBeanInstance(),
              settings,
              scheme -> events(events, p, beans, scheme, s.clientName(), tracker));
    } catch (LockConfigurationException e) {
      throw prefixed(s.prefix(), e);
    } catch (BackendUnavailableException e) {
      throw new ClientConnectException(
          property, "the DataSource bean '" + dataSource.getBeanName() + "'", e);
    }
    LOG.info(
        "Locksmith client '"
            + s.clientName()
            + "' connected to the "
            + client.config().uri().scheme()
            + " backend on the application's DataSource bean '"
            + dataSource.getBeanName()
            + "' ("
            + property
            + ")");
    return client;
  }

  /**
   * @param properties {@code locksmith.clients.*}
   * @param events the application's own {@link LockEvents} bean, if it has exactly one
   * @param beans for the optional {@code MeterRegistry}
   * @return the named clients (none unless declared); each closed with the context
   * @throws LockConfigurationException naming every bad property, secrets redacted
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  public LockClients lockClients(
      LocksmithProperties properties, ObjectProvider<LockEvents> events, BeanFactory beans) {
    java.util.Map<String, LockClient> clients = new java.util.LinkedHashMap<>();
    try {
      for (Map.Entry<String, LocksmithProperties.Client> e : properties.getClients().entrySet()) {
        LocksmithProperties.Client c = e.getValue();
        Settings s =
            new Settings(
                "locksmith.clients." + e.getKey() + ".",
                c.getUri(),
                c.getLease(),
                c.getRenew(),
                c.getReentrant(),
                c.getRecheck(),
                c.getFencingFloor(),
                c.getOptions(),
                e.getKey());
        clients.put(
            e.getKey(),
            connect(s, properties, events.getIfUnique(() -> LockEvents.NONE), beans, null));
      }
    } catch (RuntimeException e) {
      clients.values().forEach(LockClient::close);
      throw e;
    }
    return new LockClients(clients);
  }

  /** One client's settings, from {@code locksmith.*} or {@code locksmith.clients.<name>.*}. */
  record Settings(
      String prefix,
      String uri,
      java.time.Duration lease,
      Boolean renew,
      Boolean reentrant,
      java.time.Duration recheck,
      Long fencingFloor,
      Map<String, String> options,
      String clientName) {}

  private static LockClient connect(
      Settings s,
      LocksmithProperties p,
      LockEvents events,
      BeanFactory beans,
      HeldLeaseTracker tracker) {
    LockConfig config = config(s, p, events, beans, tracker);
    LockClient client;
    try {
      client = Locks.connect(config);
    } catch (LockConfigurationException e) {
      throw prefixed(s.prefix(), e);
    } catch (BackendUnavailableException e) {
      throw new ClientConnectException(s.prefix() + "uri", config.uri().toString(), e);
    }
    LOG.info(connected(s, client.config()));
    return client;
  }

  /**
   * @return the INFO line of a client the starter connected: its name, scheme and redacted URI, and
   *     the property that set it
   */
  static String connected(Settings s, LockConfig config) {
    String scheme = config.uri().scheme();
    return "Locksmith client '"
        + s.clientName()
        + "' connected to the "
        + scheme
        + " backend at "
        + config.uri()
        + " ("
        + s.prefix()
        + "uri)"
        + ("local".equals(scheme)
            ? "; local: locks are in-process, not shared with other JVMs"
            : "");
  }

  /**
   * @return the same problems, each naming its property as the application writes it; caused by
   *     {@code e}
   */
  private static LockConfigurationException prefixed(String prefix, LockConfigurationException e) {
    LockConfigurationException named =
        new LockConfigurationException(
            e.problems().stream().map(problem -> prefixed(prefix, problem)).toList());
    named.initCause(e);
    return named;
  }

  static LockConfig config(
      Settings s,
      LocksmithProperties p,
      LockEvents events,
      BeanFactory beans,
      HeldLeaseTracker tracker) {
    List<String> problems = new ArrayList<>();
    if (s.uri() == null || s.uri().isBlank()) {
      problems.add(
          "`"
              + s.prefix()
              + "uri` was "
              + (s.uri() == null ? "missing" : "empty")
              + " but it must be a lock URI such as redis://localhost:6379 or local:");
    }
    String name = s.clientName();
    if (name == null || name.isBlank()) {
      problems.add(
          "`locksmith.client-name` was '"
              + name
              + "' but it must be a name for the client, such as orders");
    }
    if (!problems.isEmpty()) {
      throw new LockConfigurationException(problems);
    }
    LockConfig.Builder b = LockConfig.builder().uri(s.uri());
    for (Map.Entry<String, String> o : s.options().entrySet()) {
      b.option(o.getKey(), o.getValue() == null ? "" : o.getValue());
    }
    if (s.lease() != null) {
      b.option("lease", Durations.format(s.lease()));
    }
    if (s.renew() != null) {
      b.option("renew", s.renew().toString());
    }
    if (s.reentrant() != null) {
      b.option("reentrant", s.reentrant().toString());
    }
    if (s.recheck() != null) {
      b.option("recheck", Durations.format(s.recheck()));
    }
    if (s.fencingFloor() != null) {
      b.option("fencing-floor", s.fencingFloor().toString());
    }
    String app = application(s, p, beans);
    if (app != null) {
      b.option("application", app);
    }
    LockConfig plain;
    try {
      plain = b.build();
    } catch (LockConfigurationException e) {
      throw prefixed(s.prefix(), e);
    }
    return b.events(events(events, p, beans, plain.uri().scheme(), name, tracker)).build();
  }

  /**
   * The application name a client writes into its leases: the client's own {@code application}
   * option or URI setting if it has one (null: leave it), else {@code locksmith.application}, else
   * {@code spring.application.name} with every character a name may not hold written as {@code -}.
   */
  static String application(Settings s, LocksmithProperties p, BeanFactory beans) {
    if (s.options().containsKey("application")
        || (s.uri() != null && s.uri().matches("(?s)[^?]*\\?(.*&)?application=.*"))) {
      return null;
    }
    if (p.getApplication() != null) {
      try {
        LockConfig.builder().application(p.getApplication());
      } catch (IllegalArgumentException e) {
        throw new LockConfigurationException(
            List.of(e.getMessage().replace("`application`", "`locksmith.application`")));
      }
      return p.getApplication();
    }
    Environment env = beans.getBeanProvider(Environment.class).getIfAvailable();
    String name = env == null ? null : env.getProperty("spring.application.name");
    if (name == null || name.isBlank()) {
      return null;
    }
    String clean = name.trim().replaceAll("[^A-Za-z0-9._-]", "-");
    return clean.substring(0, Math.min(clean.length(), 40));
  }

  /**
   * @return the client's listener: the held-lease tracker, then the meters, then the application's
   *     own
   */
  private static LockEvents events(
      LockEvents events,
      LocksmithProperties p,
      BeanFactory beans,
      String scheme,
      String name,
      HeldLeaseTracker tracker) {
    if (p.getMetrics().isEnabled()
        && ClassUtils.isPresent("io.micrometer.core.instrument.MeterRegistry", null)
        && ClassUtils.isPresent("dev.locksmith.micrometer.LockMetrics", null)) {
      events =
          MetricsSupport.withMetrics(events, beans, scheme, name, p.getMetrics().isLockNameTag());
    }
    if (tracker != null) {
      events = tracker.then(events);
    }
    return events;
  }

  /**
   * Names settings as the application writes them: `lease` becomes `locksmith.lease`, a backend
   * option `locksmith.options.x`.
   */
  static String prefixed(String prefix, String message) {
    Matcher m = NAMED.matcher(message);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      String key = m.group(1);
      String named =
          key.startsWith("locksmith.")
              ? key
              : CORE.contains(key) ? prefix + key : prefix + "options." + key;
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
  public LockTemplate lockTemplate(
      LockClient client, BeanFactory beans, LocksmithProperties properties) {
    return new LockTemplate(client, observer(beans, client, properties.getClientName()));
  }

  /**
   * Checks every {@code locksmith.*} property against those {@link LocksmithProperties} binds,
   * before any bean is made: a misspelt {@code locksmith.url} must not start the application on
   * {@code local:}.
   */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static BeanFactoryPostProcessor locksmithPropertiesCheck(
      org.springframework.core.env.Environment env) {
    return beanFactory -> LocksmithPropertiesCheck.check(env);
  }

  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static LockedOperations locksmithLockedOperations() {
    return new LockedOperations();
  }

  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static LockedMethodValidator locksmithLockedMethodValidator(
      LockedOperations operations, org.springframework.core.env.Environment env) {
    return new LockedMethodValidator(operations, env);
  }

  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  static LockedAdvisor locksmithLockedAdvisor(
      LockedOperations operations,
      ObjectProvider<LockClient> client,
      BeanFactory beans,
      org.springframework.core.env.Environment env) {
    // read from the Environment: the advisor is made before @ConfigurationProperties beans can be
    // bound
    int order =
        env.getProperty(
            "locksmith.annotation.order", Integer.class, LocksmithProperties.DEFAULT_ORDER);
    String clientName = env.getProperty("locksmith.client-name", "default");
    return new LockedAdvisor(
        new LockedInterceptor(
            operations,
            client,
            beans.getBeanProvider(LockClients.class),
            new BeanFactoryResolver(beans),
            (c, name) -> observer(beans, c, name == null ? clientName : name)),
        order);
  }

  /**
   * Observations of acquire and hold when Micrometer's observation API, lock-micrometer and an
   * ObservationRegistry bean are present.
   */
  static LockObserver observer(BeanFactory beans, LockClient client, String clientName) {
    if (!ClassUtils.isPresent("io.micrometer.observation.ObservationRegistry", null)
        || !ClassUtils.isPresent("dev.locksmith.micrometer.LockObservations", null)) {
      return LockObserver.PLAIN;
    }
    return ObservationSupport.observer(beans, client.config().uri().scheme(), clientName);
  }

  /**
   * @param properties {@code locksmith.elections}
   * @param client the main client
   * @param clients the named clients
   * @param publisher where leadership events go
   * @return the elections, campaigning while the context runs
   * @throws LockConfigurationException if an election names a client that is not configured
   */
  @Bean
  @ConditionalOnMissingBean
  public LocksmithElections locksmithElections(
      LocksmithProperties properties,
      LockClient client,
      ObjectProvider<LockClients> clients,
      org.springframework.context.ApplicationEventPublisher publisher) {
    Map<String, LockClient> byElection = new java.util.LinkedHashMap<>();
    Map<String, String> identities = new java.util.LinkedHashMap<>();
    List<String> problems = new java.util.ArrayList<>();
    for (Map.Entry<String, LocksmithProperties.Election> e : properties.getElections().entrySet()) {
      LocksmithProperties.Election election = e.getValue();
      if (!election.isEnabled()) {
        continue;
      }
      if (election.getIdentity() != null) {
        try {
          client.leaderLatch(e.getKey()).identity(election.getIdentity()); // checks it
          identities.put(e.getKey(), election.getIdentity());
        } catch (IllegalArgumentException bad) {
          problems.add("`locksmith.elections." + e.getKey() + ".identity`: " + bad.getMessage());
        }
      }
      String named = election.getClient();
      if (named == null || named.isBlank()) {
        byElection.put(e.getKey(), client);
        continue;
      }
      LockClients all = clients.getIfAvailable();
      if (all == null || !all.names().contains(named)) {
        problems.add(
            "`locksmith.elections."
                + e.getKey()
                + ".client` was '"
                + named
                + "' but it must name a client of locksmith.clients: "
                + (all == null ? "[]" : all.names())
                + " (leave it unset for the main client)");
        continue;
      }
      byElection.put(e.getKey(), all.get(named));
    }
    if (!problems.isEmpty()) {
      throw new LockConfigurationException(problems);
    }
    return new LocksmithElections(byElection, identities, publisher);
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
    LocksmithEndpoint locksmithEndpoint(
        LockClient client, HeldLeaseTracker tracker, ObjectProvider<LocksmithElections> elections) {
      return new LocksmithEndpoint(client, tracker, elections.getIfAvailable());
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

  /**
   * Makes sure an auto-proxy creator exists and proxies classes, as Spring Boot's own AOP setup
   * does.
   */
  static final class ProxyRegistrar implements ImportBeanDefinitionRegistrar {
    @Override
    public void registerBeanDefinitions(
        AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
      AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
      AopConfigUtils.forceAutoProxyCreatorToUseClassProxying(registry);
    }
  }
}
