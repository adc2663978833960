package dev.locksmith.zookeeper;

import dev.locksmith.spi.Claim;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Comparator;

/**
 * How lock names and owners become ZooKeeper node names. A lock name may hold '/', any Unicode and
 * characters ZooKeeper refuses in paths, so it is written as one node name: the UTF-8 bytes of
 * letters, digits, '-', '_' and a '.' that is not first stay as they are; every other byte is
 * {@code %XX}. The mapping is one-to-one, so two names never share a node, and the result is never
 * "." or "..".
 */
final class NodeNames {
  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  /**
   * Our part of a waiter's node name; Curator puts its protection prefix before it, ZooKeeper the
   * sequence after.
   */
  static final String LOCK_MARK = "lock-";

  private static final int SEQUENCE_DIGITS = 10;

  /** What Curator's protected mode puts before a node's random id. */
  private static final String PROTECTION_PREFIX = "_c_";

  /** The length of Curator's protection: the prefix, a UUID of 36 characters and a '-'. */
  private static final int PROTECTED_LENGTH = PROTECTION_PREFIX.length() + 36 + 1;

  /** Our part of a semaphore waiter's node name, before its owner. */
  static final String PERMIT_MARK = "permit-";

  /** Our part of a read-write lock waiter's node name, before its owner. */
  static final String RW_MARK = "rw-";

  /** What comes before a permit node's count, after its owner. */
  private static final String COUNT_MARK = "-of-";

  private static final String READ_TAIL = "read";
  private static final String WRITE_TAIL = "write";

  /** The node under the namespace that holds one parent node per semaphore. */
  static final String SEMAPHORES = ".semaphores";

  /** The node under the namespace that holds one parent node per read-write lock. */
  static final String READ_WRITE_LOCKS = ".rwlocks";

  /**
   * The persistent node that keeps a lock held after its holder gave it up with a hold ({@code
   * releaseAfter}). It has no sequence number and no protection prefix, so it can never be a
   * waiter's node, and it sorts before every waiter: while it stands, nobody is first.
   */
  static final String HOLD = "hold";

  /**
   * Orders a lock's children: the {@link #HOLD} node first, then waiter nodes by the sequence
   * number ZooKeeper appended; odd names last, by name.
   */
  static final Comparator<String> BY_SEQUENCE =
      Comparator.comparing((String node) -> !HOLD.equals(node))
          .thenComparingLong(NodeNames::sequence)
          .thenComparing(Comparator.naturalOrder());

  private NodeNames() {}

  /**
   * @param text a lock name or owner id
   * @return a single valid node name
   */
  static String encode(String text) {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    StringBuilder b = new StringBuilder(bytes.length + 16);
    for (int i = 0; i < bytes.length; i++) {
      int c = bytes[i] & 0xff;
      boolean plain =
          c >= 'a' && c <= 'z'
              || c >= 'A' && c <= 'Z'
              || c >= '0' && c <= '9'
              || c == '-'
              || c == '_'
              || c == '.' && i > 0;
      if (plain) {
        b.append((char) c);
      } else {
        b.append('%').append(HEX[c >> 4]).append(HEX[c & 15]);
      }
    }
    return b.toString();
  }

  /**
   * @param encoded a node name made by {@link #encode(String)}
   * @return the text it was made from
   * @throws IllegalArgumentException if it was not made by {@link #encode(String)}
   */
  static String decode(String encoded) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(encoded.length());
    for (int i = 0; i < encoded.length(); i++) {
      char c = encoded.charAt(i);
      if (c == '%') {
        if (i + 2 >= encoded.length()) {
          throw new IllegalArgumentException("'" + encoded + "' ends inside an escape");
        }
        out.write(Integer.parseInt(encoded.substring(i + 1, i + 3), 16));
        i += 2;
      } else {
        out.write(c);
      }
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  /**
   * @param ownerId the owner id of an attempt
   * @return the node name Curator and ZooKeeper decorate: {@code lock-<owner>-}
   */
  static String waiterBase(String ownerId) {
    return LOCK_MARK + encode(ownerId) + "-";
  }

  /**
   * @param nodeName a child of a lock's parent node
   * @param ownerId an owner id
   * @return whether the child was created for that owner
   */
  static boolean isWaiterOf(String nodeName, String ownerId) {
    return hasBase(nodeName, waiterBase(ownerId));
  }

  /**
   * @param nodeName a child of a resource's parent node
   * @param base the base name an attempt created its node with ({@link #waiterBase}, {@link
   *     #claimBase})
   * @return whether the child was created from that base: Curator's protection prefix, the base, a
   *     sequence number
   */
  static boolean hasBase(String nodeName, String base) {
    String marked = "-" + base;
    int at = nodeName.lastIndexOf(marked);
    return at >= 0 && nodeName.length() - at - marked.length() == SEQUENCE_DIGITS;
  }

  /**
   * The parent node of a resource's waiter nodes. Locks are children of the namespace; semaphores
   * and read-write locks of {@link #SEMAPHORES} and {@link #READ_WRITE_LOCKS}, whose names begin
   * with a '.' that {@link #encode} never leaves first, so no two kinds of resource share a node.
   *
   * @param name the resource's name
   * @param kind its kind
   * @return the path of its parent node, relative to the namespace
   */
  static String parent(String name, Claim.Kind kind) {
    switch (kind) {
      case PERMIT:
        return "/" + SEMAPHORES + "/" + encode(name);
      case READ:
      case WRITE:
        return "/" + READ_WRITE_LOCKS + "/" + encode(name);
      default:
        return "/" + encode(name);
    }
  }

  /**
   * The base of a node that claims a permit or a side, read back from the end of its name (the
   * owner id before it may hold '-'): {@code permit-<owner>-of-<permits>-} for a permit, {@code
   * rw-<owner>-read-} or {@code rw-<owner>-write-} for a side of a read-write lock.
   *
   * @param claim what the node claims; not {@link Claim#exclusive()}
   * @param ownerId the attempt's owner id
   * @return the base name Curator and ZooKeeper decorate
   */
  static String claimBase(Claim claim, String ownerId) {
    switch (claim.kind()) {
      case PERMIT:
        return PERMIT_MARK + encode(ownerId) + COUNT_MARK + claim.permits() + "-";
      case READ:
        return RW_MARK + encode(ownerId) + "-" + READ_TAIL + "-";
      case WRITE:
        return RW_MARK + encode(ownerId) + "-" + WRITE_TAIL + "-";
      default:
        throw new IllegalArgumentException(
            "`claim` was " + claim + " but it must be a permit or a side of a read-write lock");
    }
  }

  /**
   * @param nodeName a child of a semaphore's parent node
   * @return the count of permits its node was created with, or -1 if it is not a permit's node
   */
  static int permitsOf(String nodeName) {
    String tail = tail(nodeName);
    if (tail == null
        || tail.isEmpty()
        || tail.length() > 5
        || !tail.chars().allMatch(c -> c >= '0' && c <= '9')
        || !nodeName.contains("-" + PERMIT_MARK)) {
      return -1;
    }
    int of =
        nodeName.length()
            - SEQUENCE_DIGITS
            - 1
            - tail.length()
            - COUNT_MARK.length(); // where "-of-" must begin
    int permits = Integer.parseInt(tail);
    return of > 0
            && nodeName.startsWith(COUNT_MARK, of)
            && permits >= 1
            && permits <= Claim.MAX_PERMITS
        ? permits
        : -1;
  }

  /**
   * @param nodeName a child of a read-write lock's parent node
   * @return whether it is a reader's node; any other node with a sequence number counts as a
   *     writer's
   */
  static boolean isReader(String nodeName) {
    return READ_TAIL.equals(tail(nodeName)) && nodeName.contains("-" + RW_MARK);
  }

  /**
   * @return the part of a node name between the last '-' before the sequence number and it, or null
   */
  private static String tail(String nodeName) {
    if (sequence(nodeName) == Long.MAX_VALUE
        || nodeName.length() < SEQUENCE_DIGITS + 2
        || nodeName.charAt(nodeName.length() - SEQUENCE_DIGITS - 1) != '-') {
      return null;
    }
    String rest = nodeName.substring(0, nodeName.length() - SEQUENCE_DIGITS - 1);
    return rest.substring(rest.lastIndexOf('-') + 1);
  }

  /**
   * Who a node of a resource's queue stands for: its name without Curator's protection prefix
   * ({@code _c_<uuid>-}, our counting create names its nodes alike) and without the sequence number
   * ZooKeeper appended, which leaves the base an attempt made it from, with that attempt's owner id
   * in it. Two nodes of one caller (a create whose answer was lost, made after all) thus count
   * once.
   *
   * @param nodeName a child of a resource's parent node
   * @return the caller it stands for, or null for a node that is in nobody's queue: the {@link
   *     #HOLD} node, a node without a sequence number
   */
  static String caller(String nodeName) {
    if (HOLD.equals(nodeName) || sequence(nodeName) == Long.MAX_VALUE) {
      return null;
    }
    String base = nodeName.substring(0, nodeName.length() - SEQUENCE_DIGITS);
    return base.startsWith(PROTECTION_PREFIX)
            && base.length() > PROTECTED_LENGTH
            && base.charAt(PROTECTED_LENGTH - 1) == '-'
        ? base.substring(PROTECTED_LENGTH)
        : base;
  }

  /**
   * @param nodeName a child of a lock's parent node
   * @return the sequence number ZooKeeper appended, or {@link Long#MAX_VALUE} for a name without
   *     one
   */
  static long sequence(String nodeName) {
    if (nodeName.length() < SEQUENCE_DIGITS) {
      return Long.MAX_VALUE;
    }
    String digits = nodeName.substring(nodeName.length() - SEQUENCE_DIGITS);
    for (int i = 0; i < digits.length(); i++) {
      if (digits.charAt(i) < '0' || digits.charAt(i) > '9') {
        return Long.MAX_VALUE;
      }
    }
    return Long.parseLong(digits);
  }
}
