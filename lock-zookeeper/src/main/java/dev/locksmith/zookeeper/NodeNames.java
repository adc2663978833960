package dev.locksmith.zookeeper;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Comparator;

/**
 * How lock names and owners become ZooKeeper node names. A lock name may hold '/', any Unicode
 * and characters ZooKeeper refuses in paths, so it is written as one node name: the UTF-8 bytes
 * of letters, digits, '-', '_' and a '.' that is not first stay as they are; every other byte is
 * {@code %XX}. The mapping is one-to-one, so two names never share a node, and the result is never
 * "." or "..".
 */
final class NodeNames {
  private static final char[] HEX = "0123456789ABCDEF".toCharArray();
  /** Our part of a waiter's node name; Curator puts its protection prefix before it, ZooKeeper the sequence after. */
  static final String LOCK_MARK = "lock-";
  private static final int SEQUENCE_DIGITS = 10;
  /**
   * The persistent node that keeps a lock held after its holder gave it up with a hold
   * ({@code releaseAfter}). It has no sequence number and no protection prefix, so it can never be
   * a waiter's node, and it sorts before every waiter: while it stands, nobody is first.
   */
  static final String HOLD = "hold";

  /**
   * Orders a lock's children: the {@link #HOLD} node first, then waiter nodes by the sequence
   * number ZooKeeper appended; odd names last, by name.
   */
  static final Comparator<String> BY_SEQUENCE = Comparator.comparing((String node) -> !HOLD.equals(node))
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
      boolean plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
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
    String base = "-" + waiterBase(ownerId);
    int at = nodeName.lastIndexOf(base);
    return at >= 0 && nodeName.length() - at - base.length() == SEQUENCE_DIGITS;
  }

  /**
   * @param nodeName a child of a lock's parent node
   * @return the sequence number ZooKeeper appended, or {@link Long#MAX_VALUE} for a name without one
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
