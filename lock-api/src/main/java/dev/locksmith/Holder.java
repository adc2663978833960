package dev.locksmith;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * Who holds a lease, in words a person reads: the application, the host, the process id, the thread
 * that asked, and when it asked. Every client writes these into the owner id it gives the backend
 * with each lease, so every backend that stores the owner id (and {@link LockState#holder()} reads
 * it back) tells who holds a lock, a third party's too, with no code of its own.
 *
 * <p>An owner id written by Locksmith reads {@code application@host:thread:asked:client:lease}, for
 * example {@code orders@web-1:http-nio-8080-exec-3:mi1x2k7q:4242-9f3a1c2e-1:17}: {@code asked} is
 * the wall-clock time the acquire began, in milliseconds, base 36; {@code client} begins with the
 * process id. Each part holds only letters, digits, {@code .}, {@code _} and {@code -} (anything
 * else is written as {@code _}), and application, host and thread are cut to {@value #MAX_PART}
 * characters, so an owner id stays below 200 characters. Nothing in it is a secret: the
 * application's name is what {@code application} sets (see {@link LockConfig#application()}), the
 * host's name is the one the operating system gives.
 *
 * <p>{@link #askedAt()} is when the holder's acquire call began, not when it was granted: for a
 * lock taken without waiting they are one round trip apart; a waiter was granted later.
 */
public final class Holder {
  /** The longest an application, host or thread name is kept. */
  public static final int MAX_PART = 40;

  private final String ownerId;
  private final String application;
  private final String host;
  private final long pid;
  private final String thread;
  private final Instant askedAt;
  private final String clientId;

  private Holder(
      String ownerId,
      String application,
      String host,
      long pid,
      String thread,
      Instant askedAt,
      String clientId) {
    this.ownerId = ownerId;
    this.application = application;
    this.host = host;
    this.pid = pid;
    this.thread = thread;
    this.askedAt = askedAt;
    this.clientId = clientId;
  }

  /**
   * Reads an owner id that a Locksmith client wrote.
   *
   * @param ownerId an owner id, as {@link LockState#holder()} gives it
   * @return who it names, or empty if it is not in the form a Locksmith client writes (an owner id
   *     of another tool, or of a client older than this form)
   */
  public static Optional<Holder> parse(String ownerId) {
    if (ownerId == null) {
      return Optional.empty();
    }
    String[] parts = ownerId.split(":", -1);
    if (parts.length != 5) {
      return Optional.empty();
    }
    int at = parts[0].lastIndexOf('@');
    int dash = parts[3].indexOf('-');
    if (at <= 0 || at == parts[0].length() - 1 || parts[2].isEmpty() || dash <= 0) {
      return Optional.empty();
    }
    try {
      long pid = Long.parseLong(parts[3].substring(0, dash));
      long asked = Long.parseLong(parts[2], Character.MAX_RADIX);
      Long.parseLong(parts[4]);
      if (pid <= 0 || asked < 0 || parts[1].isEmpty()) {
        return Optional.empty();
      }
      return Optional.of(
          new Holder(
              ownerId,
              parts[0].substring(0, at),
              parts[0].substring(at + 1),
              pid,
              parts[1],
              Instant.ofEpochMilli(asked),
              parts[3]));
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }

  /**
   * @param application the client's application name
   * @param thread the thread that asks
   * @param askedAtMillis when it asks, in milliseconds since the epoch
   * @param clientId the client's id (beginning with the process id)
   * @param lease the lease's number within the client
   * @return the owner id of a new lease
   */
  static String ownerId(
      String application, String thread, long askedAtMillis, String clientId, long lease) {
    return application
        + "@"
        + HOST
        + ":"
        + part(thread)
        + ":"
        + Long.toString(askedAtMillis, Character.MAX_RADIX)
        + ":"
        + clientId
        + ":"
        + lease;
  }

  /** This machine's name, read once: from the kernel on Linux, else the environment. */
  static final String HOST = part(hostName());

  private static String hostName() {
    try {
      Path kernel = Path.of("/proc/sys/kernel/hostname");
      if (Files.isReadable(kernel)) {
        String name = new String(Files.readAllBytes(kernel), StandardCharsets.UTF_8).trim();
        if (!name.isEmpty()) {
          return name;
        }
      }
    } catch (IOException | RuntimeException e) {
      // fall through to the environment: never a DNS lookup, which can block for seconds
    }
    for (String variable : new String[] {"HOSTNAME", "COMPUTERNAME"}) {
      String name = System.getenv(variable);
      if (name != null && !name.isBlank()) {
        return name.trim();
      }
    }
    return "unknown-host";
  }

  /**
   * The application name a client uses when {@code application} is not set: the jar's name for
   * {@code java -jar orders.jar}, else the main class's simple name, else {@code java}.
   */
  static String defaultApplication() {
    String command = System.getProperty("sun.java.command", "").trim();
    String first = command.isEmpty() ? "" : command.split("\\s+", 2)[0];
    String name;
    if (first.toLowerCase(Locale.ROOT).endsWith(".jar")) {
      String file = first.substring(Math.max(first.lastIndexOf('/'), first.lastIndexOf('\\')) + 1);
      name = file.substring(0, file.length() - 4);
    } else {
      name = first.substring(first.lastIndexOf('.') + 1);
    }
    name = part(name);
    return name.isEmpty() ? "java" : name;
  }

  /**
   * @param text a name
   * @return it with every character but letters, digits, {@code .}, {@code _} and {@code -} written
   *     as {@code _}, cut to {@link #MAX_PART} characters
   */
  static String part(String text) {
    StringBuilder b = new StringBuilder(Math.min(text.length(), MAX_PART));
    for (int i = 0; i < text.length() && b.length() < MAX_PART; i++) {
      char c = text.charAt(i);
      b.append(plain(c) ? c : '_');
    }
    return b.toString();
  }

  /**
   * @param name an application name
   * @return whether it may be used as is: 1 to {@link #MAX_PART} letters, digits, {@code .}, {@code
   *     _} and {@code -}
   */
  static boolean validApplication(String name) {
    if (name.isEmpty() || name.length() > MAX_PART) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      if (!plain(name.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  private static boolean plain(char c) {
    return c >= 'a' && c <= 'z'
        || c >= 'A' && c <= 'Z'
        || c >= '0' && c <= '9'
        || c == '.'
        || c == '_'
        || c == '-';
  }

  /**
   * @return the owner id this was read from
   */
  public String ownerId() {
    return ownerId;
  }

  /**
   * @return the holder's application name
   */
  public String application() {
    return application;
  }

  /**
   * @return the name of the holder's host
   */
  public String host() {
    return host;
  }

  /**
   * @return the holder's process id
   */
  public long pid() {
    return pid;
  }

  /**
   * @return the name of the thread that asked for the lease
   */
  public String thread() {
    return thread;
  }

  /**
   * @return the id of the holder's client ({@link dev.locksmith.spi.BackendContext#clientId()}):
   *     the same for every lease of one client, different for every client
   */
  public String clientId() {
    return clientId;
  }

  /**
   * @return when the holder's acquire call began (the grant came then or later)
   */
  public Instant askedAt() {
    return askedAt;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Holder && ((Holder) o).ownerId.equals(ownerId);
  }

  @Override
  public int hashCode() {
    return Objects.hash(ownerId);
  }

  /**
   * @return for example {@code orders on web-1 (pid 4242, thread main) asked at
   *     2026-11-28T06:00:00.125Z}
   */
  @Override
  public String toString() {
    return application
        + " on "
        + host
        + " (pid "
        + pid
        + ", thread "
        + thread
        + ") asked at "
        + askedAt;
  }
}
