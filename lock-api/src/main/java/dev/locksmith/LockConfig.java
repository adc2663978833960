package dev.locksmith;

import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockUri;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Everything needed to connect: the lock URI, the default {@link LockOptions} for locks of the
 * client, and backend options. Immutable.
 *
 * <p>The same settings can be written three ways, and mean the same in each:
 *
 * <ul>
 *   <li>query parameters of the URI: {@code redis://localhost:6379?lease=10s&renew=true};
 *   <li>{@link Properties}: {@code locksmith.uri}, {@code locksmith.lease}, {@code
 *       locksmith.<option>};
 *   <li>the environment: {@code LOCKSMITH_URI}, {@code LOCKSMITH_LEASE}, {@code LOCKSMITH_<OPTION>}
 *       (upper case, {@code -} written as {@code _}), with system properties {@code locksmith.*}
 *       taking precedence.
 * </ul>
 *
 * A separately given setting overrides the same one in the URI's query. Settings every client
 * understands: {@code lease} (duration), {@code renew} (true/false), {@code reentrant}
 * (true/false), {@code recheck} (duration: the longest a waiter sleeps when no release notification
 * arrives), {@code fencing-floor} (a whole number added to every fencing token the client hands
 * out, so that tokens stay above those of a backend used before: see {@link #fencingFloor()}),
 * {@code application} (the name a client writes into every lease it takes, so that people can see
 * who holds a lock: see {@link #application()}), {@code dropped-leases} ({@code release}, {@code
 * trace} or {@code keep}: what becomes of a lease the application drops without releasing it, see
 * {@link #droppedLeases()}) and {@code provider} (a provider class name, when two providers claim a
 * scheme). Anything else is a backend option, checked by that backend. Every problem is reported at
 * once in one {@link LockConfigurationException}; secrets are redacted in messages and {@link
 * #toString()}.
 */
public final class LockConfig {
  static final String LEASE = "lease";
  static final String RENEW = "renew";
  static final String REENTRANT = "reentrant";
  static final String RECHECK = "recheck";
  static final String PROVIDER = "provider";
  static final String FENCING_FLOOR = "fencing-floor";
  static final String APPLICATION = "application";
  static final String DROPPED_LEASES = "dropped-leases";
  static final Set<String> CORE_KEYS =
      Set.of(
          LEASE, RENEW, REENTRANT, RECHECK, PROVIDER, FENCING_FLOOR, APPLICATION, DROPPED_LEASES);

  /**
   * What a client does with a lease the application drops (lets become unreachable) without
   * releasing it: nobody can release it any more, so left alone it would be renewed until the
   * client closes.
   */
  public enum DroppedLeases {
    /**
     * Release it once the garbage collector finds it unreachable, with a warning naming the lock,
     * its token and the thread that took it. The default.
     */
    RELEASE,
    /**
     * As {@link #RELEASE}, and the warning also shows the stack of the code that took it: every
     * acquire captures a stack, so use it to find a leak, not all the time.
     */
    TRACE,
    /**
     * Keep it, renewed until the client closes, as a lock taken once for the life of the process
     * and never released would need. No tracking cost.
     */
    KEEP;

    /**
     * @return the value as written in settings: {@code release}, {@code trace} or {@code keep}
     */
    @Override
    public String toString() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** The largest {@code fencing-floor}: 2^62, leaving room above it for any backend's tokens. */
  static final long MAX_FENCING_FLOOR = 1L << 62;

  /**
   * @param key a setting that is not one every client understands
   * @return the setting every client understands that {@code key} is probably a typo of (equal
   *     ignoring case, or at most two edits away), or null
   */
  static String nearCoreKey(String key) {
    if (CORE_KEYS.contains(key)) {
      return null;
    }
    String lower = key.toLowerCase(Locale.ROOT);
    String best = null;
    int bestDistance = 3;
    for (String core : new TreeSet<>(CORE_KEYS)) {
      int d = editDistance(core, lower);
      if (d < bestDistance) {
        best = core;
        bestDistance = d;
      }
    }
    return best;
  }

  /** Levenshtein distance: inserts, deletes and substitutions. */
  private static int editDistance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int substitute = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        cur[j] = Math.min(substitute, Math.min(prev[j], cur[j - 1]) + 1);
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }

  static final Duration MIN_RECHECK = Duration.ofMillis(1);
  static final Duration MAX_RECHECK = Duration.ofHours(1);

  private final LockUri uri;
  private final LockOptions defaults;
  private final Duration recheck;
  private final String provider;
  private final long fencingFloor;
  private final String application;
  private final DroppedLeases droppedLeases;
  private final Map<String, String> backendOptions;
  private final Set<String> lenientKeys;
  private final LockEvents events;

  private LockConfig(
      LockUri uri,
      LockOptions defaults,
      Duration recheck,
      String provider,
      long fencingFloor,
      String application,
      DroppedLeases droppedLeases,
      Map<String, String> backendOptions,
      Set<String> lenientKeys,
      LockEvents events) {
    this.uri = uri;
    this.defaults = defaults;
    this.recheck = recheck;
    this.provider = provider;
    this.fencingFloor = fencingFloor;
    this.application = application;
    this.droppedLeases = droppedLeases;
    this.backendOptions = backendOptions;
    this.lenientKeys = lenientKeys;
    this.events = events;
  }

  /**
   * @return a builder; {@link Builder#uri(String)} is required
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * @param uri a lock URI such as {@code redis://localhost:6379?lease=10s}
   * @return its configuration
   * @throws LockConfigurationException listing every problem
   */
  public static LockConfig fromUri(String uri) {
    Objects.requireNonNull(
        uri, "`uri` was null but it must be a lock URI such as redis://localhost:6379 or local:");
    return builder().uri(uri).build();
  }

  /**
   * Reads {@code locksmith.uri} and every other {@code locksmith.<key>} property. Properties
   * without the {@code locksmith.} prefix are ignored.
   *
   * @param properties the properties
   * @return the configuration
   * @throws LockConfigurationException listing every problem, {@code locksmith.uri} missing among
   *     them
   */
  public static LockConfig fromProperties(Properties properties) {
    Objects.requireNonNull(
        properties,
        "`properties` was null but it must be a Properties holding locksmith.uri, such as"
            + " locksmith.uri=redis://localhost:6379");
    Builder b = builder();
    List<String> problems = new ArrayList<>();
    for (String key : new TreeMap<>(asMap(properties)).keySet()) {
      if (!key.startsWith("locksmith.")) {
        continue;
      }
      String k = key.substring("locksmith.".length());
      String v = properties.getProperty(key);
      if (k.equals("uri")) {
        b.uri = v;
      } else if (!k.isEmpty()) {
        b.options.put(k, v);
      }
    }
    if (b.uri == null) {
      problems.add(
          "`locksmith.uri` was missing but it must be a lock URI such as redis://localhost:6379 or"
              + " local:");
    }
    return b.build(problems);
  }

  /**
   * Reads system properties {@code locksmith.*}, then environment variables {@code LOCKSMITH_URI}
   * and {@code LOCKSMITH_<KEY>} for keys not set as properties. A {@code LOCKSMITH_*} variable that
   * no setting or backend option matches is ignored, since environments hold unrelated variables.
   *
   * @return the configuration
   * @throws LockConfigurationException listing every problem, the URI missing among them
   */
  public static LockConfig fromEnvironment() {
    return fromEnvironment(System.getenv(), System.getProperties());
  }

  static LockConfig fromEnvironment(Map<String, String> env, Properties sys) {
    Builder b = builder();
    for (Map.Entry<String, String> e : new TreeMap<>(env).entrySet()) {
      String name = e.getKey();
      if (!name.startsWith("LOCKSMITH_") || name.length() == "LOCKSMITH_".length()) {
        continue;
      }
      String key = name.substring("LOCKSMITH_".length()).toLowerCase(Locale.ROOT).replace('_', '-');
      if (key.equals("uri")) {
        b.uri = e.getValue();
      } else {
        b.options.put(key, e.getValue());
        b.lenient.add(key);
      }
    }
    for (Map.Entry<String, String> e : new TreeMap<>(asMap(sys)).entrySet()) {
      if (!e.getKey().startsWith("locksmith.")) {
        continue;
      }
      String key = e.getKey().substring("locksmith.".length());
      if (key.equals("uri")) {
        b.uri = e.getValue();
      } else if (!key.isEmpty()) {
        b.options.put(key, e.getValue());
        b.lenient.remove(key);
      }
    }
    List<String> problems = new ArrayList<>();
    if (b.uri == null) {
      problems.add(
          "`LOCKSMITH_URI` was missing but it (or the system property locksmith.uri) must be a lock"
              + " URI such as redis://localhost:6379 or local:");
    }
    return b.build(problems);
  }

  private static Map<String, String> asMap(Properties p) {
    Map<String, String> m = new LinkedHashMap<>();
    for (String name : p.stringPropertyNames()) {
      m.put(name, p.getProperty(name));
    }
    return m;
  }

  /**
   * @return the parsed lock URI; its {@code toString()} redacts secrets
   */
  public LockUri uri() {
    return uri;
  }

  /**
   * @return the options for locks obtained with {@link LockClient#lock(String)}
   */
  public LockOptions defaults() {
    return defaults;
  }

  /**
   * @return the longest a waiter sleeps between checks when no release notification reaches it: a
   *     lost notification delays a waiter by at most this, never hangs it
   */
  public Duration recheck() {
    return recheck;
  }

  /**
   * @return the provider class chosen with {@code provider=}, or null to choose by scheme
   */
  public String provider() {
    return provider;
  }

  /**
   * What {@code fencing-floor} sets: a number added to every fencing token the client hands out
   * ({@link Lease#fencingToken()}, {@link LockState#fencingToken()}, lock events and {@link
   * LeaseLostException}), 0 unless set. Each backend counts tokens from its own start, so a
   * resource fenced with tokens of one backend would refuse every write after a move to another:
   * start the new backend's clients with the highest token the resource has stored (or any number
   * above it) as their floor, and every token they hand out is above it. Every client of a lock
   * must use the same floor, or their tokens are not comparable; raise it only when moving to
   * another backend (or another server whose counters started again).
   *
   * @return the floor, from 0 to 2^62
   */
  public long fencingFloor() {
    return fencingFloor;
  }

  /**
   * What {@code application} sets: the application's name, written with the host, the process id,
   * the asking thread and the time into the owner id of every lease the client takes, so that
   * {@link LockState#holderIdentity()}, {@code lockctl status} and the actuator tell who holds a
   * lock. Unless set, the jar's name for {@code java -jar orders.jar}, else the main class's simple
   * name; the Spring Boot starter sets {@code spring.application.name}.
   *
   * @return 1 to 40 letters, digits, {@code .}, {@code _} and {@code -}
   */
  public String application() {
    return application;
  }

  /**
   * What {@code dropped-leases} sets: what becomes of a lease the application drops without
   * releasing it. By default ({@code release}) the client releases it once the garbage collector
   * finds it unreachable, with a warning naming the lock, its token and the thread that took it;
   * {@code trace} adds the code that took it to the warning; {@code keep} renews it until the
   * client closes. A lease is dropped when nothing refers to it any more: keep it until you release
   * it ({@code try (Lease lease = lock.acquire(...)) { ... }}). Holdings of {@link
   * DistributedLock#asLock()} belong to their thread, as a {@code java.util.concurrent} lock's do,
   * and are never dropped.
   *
   * @return the setting; {@link DroppedLeases#RELEASE} unless set
   */
  public DroppedLeases droppedLeases() {
    return droppedLeases;
  }

  /**
   * @return the backend options: every setting that is not one every client understands
   */
  public Map<String, String> backendOptions() {
    return backendOptions;
  }

  /**
   * @return the listener for lock events, {@link LockEvents#NONE} if none was set
   */
  public LockEvents events() {
    return events;
  }

  /**
   * @param key a backend option key
   * @return whether it came from the environment, where an unknown key is ignored, not refused
   */
  boolean isLenient(String key) {
    return lenientKeys.contains(key);
  }

  @Override
  public String toString() {
    Map<String, String> shown = new TreeMap<>();
    backendOptions.forEach((k, v) -> shown.put(k, LockUri.redactValue(k, v)));
    return "LockConfig{uri="
        + uri
        + ", defaults="
        + defaults
        + ", recheck="
        + Durations.format(recheck)
        + (provider == null ? "" : ", provider=" + provider)
        + (fencingFloor == 0 ? "" : ", fencing-floor=" + fencingFloor)
        + ", application="
        + application
        + (droppedLeases == DroppedLeases.RELEASE ? "" : ", dropped-leases=" + droppedLeases)
        + ", options="
        + shown
        + "}";
  }

  /**
   * Builds a {@link LockConfig}. Typed setters check their value at once; the URI and the string
   * options are checked together by {@link #build()}, which reports every problem.
   */
  public static final class Builder {
    private String uri;
    private final Map<String, String> options = new LinkedHashMap<>();
    private final Set<String> lenient = new LinkedHashSet<>();
    private Duration lease;
    private Boolean autoRenew;
    private Boolean reentrant;
    private Duration recheck;
    private Long fencingFloor;
    private String application;
    private DroppedLeases droppedLeases;
    private LockEvents events = LockEvents.NONE;

    private Builder() {}

    /**
     * @param uri the lock URI, with optional settings as query parameters
     * @return this builder
     */
    public Builder uri(String uri) {
      this.uri =
          Objects.requireNonNull(
              uri,
              "`uri` was null but it must be a lock URI such as redis://localhost:6379 or local:");
      return this;
    }

    /**
     * Sets a setting by its string key and value, as it would appear in the URI's query. It
     * overrides the same key in the URI.
     *
     * @param key the setting, such as {@code lease} or a backend option
     * @param value its value
     * @return this builder
     */
    public Builder option(String key, String value) {
      Objects.requireNonNull(key, "`key` was null but it must be a setting name such as lease");
      Objects.requireNonNull(value, "`value` of option '" + key + "' was null");
      if (key.isEmpty()) {
        throw new IllegalArgumentException(
            "`key` was '' but it must be a setting name such as lease");
      }
      options.put(key, value);
      lenient.remove(key);
      return this;
    }

    /**
     * @param defaults the options for locks of this client; they override any lease, renew and
     *     reentrant settings given as strings
     * @return this builder
     */
    public Builder defaults(LockOptions defaults) {
      Objects.requireNonNull(defaults, "defaults");
      this.lease = defaults.lease();
      this.autoRenew = defaults.autoRenew();
      this.reentrant = defaults.reentrant();
      return this;
    }

    /**
     * @param lease the default lease, from 1ms to 7d; overrides {@code lease} given as a string
     * @return this builder
     */
    public Builder lease(Duration lease) {
      this.lease = LockOptions.checkLease(lease);
      return this;
    }

    /**
     * @param autoRenew whether leases are renewed in the background by default; overrides {@code
     *     renew} given as a string
     * @return this builder
     */
    public Builder autoRenew(boolean autoRenew) {
      this.autoRenew = autoRenew;
      return this;
    }

    /**
     * @param reentrant whether locks are reentrant by default; overrides {@code reentrant} given as
     *     a string
     * @return this builder
     */
    public Builder reentrant(boolean reentrant) {
      this.reentrant = reentrant;
      return this;
    }

    /**
     * @param recheck the longest a waiter sleeps without a release notification, from 1ms to 1h
     * @return this builder
     */
    public Builder recheck(Duration recheck) {
      this.recheck = checkRecheck(recheck);
      return this;
    }

    /**
     * @param floor added to every fencing token the client hands out, from 0 to 2^62 (see {@link
     *     LockConfig#fencingFloor()}); overrides {@code fencing-floor} given as a string
     * @return this builder
     * @throws IllegalArgumentException if {@code floor} is out of range
     */
    public Builder fencingFloor(long floor) {
      this.fencingFloor = checkFencingFloor(floor);
      return this;
    }

    /**
     * @param application the application's name written into every lease (see {@link
     *     LockConfig#application()}); overrides {@code application} given as a string
     * @return this builder
     * @throws IllegalArgumentException if it is not 1 to 40 letters, digits, {@code .}, {@code _}
     *     and {@code -}
     */
    public Builder application(String application) {
      this.application = checkApplication(application);
      return this;
    }

    /**
     * @param droppedLeases what becomes of a lease the application drops without releasing it (see
     *     {@link LockConfig#droppedLeases()}); overrides {@code dropped-leases} given as a string
     * @return this builder
     */
    public Builder droppedLeases(DroppedLeases droppedLeases) {
      this.droppedLeases =
          Objects.requireNonNull(
              droppedLeases, "`droppedLeases` was null but it must be RELEASE, TRACE or KEEP");
      return this;
    }

    /**
     * @param events the listener for lock events
     * @return this builder
     */
    public Builder events(LockEvents events) {
      this.events = Objects.requireNonNull(events, "events");
      return this;
    }

    /**
     * @return the configuration
     * @throws LockConfigurationException listing every problem found
     */
    public LockConfig build() {
      return build(new ArrayList<>());
    }

    private LockConfig build(List<String> problems) {
      LockUri parsed = null;
      Map<String, String> merged = new LinkedHashMap<>();
      if (uri == null) {
        if (problems.isEmpty()) {
          problems.add(
              "`uri` was missing but it must be a lock URI such as redis://localhost:6379 or"
                  + " local:");
        }
      } else {
        try {
          parsed = LockUri.parse(uri);
          merged.putAll(parsed.query());
        } catch (IllegalArgumentException e) {
          problems.add(e.getMessage());
        }
      }
      merged.putAll(options);

      LockOptions.Builder opts = LockOptions.builder();
      String leaseText = merged.remove(LEASE);
      if (leaseText != null) {
        try {
          opts.lease(Durations.parse(leaseText));
        } catch (IllegalArgumentException e) {
          problems.add(
              "`lease` was '"
                  + leaseText
                  + "' but it must be a duration from 1ms to 7d, such as 30s");
        }
      }
      Boolean renewText = bool(RENEW, merged.remove(RENEW), problems);
      if (renewText != null) {
        opts.autoRenew(renewText);
      }
      Boolean reentrantText = bool(REENTRANT, merged.remove(REENTRANT), problems);
      if (reentrantText != null) {
        opts.reentrant(reentrantText);
      }
      Duration recheckValue = recheck;
      String recheckText = merged.remove(RECHECK);
      if (recheckText != null && recheckValue == null) {
        try {
          recheckValue = checkRecheck(Durations.parse(recheckText));
        } catch (IllegalArgumentException e) {
          problems.add(
              "`recheck` was '"
                  + recheckText
                  + "' but it must be a duration from 1ms to 1h, such as 1s");
        }
      }
      Long floorValue = fencingFloor;
      String floorText = merged.remove(FENCING_FLOOR);
      if (floorText != null && floorValue == null) {
        try {
          floorValue = checkFencingFloor(Long.parseLong(floorText.trim()));
        } catch (IllegalArgumentException e) {
          problems.add(
              "`fencing-floor` was '"
                  + floorText
                  + "' but it must be a whole number from 0 to "
                  + MAX_FENCING_FLOOR
                  + ": the highest fencing token a resource stored under the backend used before");
        }
      }
      String applicationValue = application;
      String applicationText = merged.remove(APPLICATION);
      if (applicationText != null && applicationValue == null) {
        try {
          applicationValue = checkApplication(applicationText);
        } catch (IllegalArgumentException e) {
          problems.add(e.getMessage());
        }
      }
      DroppedLeases droppedValue = droppedLeases;
      String droppedText = merged.remove(DROPPED_LEASES);
      if (droppedText != null && droppedValue == null) {
        String t = droppedText.trim().toUpperCase(Locale.ROOT);
        if (t.equals("RELEASE") || t.equals("TRACE") || t.equals("KEEP")) {
          droppedValue = DroppedLeases.valueOf(t);
        } else {
          problems.add(
              "`dropped-leases` was '"
                  + (droppedText.length() > 40 ? droppedText.substring(0, 40) + "…" : droppedText)
                  + "' but it must be release (the default), trace or keep");
        }
      }
      String provider = merged.remove(PROVIDER);
      if (provider != null && provider.isBlank()) {
        problems.add("`provider` was '' but it must be the class name of a LockProvider");
        provider = null;
      }
      if (!problems.isEmpty()) {
        throw new LockConfigurationException(problems);
      }
      if (lease != null) {
        opts.lease(lease);
      }
      if (autoRenew != null) {
        opts.autoRenew(autoRenew);
      }
      if (reentrant != null) {
        opts.reentrant(reentrant);
      }
      LockOptions defaults = opts.build();
      Set<String> lenientKeys = new LinkedHashSet<>(lenient);
      lenientKeys.retainAll(merged.keySet());
      return new LockConfig(
          parsed,
          defaults,
          recheckValue == null ? Duration.ofSeconds(1) : recheckValue,
          provider,
          floorValue == null ? 0 : floorValue,
          applicationValue == null ? Holder.defaultApplication() : applicationValue,
          droppedValue == null ? DroppedLeases.RELEASE : droppedValue,
          Collections.unmodifiableMap(merged),
          Collections.unmodifiableSet(lenientKeys),
          events);
    }

    private static Boolean bool(String key, String text, List<String> problems) {
      if (text == null) {
        return null;
      }
      if (text.equalsIgnoreCase("true")) {
        return Boolean.TRUE;
      }
      if (text.equalsIgnoreCase("false")) {
        return Boolean.FALSE;
      }
      problems.add("`" + key + "` was '" + text + "' but it must be true or false");
      return null;
    }
  }

  static String checkApplication(String application) {
    Objects.requireNonNull(
        application,
        "`application` was null but it must be 1 to 40 letters, digits, '.', '_' and '-'");
    if (!Holder.validApplication(application)) {
      throw new IllegalArgumentException(
          "`application` was '"
              + (application.length() > 80 ? application.substring(0, 80) + "…" : application)
              + "' but it must be 1 to 40 letters, digits, '.', '_' and '-', such as"
              + " orders-service");
    }
    return application;
  }

  static long checkFencingFloor(long floor) {
    if (floor < 0 || floor > MAX_FENCING_FLOOR) {
      throw new IllegalArgumentException(
          "`fencing-floor` was "
              + floor
              + " but it must be a whole number from 0 to "
              + MAX_FENCING_FLOOR);
    }
    return floor;
  }

  static Duration checkRecheck(Duration recheck) {
    Objects.requireNonNull(recheck, "`recheck` was null but it must be a duration from 1ms to 1h");
    if (recheck.compareTo(MIN_RECHECK) < 0 || recheck.compareTo(MAX_RECHECK) > 0) {
      throw new IllegalArgumentException(
          "`recheck` was '"
              + Durations.format(recheck)
              + "' but it must be a duration from 1ms to 1h");
    }
    return recheck;
  }
}
