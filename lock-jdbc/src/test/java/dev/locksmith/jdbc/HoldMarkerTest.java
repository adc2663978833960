package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The owner column's value while a lock is held after release: recognisable, never an owner id the
 * core hands out, and within the column's 255 characters whatever the owner id's length.
 */
class HoldMarkerTest {
  @Test
  void aShortOwnerIdIsKeptWholeBehindThePrefix() {
    String marker = LeaseTable.holdMarker("4242-1a2b3c-1:7");
    assertThat(marker).isEqualTo(LeaseTable.HOLD_PREFIX + "4242-1a2b3c-1:7");
    assertThat(LeaseTable.isHold(marker)).isTrue();
    assertThat(LeaseTable.isHold("4242-1a2b3c-1:7")).as("an owner id").isFalse();
    assertThat(LeaseTable.isHold(null)).as("a free row").isFalse();
  }

  @Test
  void aLongOwnerIdIsCutToTheColumnNeverInsideACharacter() {
    String ascii = "o".repeat(LeaseTable.OWNER_COLUMN_CHARS);
    assertThat(LeaseTable.holdMarker(ascii))
        .hasSize(LeaseTable.OWNER_COLUMN_CHARS)
        .startsWith(LeaseTable.HOLD_PREFIX);

    // A surrogate pair straddling the cut: the marker ends before it rather than on half of it.
    String lock = "\uD83D\uDD12";
    int before = LeaseTable.OWNER_COLUMN_CHARS - LeaseTable.HOLD_PREFIX.length() - 1;
    String owner = "o".repeat(before) + lock + "tail";
    String marker = LeaseTable.holdMarker(owner);
    assertThat(marker).hasSize(LeaseTable.OWNER_COLUMN_CHARS - 1).endsWith("o");
    assertThat(Character.isHighSurrogate(marker.charAt(marker.length() - 1))).isFalse();

    String pairs = lock.repeat(LeaseTable.OWNER_COLUMN_CHARS);
    String cut = LeaseTable.holdMarker(pairs);
    assertThat(cut.codePointCount(0, cut.length()))
        .isLessThanOrEqualTo(LeaseTable.OWNER_COLUMN_CHARS);
    assertThat(cut.length()).isLessThanOrEqualTo(LeaseTable.OWNER_COLUMN_CHARS);
    assertThat(Character.isHighSurrogate(cut.charAt(cut.length() - 1))).isFalse();
  }
}
