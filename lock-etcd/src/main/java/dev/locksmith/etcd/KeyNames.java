package dev.locksmith.etcd;

import io.etcd.jetcd.ByteSequence;
import java.nio.charset.StandardCharsets;

/**
 * The etcd key layout: {@code <prefix>/<encoded lock name>/<lease id>-<n>}, where {@code n} is the
 * lowest suffix that no other attempt on the same lease uses for that lock (names are reused). The
 * lock name is percent-encoded so that it holds no {@code /}: the range {@code <prefix>/<encoded
 * name>/} then holds the keys of exactly one lock, whatever names other locks have.
 *
 * <p>Semaphores and read-write locks live beside the locks under a first segment that starts with
 * {@code !}, which an encoded name never does ({@code !} is written {@code %21}), so that a lock, a
 * semaphore and a read-write lock of one name never share a key or a range: {@code
 * <prefix>/!sem/<encoded name>/<permits>/<lease id>-<n>} for a permit (the count every holder gave,
 * in its key's name), and {@code <prefix>/!rw/<encoded name>/r/<lease id>-<n>} or {@code
 * .../w/<lease id>-<n>} for a side of a read-write lock. The last segment is always {@code <lease
 * id>-<n>}, so every key tells the session lease it was created on.
 */
final class KeyNames {
  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  private KeyNames() {}

  /** Keeps letters, digits and {@code . _ -}; writes every other UTF-8 byte as {@code %XX}. */
  static String encode(String name) {
    byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
    StringBuilder sb = new StringBuilder(bytes.length + 16);
    for (byte b : bytes) {
      int c = b & 0xff;
      if ((c >= 'a' && c <= 'z')
          || (c >= 'A' && c <= 'Z')
          || (c >= '0' && c <= '9')
          || c == '.'
          || c == '_'
          || c == '-') {
        sb.append((char) c);
      } else {
        sb.append('%').append(HEX[c >> 4]).append(HEX[c & 0xf]);
      }
    }
    return sb.toString();
  }

  /**
   * @param encoded a name written by {@link #encode}
   * @return the name, or null if it is not one {@link #encode} writes
   */
  static String decode(String encoded) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(encoded.length());
    for (int i = 0; i < encoded.length(); i++) {
      char c = encoded.charAt(i);
      if (c == '%') {
        if (i + 2 >= encoded.length()) {
          return null;
        }
        int hi = Character.digit(encoded.charAt(i + 1), 16);
        int lo = Character.digit(encoded.charAt(i + 2), 16);
        if (hi < 0 || lo < 0) {
          return null;
        }
        out.write(hi * 16 + lo);
        i += 2;
      } else if (c < 128) {
        out.write(c);
      } else {
        return null;
      }
    }
    return new String(out.toByteArray(), StandardCharsets.UTF_8);
  }

  /**
   * @return the range prefix of one lock's keys, ending in {@code /}
   */
  static String lockPrefix(String prefix, String name) {
    return prefix + "/" + encode(name) + "/";
  }

  /**
   * @return the range prefix of one semaphore's keys, whatever their count, ending in {@code /}
   */
  static String semaphorePrefix(String prefix, String name) {
    return prefix + "/!sem/" + encode(name) + "/";
  }

  /**
   * @return the range prefix of one read-write lock's keys, both sides, ending in {@code /}
   */
  static String readWritePrefix(String prefix, String name) {
    return prefix + "/!rw/" + encode(name) + "/";
  }

  static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
