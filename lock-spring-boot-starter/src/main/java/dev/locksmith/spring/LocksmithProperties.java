package dev.locksmith.spring;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.core.Ordered;

/**
 * {@code locksmith.*} settings: the same ones as {@code LockConfig}. Unset values fall back to the
 * URI's query parameters, then to the library's defaults.
 */
@ConfigurationProperties(prefix = "locksmith")
public class LocksmithProperties {
  /**
   * The advice's default order: just before the transaction advice (whose default is the lowest
   * precedence), so it runs outside it.
   */
  public static final int DEFAULT_ORDER = Ordered.LOWEST_PRECEDENCE - 100;

  /**
   * Lock URI, such as redis://localhost:6379, jdbc:postgresql://db/app or local: (in-process, the
   * default).
   */
  private String uri = "local:";

  /** Default lease of locks, from 1ms to 7d; unset for the URI's or 30s. */
  private Duration lease;

  /** Whether leases are renewed in the background while held; unset for the URI's or true. */
  private Boolean renew;

  /** Whether locks are reentrant per thread; unset for the URI's or true. */
  private Boolean reentrant;

  /** Longest a waiter sleeps when no release notification reaches it, from 1ms to 1h. */
  private Duration recheck;

  /**
   * Added to every fencing token the client hands out, from 0 to 2^62; set it to the highest token
   * a fenced resource stored when moving the application to another backend.
   */
  private Long fencingFloor;

  /**
   * The application's name, written into every lease so that people can see who holds a lock (1 to
   * 40 letters, digits, '.', '_' and '-'); unset for spring.application.name, with any other
   * character written as '-'. Applies to every client.
   */
  private String application;

  /** Name of the client, the "client" tag of its metrics. */
  private String clientName = "default";

  /**
   * Backend options, such as locksmith.options.namespace=app or locksmith.options.password=...;
   * checked by the backend.
   */
  private Map<String, String> options = new LinkedHashMap<>();

  /**
   * Further clients by name, each with its own uri, lease, renew, reentrant, recheck, fencing-floor
   * and options; @Locked(client = "name") uses one.
   */
  private Map<String, Client> clients = new LinkedHashMap<>();

  /**
   * Leader elections by name, each campaigning while the application runs and publishing
   * LeadershipGrantedEvent / LeadershipRevokedEvent: locksmith.elections.<name>.enabled=true.
   */
  private Map<String, Election> elections = new LinkedHashMap<>();

  /** Metrics settings. */
  private final Metrics metrics = new Metrics();

  /** {@code @Locked} settings. */
  private final Annotation annotation = new Annotation();

  /** JDBC backend settings. */
  private final Jdbc jdbc = new Jdbc();

  /**
   * @return the lock URI
   */
  public String getUri() {
    return uri;
  }

  /**
   * @param uri the lock URI
   */
  public void setUri(String uri) {
    this.uri = uri;
  }

  /**
   * @return the default lease, or null
   */
  public Duration getLease() {
    return lease;
  }

  /**
   * @param lease the default lease
   */
  public void setLease(Duration lease) {
    this.lease = lease;
  }

  /**
   * @return whether leases are renewed, or null
   */
  public Boolean getRenew() {
    return renew;
  }

  /**
   * @param renew whether leases are renewed
   */
  public void setRenew(Boolean renew) {
    this.renew = renew;
  }

  /**
   * @return whether locks are reentrant, or null
   */
  public Boolean getReentrant() {
    return reentrant;
  }

  /**
   * @param reentrant whether locks are reentrant
   */
  public void setReentrant(Boolean reentrant) {
    this.reentrant = reentrant;
  }

  /**
   * @return the recheck bound, or null
   */
  public Duration getRecheck() {
    return recheck;
  }

  /**
   * @param recheck the recheck bound
   */
  public void setRecheck(Duration recheck) {
    this.recheck = recheck;
  }

  /**
   * @return the fencing floor, or null for the URI's or 0
   */
  public Long getFencingFloor() {
    return fencingFloor;
  }

  /**
   * @param fencingFloor added to every fencing token the client hands out
   */
  public void setFencingFloor(Long fencingFloor) {
    this.fencingFloor = fencingFloor;
  }

  /**
   * @return the application's name written into every lease, or null for spring.application.name
   */
  public String getApplication() {
    return application;
  }

  /**
   * @param application the application's name written into every lease
   */
  public void setApplication(String application) {
    this.application = application;
  }

  /**
   * @return the client's name
   */
  public String getClientName() {
    return clientName;
  }

  /**
   * @param clientName the client's name
   */
  public void setClientName(String clientName) {
    this.clientName = clientName;
  }

  /**
   * @return the backend options
   */
  public Map<String, String> getOptions() {
    return options;
  }

  /**
   * @param options the backend options
   */
  public void setOptions(Map<String, String> options) {
    this.options = options;
  }

  /**
   * @return the named clients
   */
  public Map<String, Client> getClients() {
    return clients;
  }

  /**
   * @param clients the named clients
   */
  public void setClients(Map<String, Client> clients) {
    this.clients = clients;
  }

  /**
   * @return the leader elections by name
   */
  public Map<String, Election> getElections() {
    return elections;
  }

  /**
   * @param elections the leader elections by name
   */
  public void setElections(Map<String, Election> elections) {
    this.elections = elections;
  }

  /**
   * @return the metrics settings
   */
  public Metrics getMetrics() {
    return metrics;
  }

  /**
   * @return the annotation settings
   */
  public Annotation getAnnotation() {
    return annotation;
  }

  /**
   * @return the JDBC backend settings
   */
  public Jdbc getJdbc() {
    return jdbc;
  }

  /**
   * {@code locksmith.clients.<name>.*}: one more client, the same settings as the default one's.
   */
  public static class Client {
    /** Lock URI of this client (required). */
    private String uri;

    /** Default lease of this client's locks. */
    private Duration lease;

    /** Whether this client's leases are renewed while held. */
    private Boolean renew;

    /** Whether this client's locks are reentrant per thread. */
    private Boolean reentrant;

    /** Longest a waiter of this client sleeps without a release notification. */
    private Duration recheck;

    /** Added to every fencing token this client hands out, from 0 to 2^62. */
    private Long fencingFloor;

    /** Backend options of this client. */
    private Map<String, String> options = new LinkedHashMap<>();

    /**
     * @return the lock URI
     */
    public String getUri() {
      return uri;
    }

    /**
     * @param uri the lock URI
     */
    public void setUri(String uri) {
      this.uri = uri;
    }

    /**
     * @return the default lease, or null
     */
    public Duration getLease() {
      return lease;
    }

    /**
     * @param lease the default lease
     */
    public void setLease(Duration lease) {
      this.lease = lease;
    }

    /**
     * @return whether leases are renewed, or null
     */
    public Boolean getRenew() {
      return renew;
    }

    /**
     * @param renew whether leases are renewed
     */
    public void setRenew(Boolean renew) {
      this.renew = renew;
    }

    /**
     * @return whether locks are reentrant, or null
     */
    public Boolean getReentrant() {
      return reentrant;
    }

    /**
     * @param reentrant whether locks are reentrant
     */
    public void setReentrant(Boolean reentrant) {
      this.reentrant = reentrant;
    }

    /**
     * @return the recheck bound, or null
     */
    public Duration getRecheck() {
      return recheck;
    }

    /**
     * @param recheck the recheck bound
     */
    public void setRecheck(Duration recheck) {
      this.recheck = recheck;
    }

    /**
     * @return the fencing floor, or null for the URI's or 0
     */
    public Long getFencingFloor() {
      return fencingFloor;
    }

    /**
     * @param fencingFloor added to every fencing token this client hands out
     */
    public void setFencingFloor(Long fencingFloor) {
      this.fencingFloor = fencingFloor;
    }

    /**
     * @return the backend options
     */
    public Map<String, String> getOptions() {
      return options;
    }

    /**
     * @param options the backend options
     */
    public void setOptions(Map<String, String> options) {
      this.options = options;
    }
  }

  /** {@code locksmith.elections.<name>.*}. */
  public static class Election {
    /** Whether this election campaigns while the application runs. */
    private boolean enabled = true;

    /** The named client (locksmith.clients.<name>) to campaign on; unset for the main client. */
    private String client;

    /**
     * Who campaigns, as others read the leader (lockctl leader, Election.leader()): 1 to 40
     * letters, digits, '.', '_' or '-'; unset for the latch thread's name.
     */
    private String identity;

    /**
     * @return the identity this instance campaigns under, or null for the latch thread's name
     */
    public String getIdentity() {
      return identity;
    }

    /**
     * @param identity the identity this instance campaigns under
     */
    public void setIdentity(String identity) {
      this.identity = identity;
    }

    /**
     * @return whether the election campaigns
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * @param enabled whether the election campaigns
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /**
     * @return the named client's name, or null for the main client
     */
    public String getClient() {
      return client;
    }

    /**
     * @param client the named client's name
     */
    public void setClient(String client) {
      this.client = client;
    }
  }

  /** {@code locksmith.metrics.*}. */
  public static class Metrics {
    /** Whether Micrometer meters are registered when a MeterRegistry bean exists. */
    private boolean enabled = true;

    /**
     * Whether meters carry the lock name as tag "lock"; off since lock names are often unbounded.
     */
    private boolean lockNameTag;

    /**
     * @return whether meters are registered
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * @param enabled whether meters are registered
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /**
     * @return whether the lock name is a tag
     */
    public boolean isLockNameTag() {
      return lockNameTag;
    }

    /**
     * @param lockNameTag whether the lock name is a tag
     */
    public void setLockNameTag(boolean lockNameTag) {
      this.lockNameTag = lockNameTag;
    }
  }

  /** {@code locksmith.annotation.*}. */
  public static class Annotation {
    /**
     * Order of the @Locked advice among other advice; lower runs further outside. The default runs
     * outside @Transactional at its default order, so locks are released after the commit.
     */
    private int order = DEFAULT_ORDER;

    /**
     * @return the advice's order
     */
    public int getOrder() {
      return order;
    }

    /**
     * @param order the advice's order
     */
    public void setOrder(int order) {
      this.order = order;
    }
  }

  /** {@code locksmith.jdbc.*}. */
  public static class Jdbc {
    /**
     * Whether the default client locks on the application's own DataSource bean (its pool and
     * credentials, from spring.datasource.*) instead of a pool of its own opened from
     * locksmith.uri; the database (MySQL, MariaDB, PostgreSQL or H2) is recognised from the
     * connection. Needs lock-jdbc and a DataSource bean; locksmith.uri stays unset, and
     * locksmith.options.* take the JDBC backend's options (table, create-table, ...).
     */
    private boolean useApplicationDatasource;

    /**
     * @return whether the default client uses the application's DataSource
     */
    public boolean isUseApplicationDatasource() {
      return useApplicationDatasource;
    }

    /**
     * @param useApplicationDatasource whether the default client uses the application's DataSource
     */
    public void setUseApplicationDatasource(boolean useApplicationDatasource) {
      this.useApplicationDatasource = useApplicationDatasource;
    }
  }
}
