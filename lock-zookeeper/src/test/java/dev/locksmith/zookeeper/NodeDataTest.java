package dev.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;

class NodeDataTest {
  @Test
  void aPlainNodeNamesItsOwnerAndNeverExpires() {
    NodeData d = NodeData.parse(NodeData.plain("client-1:7"));
    assertThat(d.owner).isEqualTo("client-1:7");
    assertThat(d.expires()).isFalse();
  }

  @Test
  void anExpiringNodeExpiresItsMillisAfterItsMtime() {
    NodeData d = NodeData.parse(NodeData.expiring("client-1:7", 1500));
    assertThat(d.owner).isEqualTo("client-1:7");
    assertThat(d.expires()).isTrue();
    Stat stat = new Stat();
    stat.setMtime(1_000_000L);
    assertThat(d.expiresAt(stat)).isEqualTo(1_001_500L);
  }

  @Test
  void ownersWithNewlinesOrTheMarkItselfSurvive() {
    String odd = "a\nexpires-after-ms=5\nb";
    assertThat(NodeData.parse(NodeData.expiring(odd, 9)).owner).isEqualTo(odd);
    assertThat(NodeData.parse(NodeData.expiring(odd, 9)).expiresAfterMillis).isEqualTo(9);
  }

  @Test
  void foreignOrBrokenDataReadsAsANodeThatNeverExpires() {
    for (String text :
        new String[] {
          "x\nexpires-after-ms=",
          "x\nexpires-after-ms=abc",
          "x\nexpires-after-ms=0",
          "x\nexpires-after-ms=-4"
        }) {
      NodeData d = NodeData.parse(text.getBytes(StandardCharsets.UTF_8));
      assertThat(d.expires()).as("'%s'", text).isFalse();
      assertThat(d.owner).isEqualTo(text);
    }
    assertThat(NodeData.parse(null).expires()).isFalse();
    assertThat(NodeData.parse(new byte[0]).owner).isEmpty();
  }

  @Test
  void anExpiryBelowOneMillisecondIsRefusedWithItsValue() {
    assertThatThrownBy(() -> NodeData.expiring("o", 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("`millis`")
        .hasMessageContaining("0")
        .hasMessageContaining("at least 1");
  }
}
