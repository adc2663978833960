package dev.locksmith;

import java.util.List;

/**
 * The configuration cannot be used. Every problem found is reported at once, each in the form
 * {@code `lease` was '-5s' but it must be a positive duration such as 30s}, with secrets redacted.
 */
public final class LockConfigurationException extends LockException {
  private static final long serialVersionUID = 1L;

  private final List<String> problems;

  /**
   * @param problems one line per problem; at least one
   */
  public LockConfigurationException(List<String> problems) {
    super(
        problems.size() == 1
            ? "invalid lock configuration: " + problems.get(0)
            : "invalid lock configuration ("
                + problems.size()
                + " problems):\n  - "
                + String.join("\n  - ", problems));
    this.problems = List.copyOf(problems);
  }

  /**
   * @return every problem found, one line each
   */
  public List<String> problems() {
    return problems;
  }
}
