package dev.locksmith.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.LockConfigurationException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationListener;

/**
 * {@code locksmith.elections}: two application contexts (two instances of one service) campaign in
 * one election on a shared {@code local:} space; one leads, the other takes over with a higher term
 * when the first shuts down, each told by application events in order.
 */
class LocksmithElectionsTest {
  private static final Duration SOON = Duration.ofSeconds(30);

  /** Records the leadership events of its context. */
  static final class Recorder implements ApplicationListener<LeadershipEvent> {
    final List<LeadershipEvent> events = new CopyOnWriteArrayList<>();

    @Override
    public void onApplicationEvent(LeadershipEvent event) {
      events.add(event);
    }

    boolean granted() {
      return events.stream().anyMatch(LeadershipGrantedEvent.class::isInstance);
    }
  }

  private static ApplicationContextRunner instance(String space) {
    return new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(LocksmithAutoConfiguration.class))
        .withBean(Recorder.class, Recorder::new)
        .withPropertyValues("locksmith.uri=" + space, "locksmith.elections.billing.enabled=true");
  }

  private static void await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + SOON.toNanos();
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline).as("waited %s for %s", SOON, what).isNegative();
      Thread.sleep(10);
    }
  }

  @Test
  void oneInstanceLeadsAndTheOtherTakesOverWithAHigherTermWhenItShutsDown() {
    String space = "local:elections-" + System.nanoTime();
    instance(space)
        .run(
            first -> {
              assertThat(first).hasNotFailed();
              Recorder firstEvents = first.getBean(Recorder.class);
              await("the first instance is elected", firstEvents::granted);
              LocksmithElections firstElections = first.getBean(LocksmithElections.class);
              assertThat(firstElections.names()).containsExactly("billing");
              assertThat(firstElections.isLeader("billing")).isTrue();
              long firstTerm = firstEvents.events.get(0).term();
              assertThat(firstElections.term("billing")).hasValue(firstTerm);
              String firstIdentity =
                  first
                      .getBean(dev.locksmith.LockClient.class)
                      .election("billing")
                      .leader()
                      .orElseThrow()
                      .identity()
                      .orElseThrow();
              assertThat(
                      new LocksmithEndpoint(
                              first.getBean(dev.locksmith.LockClient.class), null, firstElections)
                          .leases())
                  .containsEntry(
                      "elections",
                      Map.of(
                          "billing",
                          Map.of(
                              "leader",
                              true,
                              "term",
                              firstTerm,
                              "current",
                              Map.of("identity", firstIdentity, "term", firstTerm))));

              instance(space)
                  .run(
                      second -> {
                        Recorder secondEvents = second.getBean(Recorder.class);
                        LocksmithElections secondElections =
                            second.getBean(LocksmithElections.class);
                        Thread.sleep(300); // the second campaigns, in vain while the first leads
                        assertThat(secondEvents.events).as("a second leader").isEmpty();
                        assertThat(secondElections.isLeader("billing")).isFalse();
                        assertThat(secondElections.term("billing")).isEmpty();
                        // the endpoint of an instance that does not lead names the one that does
                        Map<String, Object> leader = new java.util.LinkedHashMap<>();
                        leader.put("leader", false);
                        leader.put("term", null);
                        leader.put("current", Map.of("identity", firstIdentity, "term", firstTerm));
                        assertThat(
                                new LocksmithEndpoint(
                                        second.getBean(dev.locksmith.LockClient.class),
                                        null,
                                        secondElections)
                                    .leases())
                            .containsEntry("elections", Map.of("billing", leader));

                        first.close(); // the first instance shuts down: it steps down
                        assertThat(firstEvents.events)
                            .extracting(e -> e.getClass().getSimpleName() + " " + e.term())
                            .containsExactly(
                                "LeadershipGrantedEvent " + firstTerm,
                                "LeadershipRevokedEvent " + firstTerm);
                        await("the second instance takes over", secondEvents::granted);
                        assertThat(secondEvents.events.get(0).term())
                            .as("the new leader's term")
                            .isGreaterThan(firstTerm);
                        assertThat(secondElections.isLeader("billing")).isTrue();
                      });
            });
  }

  @Test
  void aDisabledElectionDoesNotCampaign() throws Exception {
    instance("local:elections-off-" + System.nanoTime())
        .withPropertyValues("locksmith.elections.billing.enabled=false")
        .run(
            ctx -> {
              assertThat(ctx.getBean(LocksmithElections.class).names()).isEmpty();
              Thread.sleep(300);
              assertThat(ctx.getBean(Recorder.class).events).isEmpty();
            });
  }

  @Test
  void anElectionOnANamedClientCampaignsThere() {
    String space = "local:elections-named-" + System.nanoTime();
    instance("local:elections-main-" + System.nanoTime())
        .withPropertyValues(
            "locksmith.clients.orders.uri=" + space, "locksmith.elections.billing.client=orders")
        .run(
            ctx -> {
              await("elected", ctx.getBean(Recorder.class)::granted);
              LockClients clients = ctx.getBean(LockClients.class);
              assertThat(clients.get("orders").lock("billing").state().isHeld())
                  .as("the election's lock, held on the named client's backend")
                  .isTrue();
              assertThat(
                      ctx.getBean(dev.locksmith.LockClient.class).lock("billing").state().isHeld())
                  .as("the main client's lock of that name")
                  .isFalse();
            });
  }

  @Test
  void anElectionCampaignsUnderItsIdentityAndABadOneFailsTheStart() {
    String space = "local:elections-identity-" + System.nanoTime();
    instance(space)
        .withPropertyValues("locksmith.elections.billing.identity=web-1.eu")
        .run(
            ctx -> {
              await("elected", ctx.getBean(Recorder.class)::granted);
              assertThat(
                      ctx.getBean(dev.locksmith.LockClient.class)
                          .election("billing")
                          .leader()
                          .orElseThrow()
                          .identity())
                  .contains("web-1.eu");
              assertThat(ctx.getBean(LocksmithElections.class).describe())
                  .extracting(d -> ((Map<?, ?>) ((Map<?, ?>) d.get("billing")).get("current")))
                  .extracting(c -> c.get("identity"))
                  .isEqualTo("web-1.eu");
            });
    instance(space)
        .withPropertyValues("locksmith.elections.billing.identity=web 1")
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              assertThat(cause(ctx.getStartupFailure()).getMessage())
                  .contains("`locksmith.elections.billing.identity`")
                  .contains("`identity` was 'web 1'")
                  .contains("1 to 40 characters");
            });
  }

  @Test
  void anElectionNamingAnUnknownClientOrAMisspeltSettingFailsTheStart() {
    instance("local:elections-bad-" + System.nanoTime())
        .withPropertyValues("locksmith.elections.billing.client=nope")
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              assertThat(cause(ctx.getStartupFailure()).getMessage())
                  .contains("`locksmith.elections.billing.client` was 'nope'")
                  .contains("locksmith.clients");
            });
    instance("local:elections-bad-" + System.nanoTime())
        .withPropertyValues("locksmith.elections.billing.enabeld=true")
        .run(
            ctx -> {
              assertThat(ctx).hasFailed();
              assertThat(cause(ctx.getStartupFailure()).getMessage())
                  .contains("locksmith.elections.billing.enabeld")
                  .contains("locksmith.elections.billing.enabled");
            });
  }

  private static LockConfigurationException cause(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof LockConfigurationException e) {
        return e;
      }
    }
    throw new AssertionError("no LockConfigurationException in " + failure, failure);
  }
}
