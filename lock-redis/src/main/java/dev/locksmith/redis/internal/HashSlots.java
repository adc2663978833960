package dev.locksmith.redis.internal;

import java.nio.charset.StandardCharsets;

/**
 * Redis Cluster's hash slots, computed here as the server does: CRC16 (the XMODEM variant:
 * polynomial 0x1021, initial value 0, no reflection) of the key's hash tag, modulo 16,384. The hash
 * tag is the text between the first '{' and the next '}' when that text is not empty, else the
 * whole key. Keys are hashed as the UTF-8 bytes Jedis sends.
 *
 * <p>Also the reverse: for each slot a short, fixed tag that hashes to it, so that a key can be put
 * in any slot on purpose. The tags are found once by counting through {@link #ALPHABET} in a fixed
 * order; they must never change, since a per-slot key named after a different tag would be a
 * different key (and a fence counter would start again).
 */
final class HashSlots {
  /** Slots of a Redis Cluster. */
  static final int COUNT = 16_384;

  /** The characters of the slot tags, in counting order: printable, no brace, no space. */
  static final String ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

  private static final int[] TABLE = new int[256];

  static {
    for (int b = 0; b < 256; b++) {
      int crc = b << 8;
      for (int bit = 0; bit < 8; bit++) {
        crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
      }
      TABLE[b] = crc & 0xffff;
    }
  }

  /** For each slot, the ordinal of its tag in the counting order of {@link #tagOfOrdinal}. */
  private static final int[] TAG_ORDINALS = findTags();

  private HashSlots() {}

  /**
   * @param bytes the bytes to hash
   * @param from the first byte
   * @param to after the last byte
   * @return CRC16-XMODEM of {@code bytes[from, to)}, 0 to 65,535
   */
  static int crc16(byte[] bytes, int from, int to) {
    int crc = 0;
    for (int i = from; i < to; i++) {
      crc = ((crc << 8) ^ TABLE[((crc >>> 8) ^ bytes[i]) & 0xff]) & 0xffff;
    }
    return crc;
  }

  /**
   * @param key a key, as Java text (sent as UTF-8)
   * @return the Redis Cluster hash slot of the key, 0 to 16,383
   */
  static int of(String key) {
    byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
    int open = indexOf(bytes, (byte) '{', 0);
    if (open >= 0) {
      int close = indexOf(bytes, (byte) '}', open + 1);
      if (close > open + 1) {
        return crc16(bytes, open + 1, close) & (COUNT - 1);
      }
    }
    return crc16(bytes, 0, bytes.length) & (COUNT - 1);
  }

  /**
   * @param slot a slot, 0 to 16,383
   * @return a short text of {@link #ALPHABET} characters whose CRC16 is in that slot
   */
  static String tag(int slot) {
    return tagOfOrdinal(TAG_ORDINALS[slot]);
  }

  private static int indexOf(byte[] bytes, byte b, int from) {
    for (int i = from; i < bytes.length; i++) {
      if (bytes[i] == b) {
        return i;
      }
    }
    return -1;
  }

  /**
   * The counting order: all one-character texts, then all two-character ones, and so on, each
   * length in the order of a number written in base 36 with {@link #ALPHABET} as digits.
   */
  private static String tagOfOrdinal(int ordinal) {
    int base = ALPHABET.length();
    int length = 1;
    int ofLength = base;
    while (ordinal >= ofLength) {
      ordinal -= ofLength;
      ofLength *= base;
      length++;
    }
    char[] text = new char[length];
    for (int i = length - 1; i >= 0; i--) {
      text[i] = ALPHABET.charAt(ordinal % base);
      ordinal /= base;
    }
    return new String(text);
  }

  private static int[] findTags() {
    int[] ordinals = new int[COUNT];
    java.util.Arrays.fill(ordinals, -1);
    int found = 0;
    for (int ordinal = 0; found < COUNT; ordinal++) {
      byte[] bytes = tagOfOrdinal(ordinal).getBytes(StandardCharsets.US_ASCII);
      int slot = crc16(bytes, 0, bytes.length) & (COUNT - 1);
      if (ordinals[slot] < 0) {
        ordinals[slot] = ordinal;
        found++;
      }
    }
    return ordinals;
  }
}
