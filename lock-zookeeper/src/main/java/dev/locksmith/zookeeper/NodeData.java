package dev.locksmith.zookeeper;

import java.nio.charset.StandardCharsets;
import org.apache.zookeeper.data.Stat;

/**
 * What the head node of a lock (the holder's node, or the {@link NodeNames#HOLD} node) says: the
 * owner id, and optionally how many milliseconds after the node's last write it expires. The expiry
 * is relative on purpose: the node's {@link Stat#getMtime() mtime} is set by the ZooKeeper leader
 * when it proposes the write, so "mtime + ttl" is a point on the leader's clock, and waiters
 * compare it with the mtime of a write of their own, never with a client clock.
 *
 * <p>Written as the owner id alone (no expiry: held while the session lives), or as the owner id, a
 * newline and {@code expires-after-ms=<n>}.
 */
final class NodeData {
  private static final String EXPIRY_MARK = "\nexpires-after-ms=";

  /** No expiry: the node stands until it is deleted or its session ends. */
  static final long NEVER = -1;

  final String owner;

  /** Milliseconds after the node's mtime at which it expires, or {@link #NEVER}. */
  final long expiresAfterMillis;

  private NodeData(String owner, long expiresAfterMillis) {
    this.owner = owner;
    this.expiresAfterMillis = expiresAfterMillis;
  }

  /**
   * @param owner an owner id
   * @return the data of a node that never expires by itself
   */
  static byte[] plain(String owner) {
    return owner.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * @param owner an owner id
   * @param millis how long after this write the node expires, at least 1
   * @return the data of a node that expires {@code millis} after the write that stores it
   */
  static byte[] expiring(String owner, long millis) {
    if (millis < 1) {
      throw new IllegalArgumentException("`millis` was " + millis + " but it must be at least 1");
    }
    return (owner + EXPIRY_MARK + millis).getBytes(StandardCharsets.UTF_8);
  }

  /**
   * @param data a head node's data; null or empty for a node without an owner
   * @return what it says; data this class did not write reads as an owner that never expires
   */
  static NodeData parse(byte[] data) {
    if (data == null || data.length == 0) {
      return new NodeData("", NEVER);
    }
    String text = new String(data, StandardCharsets.UTF_8);
    int at = text.lastIndexOf(EXPIRY_MARK);
    if (at < 0) {
      return new NodeData(text, NEVER);
    }
    String digits = text.substring(at + EXPIRY_MARK.length());
    try {
      long millis = Long.parseLong(digits);
      return millis < 1 ? new NodeData(text, NEVER) : new NodeData(text.substring(0, at), millis);
    } catch (NumberFormatException e) {
      return new NodeData(text, NEVER);
    }
  }

  /**
   * @return whether the node expires by itself
   */
  boolean expires() {
    return expiresAfterMillis != NEVER;
  }

  /**
   * @param stat the node's stat, read with this data
   * @return when it expires on the leader's clock (epoch milliseconds); only if {@link #expires()}
   */
  long expiresAt(Stat stat) {
    return stat.getMtime() + expiresAfterMillis;
  }
}
