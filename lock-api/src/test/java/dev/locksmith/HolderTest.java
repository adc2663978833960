package dev.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Holder identity: every lease's owner id names the client's application, host, process and the
 * thread that asked, and {@link LockState#holderIdentity()} reads it back from another client.
 */
class HolderTest {

  private static String space(String what) {
    return "local:holder-" + what + "-" + System.nanoTime();
  }

  @Test
  void anotherClientSeesWhoHoldsTheLock() throws Exception {
    String space = space("seen");
    AtomicReference<Lease> taken = new AtomicReference<>();
    Instant before = Instant.now();
    try (LockClient holder =
            Locks.connect(LockConfig.builder().uri(space).application("orders-service").build());
        LockClient observer = Locks.connect(space)) {
      Thread t =
          new Thread(
              () -> {
                try {
                  taken.set(holder.lock("stock/42").acquire(Duration.ofSeconds(5)));
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              },
              "order worker: #7");
      t.start();
      t.join(10_000);
      Instant after = Instant.now();
      LockState state = observer.lock("stock/42").state();
      Holder who = state.holderIdentity().orElseThrow();
      assertThat(who.application()).isEqualTo("orders-service");
      assertThat(who.thread()).isEqualTo("order_worker___7");
      assertThat(who.pid()).isEqualTo(ProcessHandle.current().pid());
      assertThat(who.host()).isEqualTo(Holder.HOST).isNotEmpty();
      assertThat(who.askedAt()).isBetween(before.minusMillis(1), after);
      assertThat(who.ownerId()).isEqualTo(state.holder().orElseThrow());
      assertThat(who.clientId()).isEqualTo(((ClientCore) holder).clientId());
      assertThat(who.toString())
          .startsWith("orders-service on " + Holder.HOST + " (pid ")
          .contains("thread order_worker___7");
      assertThat(state.toString()).contains("by orders-service@");
      taken.get().release();
      assertThat(observer.lock("stock/42").state().holderIdentity()).isEmpty();
    }
  }

  @Test
  void withoutTheSettingTheApplicationIsTheMainClassOrJar() throws Exception {
    String space = space("default");
    try (LockClient c = Locks.connect(space);
        Lease lease = c.lock("a").acquire(Duration.ofSeconds(5))) {
      Holder who = c.lock("a").state().holderIdentity().orElseThrow();
      assertThat(who.application())
          .isEqualTo(Holder.defaultApplication())
          .isEqualTo(c.config().application())
          .isNotEqualTo("orders-service");
      assertThat(who.thread()).isEqualTo(Thread.currentThread().getName().replace(' ', '_'));
    }
  }

  @Test
  void theSettingIsReadFromTheUriAndTheBuilderWins() {
    assertThat(LockConfig.builder().uri("local:?application=billing").build().application())
        .isEqualTo("billing");
    assertThat(
            LockConfig.builder()
                .uri("local:?application=billing")
                .application("orders")
                .build()
                .application())
        .isEqualTo("orders");
    assertThat(LockConfig.builder().uri("local:?application=billing").build().toString())
        .contains("application=billing");
  }

  @Test
  void aBadApplicationNameIsRefusedNamingTheSettingAndWhatIsValid() {
    for (String bad : new String[] {"my app", "", "a:b", "a".repeat(41), "ünï"}) {
      assertThatThrownBy(() -> LockConfig.builder().uri("local:").application(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("`application` was '")
          .hasMessageContaining("1 to 40 letters, digits");
      assertThatThrownBy(
              () -> LockConfig.builder().uri("local:").option("application", bad).build())
          .isInstanceOf(LockConfigurationException.class)
          .hasMessageContaining("`application` was '");
    }
    assertThatThrownBy(() -> LockConfig.builder().application(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`application` was null");
    assertThat(LockConfig.builder().uri("local:").application("a".repeat(40)).build().application())
        .hasSize(40);
  }

  @Test
  void ownerIdsOfOtherToolsOrOlderClientsNameNobody() {
    for (String foreign :
        new String[] {
          "old-client:1",
          "4242-9f3a-1:17",
          "a@b:c:d:e:f",
          "a@b:c:zz:x-1:1",
          "@b:c:1:1-1:1",
          "a@:c:1:1-1:1",
          "a@b::1:1-1:1",
          "a@b:c:1:1-1:x",
          "a@b:c:1:-1-1:1",
          ""
        }) {
      assertThat(Holder.parse(foreign)).as(foreign).isEmpty();
    }
    assertThat(Holder.parse(null)).isEmpty();
    Optional<Holder> ok = Holder.parse("a@b:c:1:42-x-1:1");
    assertThat(ok).isPresent();
    assertThat(ok.get().pid()).isEqualTo(42);
  }

  @Test
  void everyPartIsCutAndCleanedSoAnOwnerIdStaysShortAndParses() {
    String longest =
        Holder.ownerId(
            "a".repeat(Holder.MAX_PART),
            "t: ".repeat(100),
            4102444800000L, // 2100
            (1 << 22) + "-" + Long.toHexString(-1L) + "-" + Integer.MAX_VALUE, // the longest id
            Long.MAX_VALUE);
    assertThat(longest.length()).isLessThan(200);
    assertThat(longest).matches("[A-Za-z0-9._@:-]+");
    Holder who = Holder.parse(longest).orElseThrow();
    assertThat(who.thread()).hasSize(Holder.MAX_PART).matches("[t_]+");
    assertThat(Holder.part("x/y\\z é")).isEqualTo("x_y_z__");
  }
}
