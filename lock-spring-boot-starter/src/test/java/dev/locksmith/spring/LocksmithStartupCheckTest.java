package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.Banner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.SystemEnvironmentPropertySource;
import org.springframework.core.io.support.SpringFactoriesLoader;

/**
 * A Spring Boot user's first day: misspelt {@code locksmith.*} properties fail the start, each
 * client says at INFO where it connected, and a failed start reads as Spring Boot's "APPLICATION
 * FAILED TO START" report.
 */
@ExtendWith(OutputCaptureExtension.class)
class LocksmithStartupCheckTest {
  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class));

  /** The start's failure and the Locksmith exception in it, which must be there. */
  private static <T extends Throwable> T cause(Throwable failure, Class<T> type) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return type.cast(t);
      }
    }
    throw new AssertionError("no " + type.getSimpleName() + " in " + failure, failure);
  }

  private LockConfigurationException refused(ApplicationContextRunner r, String... properties) {
    LockConfigurationException[] seen = new LockConfigurationException[1];
    r.withPropertyValues(properties)
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              seen[0] = cause(ctx.getStartupFailure(), LockConfigurationException.class);
            });
    return seen[0];
  }

  // ------------------------------------------------------------------ unknown properties

  @Test
  void urlInsteadOfUriFailsTheStartInsteadOfRunningOnLocal() {
    LockConfigurationException e =
        refused(runner, "locksmith.url=redis://admin:hunter2@localhost:1");
    assertThat(e.problems()).hasSize(1);
    assertThat(e.getMessage())
        .contains("`locksmith.url`")
        .contains("did you mean `locksmith.uri`?")
        .as("an unknown property's value may be a secret")
        .doesNotContain("hunter2")
        .doesNotContain("localhost:1");
  }

  @Test
  void aMisspeltBackendOptionIsNamedInFullWithTheOptionMeant() {
    LockConfigurationException e = refused(runner, "locksmith.options.leese=10s");
    assertThat(e.getMessage())
        .contains("`locksmith.options.leese`")
        .contains("did you mean `locksmith.options.lease`?")
        .doesNotContain("10s");
  }

  @Test
  void aMisspeltPropertyOfANamedClientIsNamedInFull() {
    LockConfigurationException e =
        refused(runner, "locksmith.clients.a.uri=local:", "locksmith.clients.a.urii=x");
    assertThat(e.getMessage())
        .contains("`locksmith.clients.a.urii`")
        .contains("did you mean `locksmith.clients.a.uri`?");
    e = refused(runner, "locksmith.clients.a.uri=local:", "locksmith.clients.a.options.renw=false");
    assertThat(e.getMessage())
        .contains("`locksmith.clients.a.options.renw`")
        .contains("did you mean `locksmith.clients.a.options.renew`?");
    e = refused(runner, "locksmith.client.a.uri=local:");
    assertThat(e.getMessage())
        .contains("`locksmith.client.a.uri`")
        .contains("did you mean `locksmith.clients.a.uri`?");
  }

  @Test
  void everyUnknownPropertyIsReportedAtOnceAndFarOffOnesListTheValidProperties() {
    LockConfigurationException e =
        refused(
            runner,
            "locksmith.url=redis://localhost:1",
            "locksmith.colour=blue",
            "locksmith.metrics.enabeld=false",
            "locksmith.provider=com.acme.Provider");
    assertThat(e.problems()).hasSize(4);
    String message = e.getMessage();
    assertThat(message)
        .contains("did you mean `locksmith.uri`?")
        .contains("did you mean `locksmith.metrics.enabled`?")
        .contains("`locksmith.provider`")
        .contains("did you mean `locksmith.options.provider`?")
        .contains("`locksmith.colour`")
        .contains("valid properties are")
        .contains("locksmith.uri")
        .contains("locksmith.client-name")
        .contains("locksmith.options.<key>")
        .contains("locksmith.clients.<name>.uri")
        .contains("locksmith.clients.<name>.options.<key>")
        .contains("locksmith.metrics.lock-name-tag")
        .contains("locksmith.annotation.order");
  }

  @Test
  void aBackendOptionTheSchemeDoesNotHaveListsTheOnesItHas() {
    LockConfigurationException e =
        refused(runner, "locksmith.uri=local:", "locksmith.options.pool-size=4");
    assertThat(e.getMessage())
        .contains("`locksmith.options.pool-size` is not a setting of scheme 'local'")
        .contains("locksmith.options.lease")
        .contains("locksmith.options.renew");
  }

  @Test
  void theFencingFloorIsAddedToEveryTokenOfTheClientAndOfANamedOne() {
    long floor = 1L << 61;
    String space = "local:starter-floor-" + System.nanoTime();
    runner
        .withPropertyValues(
            "locksmith.uri=" + space,
            "locksmith.fencing-floor=" + floor,
            "locksmith.clients.plain.uri=" + space,
            "locksmith.clients.floored.uri=" + space,
            "locksmith.clients.floored.fencing-floor=" + floor)
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              LockClients named = ctx.getBean(LockClients.class);
              LockClient plain = named.get("plain");
              // one holder's token as each client shows it: the floor added by the floored ones
              try (Lease held = plain.lock("floored").tryAcquire().orElseThrow()) {
                long raw = held.fencingToken();
                assertThat(ctx.getBean(LockClient.class).lock("floored").state().fencingToken())
                    .hasValue(raw + floor);
                assertThat(named.get("floored").lock("floored").state().fencingToken())
                    .hasValue(raw + floor);
              }
              try (Lease held = named.get("floored").lock("floored").tryAcquire().orElseThrow()) {
                assertThat(plain.lock("floored").state().fencingToken())
                    .hasValue(held.fencingToken() - floor);
              }
            });
  }

  @Test
  void droppedLeasesIsSetThroughTheOptionsAndMisspeltValuesFailTheStart() {
    runner
        .withPropertyValues(
            "locksmith.uri=local:starter-dropped", "locksmith.options.dropped-leases=trace")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              assertThat(ctx.getBean(LockClient.class).config().droppedLeases())
                  .isEqualTo(dev.locksmith.LockConfig.DroppedLeases.TRACE);
            });
    runner
        .withPropertyValues("locksmith.uri=local:starter-dropped")
        .run(
            ctx ->
                assertThat(ctx.getBean(LockClient.class).config().droppedLeases())
                    .isEqualTo(dev.locksmith.LockConfig.DroppedLeases.RELEASE));
    LockConfigurationException e =
        refused(
            runner,
            "locksmith.uri=local:starter-dropped",
            "locksmith.options.dropped-leases=forever");
    assertThat(e.getMessage()).contains("dropped-leases").contains("forever");
  }

  @Test
  void everyClientWritesSpringApplicationNameIntoItsLeases() {
    String space = "local:starter-app-" + System.nanoTime();
    runner
        .withPropertyValues(
            "spring.application.name=Orders Service",
            "locksmith.uri=" + space,
            "locksmith.clients.named.uri=" + space,
            "locksmith.clients.own.uri=" + space + "?application=own-app")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              LockClient client = ctx.getBean(LockClient.class);
              assertThat(client.config().application()).isEqualTo("Orders-Service");
              LockClients named = ctx.getBean(LockClients.class);
              assertThat(named.get("named").config().application()).isEqualTo("Orders-Service");
              assertThat(named.get("own").config().application()).isEqualTo("own-app");
              try (Lease lease = client.lock("held").tryAcquire().orElseThrow()) {
                assertThat(named.get("named").lock("held").state().holderIdentity())
                    .get()
                    .satisfies(who -> assertThat(who.application()).isEqualTo("Orders-Service"));
              }
            });
  }

  @Test
  void locksmithApplicationWinsOverSpringApplicationName() {
    runner
        .withPropertyValues(
            "spring.application.name=orders",
            "locksmith.uri=local:starter-app-own-" + System.nanoTime(),
            "locksmith.application=billing")
        .run(
            ctx ->
                assertThat(ctx.getBean(LockClient.class).config().application())
                    .isEqualTo("billing"));
    runner
        .withPropertyValues("locksmith.uri=local:starter-app-none-" + System.nanoTime())
        .run(
            ctx ->
                assertThat(ctx.getBean(LockClient.class).config().application())
                    .isNotEqualTo("billing")
                    .isNotEqualTo("orders"));
  }

  @Test
  void aBadApplicationNameFailsTheStartNamingTheProperty() {
    LockConfigurationException e = refused(runner, "locksmith.application=my app");
    assertThat(e.getMessage())
        .contains("`locksmith.application` was 'my app'")
        .contains("1 to 40 letters, digits");
  }

  @Test
  void aFencingFloorOutOfRangeFailsTheStartNamingTheProperty() {
    LockConfigurationException e = refused(runner, "locksmith.fencing-floor=-1");
    assertThat(e.getMessage())
        .contains("`locksmith.fencing-floor` was '-1'")
        .contains("from 0 to 4611686018427387904");
  }

  @Test
  void theApplicationsOwnClientDoesNotExcuseAnUnknownProperty() {
    refused(runner.withUserConfiguration(OwnClient.class), "locksmith.lese=10s");
  }

  @Test
  void relaxedFormsOfKnownPropertiesStart() {
    runner
        .withPropertyValues(
            "locksmith.clientName=camel",
            "locksmith.metrics.lockNameTag=true",
            "locksmith.clients[orders].uri=local:relaxed",
            "locksmith.clients.orders.options.lease=5s",
            "locksmith.options.reentrant=false")
        .run(ctx -> assertThat(ctx).hasNotFailed());
  }

  @Test
  void optionsMistypedInCaseAreTypos() {
    LockConfigurationException e = refused(runner, "locksmith.options.Lease=10s");
    assertThat(e.getMessage()).contains("did you mean `locksmith.options.lease`?");
  }

  private ApplicationContextRunner withEnvironmentVariables(Map<String, Object> variables) {
    return runner.withInitializer(
        ctx ->
            ctx.getEnvironment()
                .getPropertySources()
                .addFirst(
                    new SystemEnvironmentPropertySource("test-systemEnvironment", variables)));
  }

  @Test
  void environmentVariablesAreCheckedInTheirOwnForm() {
    LockConfigurationException e =
        refused(withEnvironmentVariables(Map.of("LOCKSMITH_URL", "redis://localhost:1")));
    assertThat(e.getMessage())
        .contains("`locksmith.url`")
        .contains("LOCKSMITH_URL")
        .contains("did you mean `locksmith.uri`?");
    e = refused(withEnvironmentVariables(Map.of("LOCKSMITH_OPTIONS_LEESE", "10s")));
    assertThat(e.getMessage())
        .contains("`locksmith.options.leese`")
        .contains("did you mean `locksmith.options.lease`?");
  }

  @Test
  void environmentVariablesOfOtherToolsAndTheLegacyFormStart() {
    // LOCKSMITH_CLIENT_NAME binds locksmith.client-name; LOCKSMITH_MVN_LOCK is a script's, like
    // nothing of ours
    withEnvironmentVariables(
            Map.of(
                "LOCKSMITH_CLIENT_NAME",
                "env",
                "LOCKSMITH_URI",
                "local:env",
                "LOCKSMITH_OPTIONS_LEASE",
                "7s",
                "LOCKSMITH_MVN_LOCK",
                "/tmp/mvn.lock"))
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              LockClient client = ctx.getBean(LockClient.class);
              assertThat(client.config().uri().toString()).isEqualTo("local:env");
              assertThat(client.config().defaults().lease()).hasSeconds(7);
            });
    runner.withSystemProperties("locksmith.full=true").run(ctx -> assertThat(ctx).hasNotFailed());
    runner
        .withSystemProperties("locksmith.leese=10s")
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              assertThat(
                      cause(ctx.getStartupFailure(), LockConfigurationException.class).getMessage())
                  .contains("did you mean `locksmith.lease`?");
            });
  }

  // ------------------------------------------------------------------ the README's properties

  /** Every {@code locksmith.*} property the starter's README names, with a value of its kind. */
  @Test
  void everyPropertyTheReadmeDocumentsStarts() throws IOException {
    Path readme = Path.of("../lock-spring-boot-starter/README.md");
    if (!Files.exists(readme)) {
      readme = Path.of("README.md");
    }
    String text = Files.readString(readme);
    Set<String> named = new LinkedHashSet<>();
    Matcher row = Pattern.compile("(?m)^\\| `(locksmith\\.[^`]+)`").matcher(text);
    while (row.find()) {
      named.add(row.group(1));
    }
    // "`locksmith.clients.<name>.uri` (required), `.lease`, `.renew`, …": the same settings of a
    // named client
    Matcher more =
        Pattern.compile("`locksmith\\.clients\\.<name>\\.uri`[^\\n]*(?:\\n[^\\n]+)*").matcher(text);
    assertThat(more.find()).as("the README documents named clients").isTrue();
    named.add("locksmith.clients.<name>.uri");
    Matcher suffix = Pattern.compile("`\\.([a-z.*-]+)`").matcher(more.group());
    while (suffix.find()) {
      named.add("locksmith.clients.<name>." + suffix.group(1));
    }
    assertThat(named)
        .contains(
            "locksmith.uri",
            "locksmith.lease",
            "locksmith.renew",
            "locksmith.reentrant",
            "locksmith.recheck",
            "locksmith.options.*",
            "locksmith.client-name",
            "locksmith.metrics.enabled",
            "locksmith.metrics.lock-name-tag",
            "locksmith.annotation.order",
            "locksmith.clients.<name>.uri",
            "locksmith.clients.<name>.lease",
            "locksmith.clients.<name>.options.*");
    List<String> values = new ArrayList<>();
    for (String property : named) {
      String p = property.replace("<name>", "orders");
      if (p.endsWith(".*")) {
        p = p.substring(0, p.length() - 1) + "recheck";
      }
      values.add(p + "=" + sample(p));
    }
    runner
        .withPropertyValues(values.toArray(String[]::new))
        .run(
            ctx -> {
              assertThat(ctx).as("README properties %s", values).hasNotFailed();
              assertThat(ctx.getBean(LockClients.class).names()).containsExactly("orders");
            });
  }

  private static String sample(String property) {
    String last = property.substring(property.lastIndexOf('.') + 1);
    return switch (last) {
      case "uri" -> "local:readme";
      case "lease", "recheck" -> "5s";
      case "fencing-floor" -> "1000";
      case "client" -> "orders"; // locksmith.elections.<name>.client: the named client above
      case "renew", "reentrant", "enabled", "lock-name-tag" -> "true";
      case "client-name" -> "readme";
      case "application" -> "orders-service";
      case "order" -> "10";
      case "namespace" -> "app";
      case "identity" -> "web-1.eu"; // locksmith.elections.<name>.identity
      case "use-application-datasource" ->
          "false"; // true needs a DataSource bean: LocksmithApplicationDataSourceTest
      default ->
          throw new AssertionError("no sample value for " + property + ": add one to this test");
    };
  }

  // ------------------------------------------------------------------ the INFO line

  @Test
  void eachClientSaysAtInfoWhichBackendAndUriItConnectedTo(CapturedOutput output) {
    runner
        .withPropertyValues(
            "locksmith.uri=local:first-day", "locksmith.clients.orders.uri=local:orders")
        .run(ctx -> assertThat(ctx).hasNotFailed());
    assertThat(output.getAll())
        .contains(
            "Locksmith client 'default' connected to the local backend at local:first-day"
                + " (locksmith.uri)")
        .contains(
            "Locksmith client 'orders' connected to the local backend at local:orders"
                + " (locksmith.clients.orders.uri)")
        .contains("INFO");
  }

  @Test
  void theInfoLineRedactsThePassword() {
    LockConfig config = LockConfig.fromUri("redis://admin:hunter2@cache.example:6379");
    String line =
        LocksmithAutoConfiguration.connected(
            new LocksmithAutoConfiguration.Settings(
                "locksmith.", null, null, null, null, null, null, Map.of(), "default"),
            config);
    assertThat(line)
        .contains("the redis backend at redis://admin:****@cache.example:6379 (locksmith.uri)")
        .doesNotContain("hunter2")
        .doesNotContain("in-process");
  }

  // ------------------------------------------------------------------ the failure analyzer

  @Test
  void theAnalyzerIsRegisteredForSpringBoot() {
    // Spring Boot's own analyzers want a BeanFactory or Environment, which a failed start hands
    // them
    List<FailureAnalyzer> analyzers =
        SpringFactoriesLoader.forDefaultResourceLocation()
            .load(
                FailureAnalyzer.class,
                null,
                SpringFactoriesLoader.FailureHandler.handleMessage((message, failure) -> {}));
    assertThat(analyzers).hasAtLeastOneElementOfType(LocksmithFailureAnalyzer.class);
  }

  @Test
  void aMisspeltPropertyIsAnalyzedWithTheFix() {
    runner
        .withPropertyValues("locksmith.url=redis://localhost:1", "locksmith.colour=blue")
        .run(
            ctx -> {
              FailureAnalysis analysis =
                  new LocksmithFailureAnalyzer().analyze(ctx.getStartupFailure());
              assertThat(analysis).isNotNull();
              assertThat(analysis.getDescription())
                  .contains("`locksmith.url`")
                  .contains("did you mean `locksmith.uri`?");
              assertThat(analysis.getAction())
                  .contains("Rename `locksmith.url` to `locksmith.uri`")
                  .contains("Fix or remove `locksmith.colour`");
              assertThat(analysis.getCause()).isInstanceOf(LockConfigurationException.class);
            });
  }

  @Test
  void aBadValueIsAnalyzedNamingTheProperty() {
    runner
        .withPropertyValues("locksmith.uri=local:", "locksmith.lease=0ms")
        .run(
            ctx -> {
              FailureAnalysis analysis =
                  new LocksmithFailureAnalyzer().analyze(ctx.getStartupFailure());
              assertThat(analysis.getDescription()).contains("`locksmith.lease` was '0ms'");
              assertThat(analysis.getAction()).contains("Fix or remove `locksmith.lease`");
            });
  }

  @Test
  void aServerThatCannotBeReachedIsAnalyzedWithItsRedactedUri() {
    runner
        .withPropertyValues("locksmith.uri=redis://admin:hunter2@127.0.0.1:1")
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              assertThat(cause(ctx.getStartupFailure(), BackendUnavailableException.class))
                  .isNotNull();
              FailureAnalysis analysis =
                  new LocksmithFailureAnalyzer().analyze(ctx.getStartupFailure());
              assertThat(analysis).isNotNull();
              assertThat(analysis.getDescription())
                  .contains("127.0.0.1:1")
                  .contains("`locksmith.uri`")
                  .doesNotContain("hunter2");
              assertThat(analysis.getAction())
                  .contains("the lock server at redis://admin:****@127.0.0.1:1 is up")
                  .contains("change `locksmith.uri`")
                  .doesNotContain("hunter2");
            });
  }

  @SpringBootConfiguration
  @ImportAutoConfiguration(LocksmithAutoConfiguration.class)
  static class App {}

  /**
   * The whole way: SpringApplication finds the analyzer in spring.factories and prints its report.
   */
  @Test
  void aFailedStartPrintsSpringBootsReport(CapturedOutput output) {
    SpringApplication app = new SpringApplication(App.class);
    app.setWebApplicationType(WebApplicationType.NONE);
    app.setBannerMode(Banner.Mode.OFF);
    app.setLogStartupInfo(false);
    assertThatThrownBy(() -> app.run("--locksmith.url=redis://admin:hunter2@localhost:6379"))
        .isInstanceOf(LockConfigurationException.class);
    assertThat(output.getAll())
        .contains("APPLICATION FAILED TO START")
        .containsPattern("Description:\\s+invalid lock configuration: `locksmith.url`")
        .containsPattern("Action:\\s+Rename `locksmith.url` to `locksmith.uri`, or remove it.")
        .doesNotContain("hunter2");
  }

  @Test
  void otherFailuresAreLeftToSpringBoot() {
    assertThat(new LocksmithFailureAnalyzer().analyze(new IllegalStateException("not ours")))
        .isNull();
  }

  @Configuration
  static class OwnClient {
    @Bean
    LockClient myClient() {
      return Locks.connect("local:own");
    }
  }
}
