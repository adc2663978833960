package dev.locksmith.spring;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockConfigurationException;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.core.Ordered;

/**
 * Turns a start that failed on Locksmith's configuration or on a lock server it could not reach
 * into Spring Boot's "APPLICATION FAILED TO START" report: Locksmith's own message as the
 * description, and what to change as the action. Registered in {@code META-INF/spring.factories};
 * it answers only for failures caused by Locksmith, and before Spring Boot's general analyzers.
 */
final class LocksmithFailureAnalyzer implements FailureAnalyzer, Ordered {
  /**
   * A problem names its setting first, in backticks ({@link LockConfigurationException}'s form).
   */
  private static final Pattern NAMED = Pattern.compile("^`([^`]+)`");

  private static final Pattern MEANT = Pattern.compile("did you mean `([^`]+)`\\?");

  @Override
  public FailureAnalysis analyze(Throwable failure) {
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    for (Throwable t = failure; t != null && seen.put(t, Boolean.TRUE) == null; t = t.getCause()) {
      if (t instanceof ClientConnectException e) {
        return new FailureAnalysis(e.getMessage(), connectAction(e.property(), e.redactedUri()), e);
      }
      if (t instanceof LockConfigurationException e) {
        return new FailureAnalysis(e.getMessage(), configurationAction(e.problems()), e);
      }
      if (t instanceof BackendUnavailableException e) {
        return new FailureAnalysis(
            e.getMessage(),
            "Make sure the lock server named above is up and reachable from this host, or point the"
                + " lock URI (`locksmith.uri`, or `locksmith.clients.<name>.uri`) at one that is.",
            e);
      }
    }
    return null;
  }

  static String connectAction(String property, String redactedUri) {
    if (property.startsWith("locksmith.jdbc.")) {
      return "Make sure the database of "
          + redactedUri
          + " is up and reachable from this host (spring.datasource.*),"
          + " or set `"
          + property
          + "` to false and `locksmith.uri` to a lock server that is.";
    }
    return "Make sure the lock server at "
        + redactedUri
        + " is up and reachable from this host (address, port,"
        + " credentials, TLS), or change `"
        + property
        + "` to a server that is (`local:` for in-process locks"
        + " while developing).";
  }

  /**
   * One line per problem: rename a misspelt property to the one it suggests, else fix or remove the
   * one it names.
   */
  static String configurationAction(List<String> problems) {
    List<String> lines = new ArrayList<>();
    for (String problem : problems) {
      Matcher named = NAMED.matcher(problem);
      Matcher meant = MEANT.matcher(problem);
      if (named.find() && meant.find()) {
        lines.add("Rename `" + named.group(1) + "` to `" + meant.group(1) + "`, or remove it.");
      } else if (named.reset().find()) {
        lines.add("Fix or remove `" + named.group(1) + "` as described above.");
      } else {
        lines.add("Fix: " + problem);
      }
    }
    lines.add(
        "The locksmith.* properties are listed in the starter's README and completed by IDEs from"
            + " its configuration metadata.");
    return String.join("\n", lines);
  }

  /**
   * @return ahead of Spring Boot's own analyzers, which would report a Locksmith failure only as a
   *     bean that failed
   */
  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE + 100;
  }
}
