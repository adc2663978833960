package dev.locksmith.spring;

import dev.locksmith.Election;
import dev.locksmith.Guarantees;
import dev.locksmith.LeaderLatch;
import dev.locksmith.LockClient;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.SmartLifecycle;

/**
 * The elections of {@code locksmith.elections.<name>}, one {@link LeaderLatch} each, campaigning
 * while the application context runs: started with the context (last), stopped with it (first: the
 * leader steps down, and {@link LeadershipRevokedEvent} is published, before the lock clients
 * close). An election runs on the main client, or on the named client its {@code client} property
 * names. Each change of leadership is published as a {@link LeadershipGrantedEvent} or {@link
 * LeadershipRevokedEvent}.
 *
 * <pre>{@code
 * locksmith.elections.billing-scheduler.enabled=true     # an election, on the main client
 * locksmith.elections.reports.client=orders              # one on locksmith.clients.orders
 * locksmith.elections.reports.identity=web-1             # as lockctl leader names this instance
 *
 * @EventListener void lead(LeadershipGrantedEvent e)   { scheduler.start(e.term()); }
 * @EventListener void stop(LeadershipRevokedEvent e)   { scheduler.stop(); }
 * }</pre>
 */
public final class LocksmithElections implements SmartLifecycle {
  private static final Logger LOG = LoggerFactory.getLogger(LocksmithElections.class);
  private final Map<String, LockClient> clients;
  private final Map<String, String> identities;
  private final ApplicationEventPublisher publisher;
  private final ReentrantLock lifecycle = new ReentrantLock();

  /** The latches of the current run: a latch campaigns once, so each start makes new ones. */
  private volatile Map<String, LeaderLatch> latches = Map.of();

  private boolean running;

  LocksmithElections(
      Map<String, LockClient> clientsByElection,
      Map<String, String> identities,
      ApplicationEventPublisher publisher) {
    this.clients = Collections.unmodifiableMap(new LinkedHashMap<>(clientsByElection));
    this.identities = Map.copyOf(identities);
    this.publisher = publisher;
  }

  /**
   * @return the names of the configured elections
   */
  public Set<String> names() {
    return clients.keySet();
  }

  /**
   * @param election an election's name
   * @return whether this instance leads it now, as far as it can tell (its lease is valid)
   * @throws IllegalArgumentException if no such election is configured
   */
  public boolean isLeader(String election) {
    return latch(election).isLeader();
  }

  /**
   * @param election an election's name
   * @return the term of this instance's leadership, or empty if it does not lead
   * @throws IllegalArgumentException if no such election is configured
   */
  public OptionalLong term(String election) {
    return latch(election)
        .leadership()
        .filter(LeaderLatch.Leadership::isValid)
        .map(l -> OptionalLong.of(l.term()))
        .orElse(OptionalLong.empty());
  }

  private LeaderLatch latch(String election) {
    LeaderLatch latch = latches.get(election);
    if (latch == null && clients.containsKey(election)) {
      return clients.get(election).leaderLatch(election); // not running: a latch that never led
    }
    if (latch == null) {
      throw new IllegalArgumentException(
          "`election` was '"
              + election
              + "' but it must be one of locksmith.elections: "
              + clients.keySet());
    }
    return latch;
  }

  @Override
  public void start() {
    lifecycle.lock();
    try {
      if (!running) {
        Map<String, LeaderLatch> started = new LinkedHashMap<>();
        clients.forEach(
            (name, client) ->
                started.put(
                    name,
                    latchOf(client, name)
                        .onElected(
                            l ->
                                publisher.publishEvent(
                                    new LeadershipGrantedEvent(this, name, l.term())))
                        .onRevoked(
                            l ->
                                publisher.publishEvent(
                                    new LeadershipRevokedEvent(this, name, l.term())))));
        latches = started;
        started.values().forEach(LeaderLatch::start);
        running = true;
      }
    } finally {
      lifecycle.unlock();
    }
  }

  private LeaderLatch latchOf(LockClient client, String name) {
    LeaderLatch latch = client.leaderLatch(name);
    String identity = identities.get(name);
    return identity == null ? latch : latch.identity(identity);
  }

  /** Steps down (publishing the revocation before the lock is released) and stops campaigning. */
  @Override
  public void stop() {
    lifecycle.lock();
    try {
      latches.values().forEach(LeaderLatch::close);
      running = false;
    } finally {
      lifecycle.unlock();
    }
  }

  @Override
  public boolean isRunning() {
    lifecycle.lock();
    try {
      return running;
    } finally {
      lifecycle.unlock();
    }
  }

  /**
   * @return the elections as the actuator endpoint shows them: whether this instance leads each,
   *     and its term
   */
  /**
   * Who leads the election now, whichever instance it is: its identity and term by one state read,
   * both null when none leads; empty where the backend cannot read a lock's state or the read
   * failed (logged at DEBUG: the endpoint still answers).
   */
  private Optional<Map<String, Object>> current(String name) {
    LockClient client = clients.get(name);
    if (!client.guarantees().has(Guarantees.Feature.STATE_READS)) {
      return Optional.empty();
    }
    Optional<Election.Leader> leader;
    try {
      leader = client.election(name).leader();
    } catch (RuntimeException e) {
      LOG.debug("reading the leader of election '{}' failed", name, e);
      return Optional.empty();
    }
    Map<String, Object> c = new LinkedHashMap<>();
    c.put("identity", leader.flatMap(Election.Leader::identity).orElse(null));
    OptionalLong term = leader.map(Election.Leader::term).orElse(OptionalLong.empty());
    c.put("term", term.isPresent() ? term.getAsLong() : null);
    return Optional.of(c);
  }

  Map<String, Object> describe() {
    Map<String, Object> out = new LinkedHashMap<>();
    for (String name : latches.keySet()) {
      Map<String, Object> e = new LinkedHashMap<>();
      OptionalLong term = term(name);
      e.put("leader", term.isPresent());
      e.put("term", term.isPresent() ? term.getAsLong() : null);
      current(name).ifPresent(c -> e.put("current", c));
      out.put(name, e);
    }
    return out;
  }
}
