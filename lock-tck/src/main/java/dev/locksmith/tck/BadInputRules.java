package dev.locksmith.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Rule 12: bad input, as tests: the rules of this group in {@code RULES.md}. The kit's
 * {@code @Nested} class {@link LockCompatibilityKit.BadInput} runs them against the backend under
 * test.
 */
interface BadInputRules extends KitRules {
  @Test
  @DisplayName(
      "12.1 MUST: bad lock names are rejected with a message naming `name`, and nothing is left"
          + " behind")
  default void rule12_1_badNames() throws Exception {
    LockClient c = client();
    assertThatThrownBy(() -> c.lock(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`name`");
    assertThatThrownBy(() -> c.lock(""))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`name`");
    assertThatThrownBy(() -> c.lock("x".repeat(256)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`name`")
        .hasMessageContaining("256");
    assertThatThrownBy(() -> c.lock("a\u0000b"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`name`")
        .hasMessageContaining("U+0000");
    assertThatThrownBy(() -> c.lock("line\nbreak"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`name`");
    assertThatThrownBy(() -> c.lock("ok", null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`options`");
    String name = name("after-bad-input");
    try (Lease lease = c.lock(name).acquire(Duration.ofSeconds(10))) {
      assertThat(lease.isValid()).as("the client still works after bad input").isTrue();
    }
  }

  @Test
  @DisplayName(
      "12.2 MUST: null and negative timeouts are rejected with a message naming `timeout`, and"
          + " nothing is left behind")
  default void rule12_2_badTimeouts() throws Exception {
    String name = name("bad-timeouts");
    DistributedLock lock = client().lock(name);
    Duration negative = Duration.ofSeconds(-5);
    assertThatThrownBy(() -> lock.acquire(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`timeout`");
    assertThatThrownBy(() -> lock.acquire(negative))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`timeout`")
        .hasMessageContaining("-5s");
    assertThatThrownBy(() -> lock.tryAcquire(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`timeout`");
    assertThatThrownBy(() -> lock.tryAcquire(negative))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`timeout`");
    assertThatThrownBy(() -> lock.acquireAsync(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`timeout`");
    assertThatThrownBy(() -> lock.acquireAsync(negative))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`timeout`");
    assertThat(client().lock(name).tryAcquire())
        .withFailMessage("a rejected call left the lock taken")
        .isPresent();
  }

  @Test
  @DisplayName("12.3 MUST: absurd leases are rejected with a message naming `lease`")
  default void rule12_3_badLeases() {
    assertThatThrownBy(() -> LockOptions.builder().lease(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`lease`");
    assertThatThrownBy(() -> LockOptions.builder().lease(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`lease`");
    assertThatThrownBy(() -> LockOptions.builder().lease(Duration.ofSeconds(-5)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`lease`")
        .hasMessageContaining("-5s");
    assertThatThrownBy(() -> LockOptions.builder().lease(Duration.ofDays(365)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`lease`");
  }

  @Test
  @DisplayName("12.4 MUST: any other Unicode name is a lock of its own, stored as given")
  default void rule12_4_unicodeNamesAreDistinctLocks() throws Exception {
    String base = name("unicode");
    List<String> names =
        List.of(
            base + " spaces and / slashes",
            base + "'; DROP TABLE locks; --",
            base + "\"quoted\" %s %n",
            base + " ключ 鍵 🔒",
            base + "*?[]{}",
            (base + "-max-").concat("y".repeat(255 - base.length() - 5)));
    LockClient c = client();
    List<Lease> leases = new ArrayList<>();
    for (String n : names) {
      Optional<Lease> l = c.lock(n).tryAcquire();
      assertThat(l).as("lock named '%s' is free and distinct from the others", n).isPresent();
      assertThat(l.get().lockName()).isEqualTo(n);
      leases.add(l.get());
    }
    for (String n : names) {
      assertThat(client().lock(n).tryAcquire()).as("lock named '%s' is held", n).isEmpty();
    }
    for (Lease l : leases) {
      assertThat(l.release()).as("release of '%s'", l.lockName()).isTrue();
    }
  }

  @Test
  @DisplayName("12.5 MUST: a closed client refuses new locks; close is idempotent")
  default void rule12_5_closedClient() {
    LockClient c = client();
    c.close();
    c.close();
    assertThatThrownBy(() -> c.lock(name("closed")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
  }

  @Test
  @DisplayName(
      "12.6 MUST: names that differ only by case, a trailing space, Unicode normal form, one"
          + " non-Latin letter or past the 191st character are distinct locks")
  default void rule12_6_nearlyEqualNamesAreDistinct() throws Exception {
    String base = name("near");
    String pad191 = pad(base + "-191-", 191);
    String pad200 = pad(base + "-200-", 200);
    String pad254 = pad(base + "-254-", 254);
    String[][] pairs = {
      {base + "-Case", base + "-case", "case (a case-insensitive collation)"},
      {base + "-space", base + "-space ", "a trailing space (a PAD SPACE collation, or trimming)"},
      {
        base + "-\u00e9",
        base + "-e\u0301",
        "Unicode normal form (NFC \u00e9 against NFD e + U+0301)"
      },
      {
        base + "-\u044f",
        base + "-\u0436",
        "one Cyrillic letter (a column that stores non-Latin-1 text as '?')"
      },
      {pad191 + "a", pad191 + "b", "the 192nd character (a VARCHAR(191) column)"},
      {pad200 + "a", pad200 + "b", "the 201st character (a name cut to 200 characters)"},
      {pad254 + "a", pad254 + "b", "the 255th character (a name cut short of 255 characters)"}
    };
    LockClient first = client();
    LockClient second = client();
    for (String[] pair : pairs) {
      Optional<Lease> a = first.lock(pair[0]).tryAcquire();
      assertThat(a).as("names broken: lock '%s' is free", pair[0]).isPresent();
      Optional<Lease> b = second.lock(pair[1]).tryAcquire();
      b.ifPresent(Lease::release);
      a.get().release();
      assertThat(b)
          .withFailMessage(
              "names broken: two names that differ only by %s are one lock on this backend ('%s'"
                  + " is held by the holder of '%s'): a name must be stored exactly,"
                  + " case-sensitive, as given, in full",
              pair[2], pair[1], pair[0])
          .isPresent();
      assertThat(b.get().lockName()).as("names broken: Lease.lockName()").isEqualTo(pair[1]);
    }
  }
}
