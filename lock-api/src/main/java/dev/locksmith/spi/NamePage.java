package dev.locksmith.spi;

import java.util.List;
import java.util.Objects;

/**
 * One page of lock names a backend lists ({@link LockBackend#listNames}): names of exclusive locks
 * that may be held, and an opaque cursor for the next page. The core reads each name's state and
 * keeps the held ones, so a name of a lock that is free by then may be listed.
 */
public final class NamePage {
  private final List<String> names;
  private final String next;

  private NamePage(List<String> names, String next) {
    this.names = List.copyOf(names);
    this.next = next;
  }

  /**
   * @param names the names found, in any order (none is fine)
   * @param next the cursor of the next page, or null after the last; never empty
   * @return the page
   */
  public static NamePage of(List<String> names, String next) {
    Objects.requireNonNull(names, "names");
    if (next != null && next.isEmpty()) {
      throw new IllegalArgumentException("`next` was '' but it must be a cursor, or null");
    }
    return new NamePage(names, next);
  }

  /**
   * @return the names found
   */
  public List<String> names() {
    return names;
  }

  /**
   * @return the cursor of the next page, or null after the last
   */
  public String next() {
    return next;
  }
}
