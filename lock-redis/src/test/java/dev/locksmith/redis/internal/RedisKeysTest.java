package dev.locksmith.redis.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Hash slots and the per-slot fence counters, without a server (RedisFenceCountersIT asks a real
 * one).
 */
public class RedisKeysTest {
  /**
   * Lock names that stress Redis's hash-tag rule: braces anywhere, empty tags, non-ASCII;
   * RedisFenceCountersIT uses them too.
   */
  public static final List<String> AWKWARD_NAMES =
      List.of(
          "plain",
          "}starts-with-brace",
          "{starts-with-open",
          "has{both}braces",
          "{x}",
          "{}",
          "}{",
          "a}b",
          "a}c",
          "ends-with-open{",
          "ключ 🔒",
          "order/42",
          " ",
          "x".repeat(300));

  @Test
  void crc16IsTheXmodemVariantThatRedisClusterSpecifies() {
    byte[] check = "123456789".getBytes(StandardCharsets.US_ASCII);
    assertThat(HashSlots.crc16(check, 0, check.length))
        .as("the check value of CRC16-XMODEM")
        .isEqualTo(0x31C3);
    assertThat(HashSlots.crc16(new byte[0], 0, 0)).isZero();
    // slots as the Redis Cluster documentation gives them
    assertThat(HashSlots.of("foo")).isEqualTo(12182);
    assertThat(HashSlots.of("bar")).isEqualTo(5061);
  }

  @Test
  void theHashTagRuleIsRedisClusters() {
    assertThat(HashSlots.of("{user1000}.following"))
        .isEqualTo(HashSlots.of("{user1000}.followers"))
        .isEqualTo(HashSlots.of("user1000"));
    assertThat(HashSlots.of("foo{}{bar}"))
        .as("an empty first tag: the whole key")
        .isNotEqualTo(HashSlots.of("bar"));
    assertThat(HashSlots.of("foo{{bar}}zap"))
        .as("the tag starts after the first '{'")
        .isEqualTo(HashSlots.of("{bar"));
    assertThat(HashSlots.of("foo{bar}{zap}"))
        .as("only the first tag counts")
        .isEqualTo(HashSlots.of("bar"));
    assertThat(HashSlots.of("no-close{bar"))
        .as("no '}': the whole key")
        .isEqualTo(HashSlots.of("no-close{bar"))
        .isNotEqualTo(HashSlots.of("bar"));
  }

  @Test
  void everySlotHasAShortTagOfItsOwn() {
    Set<String> tags = new HashSet<>();
    for (int slot = 0; slot < HashSlots.COUNT; slot++) {
      String tag = HashSlots.tag(slot);
      assertThat(tag).hasSizeBetween(1, 4).matches("[0-9a-z]+");
      assertThat(HashSlots.of(tag)).as("slot of tag '%s'", tag).isEqualTo(slot);
      tags.add(tag);
    }
    assertThat(tags).hasSize(HashSlots.COUNT);
  }

  @Test
  void theTagsNeverChange() {
    // a different tag would be a different counter key, and its slot's tokens would start again:
    // these are the tags every released version uses
    assertThat(
            List.of(
                HashSlots.tag(0),
                HashSlots.tag(1),
                HashSlots.tag(5061),
                HashSlots.tag(12182),
                HashSlots.tag(16383)))
        .containsExactly("1bz", "emj", "bar", "foo", "hia");
    RedisKeys keys = new RedisKeys("locksmith:");
    assertThat(keys.fenceCounterOfSlot(0)).isEqualTo("locksmith:fence:{1bz}");
    assertThat(keys.fenceCounter("order-42"))
        .isEqualTo("locksmith:fence:{" + HashSlots.tag(HashSlots.of("locksmith:order-42")) + "}");
  }

  @Test
  void aLocksCounterIsInTheSlotOfItsKeysWhateverTheName() {
    RedisKeys keys = new RedisKeys("ns:");
    for (String name : AWKWARD_NAMES) {
      int slot = HashSlots.of(keys.owner(name));
      assertThat(keys.slot(name)).as("slot of '%s'", name).isEqualTo(slot);
      assertThat(
              List.of(
                  HashSlots.of(keys.token(name)),
                  HashSlots.of(keys.legacyFence(name)),
                  HashSlots.of(keys.fenceCounter(name)),
                  HashSlots.of(keys.queue(name)),
                  HashSlots.of(keys.queueDeadlines(name))))
          .as("slots of the keys of '%s'", name)
          .containsOnly(slot);
      assertThat(keys.fenceCounter(name))
          .as("counter of '%s'", name)
          .startsWith("ns:fence:{")
          .endsWith("}")
          .doesNotContain(name);
    }
    // a '}' in the name ends the tag early, the same way in all the lock's keys: such locks share a
    // slot
    assertThat(keys.slot("a}b")).isEqualTo(keys.slot("a}c")).isEqualTo(HashSlots.of("ns:a"));
  }

  @Test
  void countersAreBoundedPerNamespaceAndNamespacesDoNotShare() {
    RedisKeys keys = new RedisKeys("ns:");
    Set<String> counters = new HashSet<>();
    for (int i = 0; i < 100_000; i++) {
      counters.add(keys.fenceCounter("order-" + i));
    }
    assertThat(counters)
        .as("counters of 100,000 names")
        .hasSizeLessThanOrEqualTo(HashSlots.COUNT)
        .hasSizeGreaterThan(16_000);
    assertThat(new RedisKeys("ns2:").fenceCounterOfSlot(7))
        .isNotEqualTo(keys.fenceCounterOfSlot(7))
        .startsWith("ns2:");
    // no lock key starts without '{', and every counter does: a counter never names a lock's key
    assertThat(keys.owner("fence:")).startsWith("{");
    assertThatThrownBy(() -> keys.fenceCounterOfSlot(16_384))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("slot was 16384")
        .hasMessageContaining("0 to 16383");
    assertThatThrownBy(() -> keys.fenceCounterOfSlot(-1))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
