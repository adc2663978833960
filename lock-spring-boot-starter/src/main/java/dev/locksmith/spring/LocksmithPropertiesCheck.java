package dev.locksmith.spring;

import dev.locksmith.LockConfig;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import dev.locksmith.spi.LockProvider;
import java.beans.PropertyDescriptor;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.BeanUtils;
import org.springframework.boot.context.properties.bind.AbstractBindHandler;
import org.springframework.boot.context.properties.bind.BindContext;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.ResolvableType;
import org.springframework.core.env.Environment;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * Refuses, at start, every {@code locksmith.*} property that {@link LocksmithProperties} does not
 * bind, and every backend option the client's scheme does not understand: a misspelt {@code
 * locksmith.url} would otherwise start the application on {@code local:}, with no locking between
 * JVMs.
 *
 * <p>Which names are known is Spring Boot's own answer: {@link LocksmithProperties} is bound from
 * the {@link Environment} with a {@link
 * org.springframework.boot.context.properties.bind.BindHandler} that records every name the binder
 * tries, and every {@link ConfigurationPropertyName} under {@code locksmith} in an iterable source
 * (relaxed forms included: {@code LOCKSMITH_URI}, {@code locksmith.clientName}, {@code
 * locksmith.clients[orders].uri}) must be one of them. Properties set in the process's environment
 * or as JVM system properties, which other tools share ({@code LOCKSMITH_*} variables of scripts,
 * {@code -Dlocksmith.*} of test runners), are refused only when they are a likely typo of a
 * Locksmith property; others are ignored there. Values of unknown properties are never shown: a
 * misspelt {@code pasword} may hold a secret.
 */
final class LocksmithPropertiesCheck {
  private static final Logger LOG = LoggerFactory.getLogger(LocksmithPropertiesCheck.class);
  private static final String PREFIX = "locksmith";
  private static final ConfigurationPropertyName ROOT = ConfigurationPropertyName.of(PREFIX);

  /** Settings every client understands (LockConfig's), valid in any options map. */
  static final Set<String> CLIENT_SETTINGS =
      new TreeSet<>(
          List.of(
              "lease",
              "renew",
              "reentrant",
              "recheck",
              "provider",
              "fencing-floor",
              "application",
              "dropped-leases"));

  /** A map key in a template: a client's name in the middle, an option's key at the end. */
  private static final String ANY = "*";

  private static final int MAX_EDITS = 2;

  /** The properties {@link LocksmithProperties} binds, {@code *} standing for a map key. */
  private static final List<String> TEMPLATES = templates(LocksmithProperties.class, PREFIX + ".");

  private LocksmithPropertiesCheck() {}

  /**
   * @param env the application's environment
   * @throws LockConfigurationException naming every unknown {@code locksmith.*} property by its
   *     full name, with a suggestion where one is close and the valid properties otherwise
   */
  static void check(Environment env) {
    Names names = new Names();
    LocksmithProperties bound =
        Binder.get(env)
            .bind(PREFIX, Bindable.of(LocksmithProperties.class), names)
            .orElseGet(LocksmithProperties::new);
    Map<String, String> problems = new LinkedHashMap<>();
    for (ConfigurationPropertySource source : ConfigurationPropertySources.get(env)) {
      if (source instanceof IterableConfigurationPropertySource iterable) {
        checkNames(iterable, names, problems);
      }
    }
    // on the application's DataSource the options are the JDBC backend's, whatever the database
    checkOptions(
        PREFIX + ".",
        bound.getJdbc().isUseApplicationDatasource() ? "jdbc:h2:mem:options" : bound.getUri(),
        bound.getOptions(),
        problems);
    bound
        .getClients()
        .forEach(
            (name, client) ->
                checkOptions(
                    PREFIX + ".clients." + name + ".",
                    client.getUri(),
                    client.getOptions(),
                    problems));
    if (!problems.isEmpty()) {
      throw new LockConfigurationException(new ArrayList<>(problems.values()));
    }
  }

  private static void checkNames(
      IterableConfigurationPropertySource source, Names names, Map<String, String> problems) {
    boolean environment = source.getUnderlyingSource() instanceof SystemEnvironmentPropertySource;
    boolean shared = environment || isSystemProperties(source);
    for (ConfigurationPropertyName name : source) {
      if (!ROOT.isAncestorOf(name) || names.known(name, environment)) {
        continue;
      }
      String shown = name.toString();
      String meant = suggestion(name);
      if (shared && meant == null) {
        LOG.debug(
            "ignoring {} ({}): not a Locksmith property, and this source is shared with other"
                + " tools",
            shown,
            origin(source, name));
        continue;
      }
      String from = origin(source, name);
      problems.putIfAbsent(
          shown,
          "`"
              + shown
              + "`"
              + (from.isEmpty() ? "" : " (" + from + ")")
              + " is not a Locksmith property; "
              + (meant != null
                  ? "did you mean `" + meant + "`?"
                  : "valid properties are "
                      + TEMPLATES.stream()
                          .map(LocksmithPropertiesCheck::shown)
                          .collect(Collectors.joining(", "))));
    }
  }

  private static boolean isSystemProperties(ConfigurationPropertySource source) {
    return source.getUnderlyingSource() instanceof org.springframework.core.env.PropertySource<?> p
        && StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME.equals(p.getName());
  }

  /**
   * Where a property was set, such as {@code from class path resource [application.properties] -
   * 3:1}; never its value.
   */
  private static String origin(ConfigurationPropertySource source, ConfigurationPropertyName name) {
    try {
      ConfigurationProperty p = source.getConfigurationProperty(name);
      return p == null || p.getOrigin() == null ? "" : "from " + p.getOrigin();
    } catch (RuntimeException e) {
      return "";
    }
  }

  /**
   * Backend options of one client: the settings every client understands and the options of the
   * provider of the client's scheme. A key the provider passes on (JDBC driver properties) is
   * refused only when it is a typo of a setting every client understands, as {@code Locks.connect}
   * does.
   */
  private static void checkOptions(
      String prefix, String uri, Map<String, String> options, Map<String, String> problems) {
    if (options == null || options.isEmpty() || uri == null || uri.isBlank()) {
      return;
    }
    LockProvider provider;
    String scheme;
    try {
      LockConfig.Builder b = LockConfig.builder().uri(uri);
      if (options.get("provider") != null) {
        b.option("provider", options.get("provider"));
      }
      LockConfig config = b.build();
      scheme = config.uri().scheme();
      provider = Locks.provider(config);
    } catch (RuntimeException e) {
      return; // a bad URI or an unserved scheme: connecting reports it, naming the property
    }
    Set<String> valid = new TreeSet<>(CLIENT_SETTINGS);
    valid.addAll(provider.optionNames());
    for (String key : options.keySet()) {
      if (valid.contains(key)) {
        continue;
      }
      boolean passedOn = provider.acceptsOption(key);
      String meant = nearest(key, passedOn ? CLIENT_SETTINGS : valid);
      if (meant == null && passedOn) {
        continue;
      }
      String name = prefix + "options." + key;
      problems.putIfAbsent(
          name,
          "`"
              + name
              + "` is not a setting of scheme '"
              + scheme
              + "'; "
              + (meant != null
                  ? "did you mean `" + prefix + "options." + meant + "`?"
                  : "valid settings are "
                      + valid.stream()
                          .map(k -> prefix + "options." + k)
                          .collect(Collectors.joining(", "))));
    }
  }

  /**
   * @return the known property closest to {@code unknown} (at most two edits away, the name's map
   *     keys kept), or, for a setting every client understands written without its {@code options.}
   *     ({@code locksmith.provider}), that setting under {@code options}; else null
   */
  static String suggestion(ConfigurationPropertyName unknown) {
    List<String> elements = new ArrayList<>();
    for (int i = 0; i < unknown.getNumberOfElements(); i++) {
      elements.add(unknown.getElement(i, ConfigurationPropertyName.Form.DASHED));
    }
    String written = String.join(".", elements);
    String best = null;
    int bestEdits = MAX_EDITS + 1;
    for (String template : TEMPLATES) {
      String[] parts = template.split("\\.");
      if (parts.length != elements.size()) {
        continue;
      }
      StringBuilder candidate = new StringBuilder();
      for (int i = 0; i < parts.length; i++) {
        candidate
            .append(i == 0 ? "" : ".")
            .append(ANY.equals(parts[i]) ? elements.get(i) : parts[i]);
      }
      int edits = editDistance(written, candidate.toString());
      if (edits < bestEdits) {
        best = candidate.toString();
        bestEdits = edits;
      }
    }
    if (best == null && CLIENT_SETTINGS.contains(elements.get(elements.size() - 1))) {
      String parent = String.join(".", elements.subList(0, elements.size() - 1));
      if (TEMPLATES.contains(
          parent.replaceFirst("^" + PREFIX + "\\.clients\\.[^.]+$", PREFIX + ".clients." + ANY)
              + ".options."
              + ANY)) {
        best = parent + ".options." + elements.get(elements.size() - 1);
      }
    }
    return best;
  }

  /**
   * @return the one of {@code valid} equal to {@code key} ignoring case, else the closest at most
   *     two edits away, else null
   */
  static String nearest(String key, Set<String> valid) {
    String lower = key.toLowerCase(Locale.ROOT);
    String best = null;
    int bestEdits = MAX_EDITS + 1;
    for (String v : valid) {
      int edits = v.equals(lower) ? 0 : editDistance(v, lower);
      if (edits < bestEdits) {
        best = v;
        bestEdits = edits;
      }
    }
    return best;
  }

  /** Levenshtein distance: inserts, deletes and substitutions. */
  static int editDistance(String a, String b) {
    int[] previous = new int[b.length() + 1];
    int[] current = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      previous[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      current[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int replace = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        current[j] = Math.min(replace, Math.min(previous[j], current[j - 1]) + 1);
      }
      int[] t = previous;
      previous = current;
      current = t;
    }
    return previous[b.length()];
  }

  /**
   * @return {@code locksmith.clients.<name>.uri} for the template {@code locksmith.clients.*.uri}
   */
  private static String shown(String template) {
    return template
        .replace("." + ANY + ".", ".<name>.")
        .replaceAll("\\." + java.util.regex.Pattern.quote(ANY) + "$", ".<key>");
  }

  /**
   * @return the properties every bean property of {@code type} binds, in declaration order of their
   *     getters
   */
  static List<String> templates(Class<?> type, String prefix) {
    List<String> out = new ArrayList<>();
    for (PropertyDescriptor p : BeanUtils.getPropertyDescriptors(type)) {
      if (p.getReadMethod() == null || "class".equals(p.getName())) {
        continue;
      }
      String name = prefix + dashed(p.getName());
      ResolvableType t = ResolvableType.forMethodReturnType(p.getReadMethod());
      if (Map.class.isAssignableFrom(t.toClass())) {
        Class<?> value = t.asMap().getGeneric(1).toClass();
        if (isSettingsBean(value)) {
          out.addAll(templates(value, name + "." + ANY + "."));
        } else {
          out.add(name + "." + ANY);
        }
      } else if (isSettingsBean(t.toClass())) {
        out.addAll(templates(t.toClass(), name + "."));
      } else if (p.getWriteMethod() != null) {
        out.add(name);
      }
    }
    return List.copyOf(out);
  }

  private static boolean isSettingsBean(Class<?> type) {
    return type.getEnclosingClass() == LocksmithProperties.class;
  }

  /**
   * @return {@code client-name} for {@code clientName}, as Spring Boot names properties
   */
  private static String dashed(String camel) {
    StringBuilder out = new StringBuilder();
    for (char c : camel.toCharArray()) {
      if (Character.isUpperCase(c)) {
        out.append('-').append(Character.toLowerCase(c));
      } else {
        out.append(c);
      }
    }
    return out.toString();
  }

  /**
   * Records every name the binder tries while binding {@link LocksmithProperties}: the names it
   * knows, whether or not a value was found or could be converted. A bad value is not this check's
   * business (the binding proper reports it), so failures are ignored here.
   */
  static final class Names extends AbstractBindHandler {
    private final Set<ConfigurationPropertyName> tried = new HashSet<>();
    private final Set<String> squashed = new HashSet<>();

    @Override
    public <T> Bindable<T> onStart(
        ConfigurationPropertyName name, Bindable<T> target, BindContext context) {
      tried.add(name);
      squashed.add(squash(name));
      return super.onStart(name, target, context);
    }

    @Override
    public Object onFailure(
        ConfigurationPropertyName name, Bindable<?> target, BindContext context, Exception error) {
      return null;
    }

    /**
     * @param environment whether the name comes from environment variables, whose names cannot tell
     *     {@code .} from {@code -} ({@code LOCKSMITH_CLIENT_NAME} binds {@code
     *     locksmith.client-name})
     */
    boolean known(ConfigurationPropertyName name, boolean environment) {
      return tried.contains(name) || environment && squashed.contains(squash(name));
    }

    private static String squash(ConfigurationPropertyName name) {
      StringBuilder out = new StringBuilder();
      for (int i = 0; i < name.getNumberOfElements(); i++) {
        out.append(name.getElement(i, ConfigurationPropertyName.Form.UNIFORM));
      }
      return out.toString();
    }
  }
}
