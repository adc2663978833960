package dev.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.zookeeper.common.PathUtils;
import org.junit.jupiter.api.Test;

class NodeNamesTest {
  private static final List<String> NAMES =
      List.of(
          "plain",
          "orders/42",
          "/",
          "//",
          ".",
          "..",
          "...",
          ".hidden",
          "a.b",
          "spaces and / slashes",
          "'; DROP TABLE locks; --",
          "%41",
          "A",
          "ключ 鍵 🔒",
          "*?[]{}",
          "zookeeper",
          "\uFFFE\uF8FF",
          "x".repeat(255),
          "🔒".repeat(127));

  @Test
  void everyNameBecomesOneValidNodeNameAndComesBack() {
    for (String name : NAMES) {
      String node = NodeNames.encode(name);
      assertThat(node).as("node name of '%s'", name).doesNotContain("/").isNotIn(".", "..");
      PathUtils.validatePath("/locksmith/" + node); // throws if ZooKeeper would refuse it
      assertThat(NodeNames.decode(node)).isEqualTo(name);
    }
  }

  @Test
  void distinctNamesNeverShareANode() {
    Set<String> nodes = new HashSet<>();
    for (String name : NAMES) {
      assertThat(nodes.add(NodeNames.encode(name))).as("'%s' has a node of its own", name).isTrue();
    }
  }

  @Test
  void readableNamesStayReadable() {
    assertThat(NodeNames.encode("orders-42_a.b")).isEqualTo("orders-42_a.b");
    assertThat(NodeNames.encode("orders/42")).isEqualTo("orders%2F42");
  }

  @Test
  void waitersSortBySequenceWhateverTheirProtectionPrefix() {
    List<String> children =
        new ArrayList<>(
            List.of(
                "_c_ffff-lock-a:1-0000000010",
                "_c_0000-lock-b:2-0000000002",
                "_c_8888-lock-c:3-0000000007"));
    children.sort(NodeNames.BY_SEQUENCE);
    assertThat(children)
        .containsExactly(
            "_c_0000-lock-b:2-0000000002",
            "_c_8888-lock-c:3-0000000007",
            "_c_ffff-lock-a:1-0000000010");
  }

  @Test
  void theHoldNodeSortsBeforeEveryWaiterAndIsNobodysWaiterNode() {
    List<String> children =
        new ArrayList<>(
            List.of("_c_ffff-lock-a:1-0000000000", NodeNames.HOLD, "_c_0000-lock-b:2-0000000002"));
    children.sort(NodeNames.BY_SEQUENCE);
    assertThat(children)
        .containsExactly(
            NodeNames.HOLD, "_c_ffff-lock-a:1-0000000000", "_c_0000-lock-b:2-0000000002");
    assertThat(NodeNames.isWaiterOf(NodeNames.HOLD, "hold")).isFalse();
    assertThat(NodeNames.encode("hold"))
        .as("a lock named 'hold' is a directory, never a child")
        .isEqualTo("hold");
  }

  @Test
  void aWaiterNodeIsFoundByItsOwnerOnly() {
    String node = "_c_1234-" + NodeNames.waiterBase("77-ab-1:1") + "0000000003";
    assertThat(NodeNames.isWaiterOf(node, "77-ab-1:1")).isTrue();
    assertThat(NodeNames.isWaiterOf(node, "77-ab-1:11")).isFalse();
    assertThat(NodeNames.isWaiterOf(node, "7-ab-1:1")).isFalse();
  }
}
