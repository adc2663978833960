package dev.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.spi.Claim;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The decisions of {@link ClaimQueue} on children lists as ZooKeeper would show them. */
class ClaimQueueTest {
  private static int seq;

  /** A node name as Curator's protected mode and ZooKeeper's sequence make it. */
  private static String node(Claim claim, String owner) {
    return String.format(
        "_c_%08x-0000-0000-0000-000000000000-%s%010d",
        seq, NodeNames.claimBase(claim, owner), seq++);
  }

  private static ClaimQueue.Verdict judge(Claim claim, List<String> children, String mine) {
    List<String> sorted = new ArrayList<>(children);
    sorted.sort(NodeNames.BY_SEQUENCE);
    return ClaimQueue.judge(claim, sorted, sorted.indexOf(mine));
  }

  @Test
  void theFirstPermitsNodesHoldAndTheNextWaitsForAnyChange() {
    Claim three = Claim.permit(3);
    List<String> nodes = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      nodes.add(node(three, "client-a:" + i));
    }
    for (int i = 0; i < 3; i++) {
      assertThat(judge(three, nodes, nodes.get(i)).action)
          .as("node %d", i)
          .isEqualTo(ClaimQueue.Action.GRANT);
    }
    assertThat(judge(three, nodes, nodes.get(3)).action)
        .isEqualTo(ClaimQueue.Action.WAIT_FOR_CHILDREN);
    assertThat(judge(three, nodes, nodes.get(4)).action)
        .isEqualTo(ClaimQueue.Action.WAIT_FOR_CHILDREN);
    nodes.remove(1); // a holder in the middle releases: the first waiter is now third
    assertThat(judge(three, nodes, nodes.get(2)).action).isEqualTo(ClaimQueue.Action.GRANT);
  }

  @Test
  void anotherCountThanTheHeadsIsRefusedNamingTheHeadsCount() {
    String head = node(Claim.permit(2), "a:1");
    String other = node(Claim.permit(5), "b:1");
    ClaimQueue.Verdict v = judge(Claim.permit(5), List.of(head, other), other);
    assertThat(v.action).isEqualTo(ClaimQueue.Action.PERMITS_IN_USE);
    assertThat(v.permitsInUse).isEqualTo(2);
  }

  @Test
  void aNodeBehindOneWithAnotherCountWaitsForItToBeRefusedInsteadOfPassingIt() {
    String head = node(Claim.permit(3), "a:1");
    String other = node(Claim.permit(5), "b:1");
    String mine = node(Claim.permit(3), "c:1");
    ClaimQueue.Verdict v = judge(Claim.permit(3), List.of(head, other, mine), mine);
    assertThat(v.action).isEqualTo(ClaimQueue.Action.WAIT_FOR_NODE);
    assertThat(v.node).isEqualTo(other);
  }

  @Test
  void aSemaphoreWithNothingAheadTakesTheCountItIsAskedWith() {
    String mine = node(Claim.permit(7), "a:1");
    assertThat(judge(Claim.permit(7), List.of(mine), mine).action)
        .isEqualTo(ClaimQueue.Action.GRANT);
  }

  @Test
  void nodesThatAreNotPermitsAreNobodysLease() {
    String odd = "_c_x-something-else-0000000000";
    String mine = node(Claim.permit(1), "a:1");
    assertThat(judge(Claim.permit(1), List.of(odd, mine), mine).action)
        .isEqualTo(ClaimQueue.Action.GRANT);
  }

  @Test
  void readersShareUntilAWriterIsAheadAndThenWaitForTheNearestWriter() {
    String r1 = node(Claim.read(), "a:1");
    String r2 = node(Claim.read(), "b:1");
    String w1 = node(Claim.write(), "c:1");
    String r3 = node(Claim.read(), "d:1");
    String w2 = node(Claim.write(), "e:1");
    String r4 = node(Claim.read(), "f:1");
    List<String> all = List.of(r1, r2, w1, r3, w2, r4);
    assertThat(judge(Claim.read(), all, r1).action).isEqualTo(ClaimQueue.Action.GRANT);
    assertThat(judge(Claim.read(), all, r2).action).isEqualTo(ClaimQueue.Action.GRANT);
    assertThat(judge(Claim.read(), all, r3).node).isEqualTo(w1);
    assertThat(judge(Claim.read(), all, r4).node).as("the nearest writer ahead").isEqualTo(w2);
  }

  @Test
  void aWriterHoldsOnlyWhenFirstAndOtherwiseWaitsForTheNodeJustBeforeIt() {
    String r1 = node(Claim.read(), "a:1");
    String w1 = node(Claim.write(), "b:1");
    String w2 = node(Claim.write(), "c:1");
    assertThat(judge(Claim.write(), List.of(r1, w1, w2), w1).node).isEqualTo(r1);
    assertThat(judge(Claim.write(), List.of(r1, w1, w2), w2).node).isEqualTo(w1);
    assertThat(judge(Claim.write(), List.of(w1, w2), w1).action).isEqualTo(ClaimQueue.Action.GRANT);
  }

  @Test
  void anOwnerWhoseIdSpellsAnotherKindIsStillReadByItsOwnNode() {
    String reader = node(Claim.read(), "x-write-0000000001-y:1");
    String writer = node(Claim.write(), "x-read-y:2");
    assertThat(NodeNames.isReader(reader)).isTrue();
    assertThat(NodeNames.isReader(writer)).isFalse();
    String permit = node(Claim.permit(4), "of-9-x:1");
    assertThat(NodeNames.permitsOf(permit)).isEqualTo(4);
    assertThat(NodeNames.permitsOf(reader)).isEqualTo(-1);
    assertThat(NodeNames.permitsOf(node(Claim.permit(Claim.MAX_PERMITS), "a:1")))
        .isEqualTo(Claim.MAX_PERMITS);
    assertThat(NodeNames.permitsOf("_c_x-permit-a-of-0-0000000001"))
        .as("no semaphore has 0 permits")
        .isEqualTo(-1);
    assertThat(NodeNames.permitsOf("_c_x-permit-a-to-4-0000000001"))
        .as("a count without its mark")
        .isEqualTo(-1);
    assertThat(NodeNames.permitsOf("_c_x-permit-a-of-4")).as("no sequence number").isEqualTo(-1);
    assertThat(NodeNames.hasBase(permit, NodeNames.claimBase(Claim.permit(4), "of-9-x:1")))
        .isTrue();
    assertThat(NodeNames.hasBase(permit, NodeNames.claimBase(Claim.permit(4), "9-x:1"))).isFalse();
  }

  @Test
  void locksSemaphoresAndReadWriteLocksOfOneNameHaveParentsApart() {
    String lock = NodeNames.parent(".semaphores", Claim.Kind.EXCLUSIVE);
    String sem = NodeNames.parent(".semaphores", Claim.Kind.PERMIT);
    String rw = NodeNames.parent(".semaphores", Claim.Kind.READ);
    assertThat(List.of(lock, sem, rw)).doesNotHaveDuplicates();
    assertThat(NodeNames.parent("a", Claim.Kind.WRITE))
        .isEqualTo(NodeNames.parent("a", Claim.Kind.READ));
    assertThat(lock).as("no lock is a child of the semaphores' node").isEqualTo("/%2Esemaphores");
  }

  /** The nodes {@link ClaimQueue#judge} grants, each judged as what it claims, one by one. */
  private static List<String> grantedOneByOne(boolean semaphore, List<String> sorted) {
    List<String> granted = new ArrayList<>();
    for (int i = 0; i < sorted.size(); i++) {
      String node = sorted.get(i);
      Claim claim;
      if (semaphore) {
        int n = NodeNames.permitsOf(node);
        if (n < 0) {
          continue;
        }
        claim = Claim.permit(n);
      } else {
        claim = NodeNames.isReader(node) ? Claim.read() : Claim.write();
      }
      if (ClaimQueue.judge(claim, sorted, i).action == ClaimQueue.Action.GRANT) {
        granted.add(node);
      }
    }
    return granted;
  }

  @Test
  void theGrantedNodesAreThoseJudgeGrantsAndNeverAWaiter() {
    java.util.Random random = new java.util.Random(34);
    for (int round = 0; round < 2_000; round++) {
      boolean semaphore = random.nextBoolean();
      List<String> nodes = new ArrayList<>();
      int size = random.nextInt(9);
      for (int i = 0; i < size; i++) {
        Claim claim =
            semaphore
                ? Claim.permit(1 + random.nextInt(random.nextBoolean() ? 1 : 4))
                : random.nextInt(3) == 0 ? Claim.write() : Claim.read();
        nodes.add(node(claim, "o:" + i));
      }
      if (semaphore && random.nextInt(5) == 0) {
        nodes.add(random.nextInt(nodes.size() + 1), "_c_x-lock-a-" + String.format("%010d", seq++));
      }
      nodes.sort(NodeNames.BY_SEQUENCE);
      assertThat(ClaimQueue.granted(semaphore, nodes))
          .as("%s %s", semaphore ? "semaphore" : "read-write lock", nodes)
          .isEqualTo(grantedOneByOne(semaphore, nodes));
    }
  }

  @Test
  void grantedHoldersOfAReadWriteLockAreTheLeadingReadersOrOneWriter() {
    String r1 = node(Claim.read(), "a:1");
    String r2 = node(Claim.read(), "b:1");
    String w1 = node(Claim.write(), "c:1");
    String r3 = node(Claim.read(), "d:1");
    assertThat(ClaimQueue.granted(false, List.of(r1, r2, w1, r3))).containsExactly(r1, r2);
    assertThat(ClaimQueue.granted(false, List.of(w1, r3))).containsExactly(w1);
    assertThat(ClaimQueue.granted(false, List.of())).isEmpty();
    String p1 = node(Claim.permit(2), "a:2");
    String p2 = node(Claim.permit(2), "b:2");
    String p3 = node(Claim.permit(2), "c:2");
    assertThat(ClaimQueue.granted(true, List.of(p1, p2, p3))).containsExactly(p1, p2);
  }

  /** A lock waiter's node as Curator's protected mode and ZooKeeper's sequence make it. */
  private static String lockNode(String owner) {
    return String.format(
        "_c_%08x-0000-0000-0000-000000000000-%s%010d", seq, NodeNames.waiterBase(owner), seq++);
  }

  @Test
  void aLocksWaitersAreTheQueuedNodesBehindTheHeadNeitherTheHoldNorOddNodes() {
    String holder = lockNode("a:1");
    String w1 = lockNode("b:1");
    String w2 = lockNode("c:1");
    assertThat(ClaimQueue.waiting(false, List.of(holder), List.of(holder))).isZero();
    assertThat(ClaimQueue.waiting(false, List.of(holder, w1, w2), List.of(holder))).isEqualTo(2);
    assertThat(
            ClaimQueue.waiting(
                false, List.of(NodeNames.HOLD, w1, w2, "odd"), List.of(NodeNames.HOLD)))
        .as("a hold holds; every queued node behind it waits; a node without a sequence does not")
        .isEqualTo(2);
    String again = lockNode("b:1"); // a create of b's whose answer was lost, made after all
    assertThat(ClaimQueue.waiting(false, List.of(holder, w1, again), List.of(holder)))
        .as("two nodes of one caller are one waiter")
        .isEqualTo(1);
    assertThat(ClaimQueue.waiting(false, List.of(holder, lockNode("a:1"), w2), List.of(holder)))
        .as("a second node of the holder's is not a waiter")
        .isEqualTo(1);
  }

  @Test
  void aSemaphoresWaitersAreItsPermitNodesThatDoNotHold() {
    Claim two = Claim.permit(2);
    String h1 = node(two, "a:1");
    String h2 = node(two, "b:1");
    String w1 = node(two, "c:1");
    String refused = node(Claim.permit(5), "d:1");
    String notAPermit = node(Claim.read(), "e:1");
    List<String> all = List.of(h1, h2, w1, refused, notAPermit);
    assertThat(ClaimQueue.waiting(true, all, List.of(h1, h2)))
        .as("a waiter and one about to be refused wait; a node that is no permit's does not")
        .isEqualTo(2);
    assertThat(ClaimQueue.waiting(true, all, List.of(h1)))
        .as("a node granted by the queue that has not taken its grant still waits")
        .isEqualTo(3);
    assertThat(ClaimQueue.waiting(false, List.of(h1, node(Claim.write(), "f:1")), List.of(h1)))
        .isEqualTo(1);
  }
}
