package dev.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.apache.zookeeper.KeeperException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Lock sets on ZooKeeper taken in one multi ({@link ZooKeeperBackend#acquireAll}): every name's
 * node is made in one transaction, so every name's token (its node's czxid) is that transaction's
 * zxid, the same for all; a set taken name by name would show as many tokens as names. Kit rule
 * 20.6 checks, on the kit's server, that a busy set takes nothing even for a moment.
 */
class ZooKeeperLockSetIT {
  @RegisterExtension
  static final ZooKeeperServerExtension ZK =
      ZooKeeperServerExtension.inThisJvm("zk-sets")
          .withAdmin(ZooKeeperSettings.DEFAULT_NAMESPACE, 10_000);

  private static LockClient client(String namespace) {
    return Locks.connect(
        "zookeeper://" + ZK.connectString() + "?connection-timeout=5s&namespace=" + namespace);
  }

  private static List<String> names(String prefix, int n) {
    String run = UUID.randomUUID().toString().substring(0, 8);
    List<String> names = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      names.add(prefix + "/" + run + "/" + i);
    }
    return names;
  }

  private static Set<Long> tokens(Lease lease, List<String> names) {
    Set<Long> tokens = new HashSet<>();
    for (String name : names) {
      tokens.add(lease.fencingToken(name));
    }
    return tokens;
  }

  @Test
  void aFreeSetIsOneTransactionAndItsReleaseFreesEveryName() throws Exception {
    List<String> names = names("set-free", 5);
    try (LockClient a = client(ZooKeeperSettings.DEFAULT_NAMESPACE);
        LockClient b = client(ZooKeeperSettings.DEFAULT_NAMESPACE)) {
      // two names already have lock nodes (held and released before), three have none yet
      for (String name : names.subList(0, 2)) {
        b.lock(name).tryAcquire().orElseThrow().release();
      }
      Lease set = a.locks(names).tryAcquire().orElseThrow();
      assertThat(tokens(set, names))
          .as("tokens of a set of 5 taken in one multi: one transaction, one zxid")
          .hasSize(1);
      for (String name : names) {
        assertThat(b.lock(name).tryAcquire()).as("%s while the set holds it", name).isEmpty();
      }
      assertThat(set.release()).isTrue();
      for (String name : names) {
        Optional<Lease> after = b.lock(name).tryAcquire();
        assertThat(after).as("%s after the set's release", name).isPresent();
        assertThat(after.get().fencingToken())
            .as("%s: a later holder's token", name)
            .isGreaterThan(set.fencingToken(name));
        after.get().release();
      }
    }
  }

  @Test
  void sixtyFourNamesOfTheLongestKindStillFitOneMulti() throws Exception {
    // 255 characters that each encode to 3 UTF-8 bytes, each byte written as %XX in the node name
    String longest = "€".repeat(240);
    List<String> names = new ArrayList<>();
    String run = UUID.randomUUID().toString().substring(0, 8);
    for (int i = 0; i < 64; i++) {
      names.add(longest + run + String.format("%03d", i));
    }
    assertThat(names.get(0)).hasSize(251);
    try (LockClient a = client(ZooKeeperSettings.DEFAULT_NAMESPACE)) {
      Lease set = a.locks(names).tryAcquire().orElseThrow();
      assertThat(tokens(set, names))
          .as("tokens of a set of 64 names of 251 characters: still one multi")
          .hasSize(1);
      assertThat(set.release()).isTrue();
    }
  }

  @Test
  void aBusySetMakesNoNodeUnderItsFreeNames() throws Exception {
    List<String> names = names("set-busy", 3);
    try (LockClient a = client(ZooKeeperSettings.DEFAULT_NAMESPACE);
        LockClient b = client(ZooKeeperSettings.DEFAULT_NAMESPACE)) {
      // the first name has a lock node with a child left empty, the last none at all
      b.lock(names.get(0)).tryAcquire().orElseThrow().release();
      Lease middle = b.lock(names.get(1)).tryAcquire().orElseThrow();
      assertThat(a.locks(names).tryAcquire()).as("a set with its middle name held").isEmpty();
      assertThat(children(names.get(0))).as("children of the first name's node").isEmpty();
      assertThat(children(names.get(2))).as("children of the last name's node").isEmpty();
      assertThat(children(names.get(1))).as("children of the held name's node").hasSize(1);
      middle.release();
      Lease set = a.locks(names).tryAcquire().orElseThrow();
      assertThat(tokens(set, names)).hasSize(1);
      set.release();
    }
  }

  @Test
  void aSetInANamespaceThatDoesNotExistYetMakesIt() throws Exception {
    String namespace = "sets-" + UUID.randomUUID().toString().substring(0, 8) + "/deep";
    List<String> names = names("set-new", 3);
    try (LockClient a = client(namespace);
        LockClient b = client(namespace)) {
      Lease set = a.locks(names).tryAcquire().orElseThrow();
      assertThat(tokens(set, names)).hasSize(1);
      assertThat(b.lock(names.get(2)).tryAcquire()).isEmpty();
      set.release();
      assertThat(b.lock(names.get(2)).tryAcquire()).isPresent();
    }
  }

  @Test
  void aSetWhoseNodeWasDeletedReleasesTheRestAndSaysSo() throws Exception {
    List<String> names = names("set-lost", 3);
    try (LockClient a = client(ZooKeeperSettings.DEFAULT_NAMESPACE);
        LockClient b = client(ZooKeeperSettings.DEFAULT_NAMESPACE)) {
      Lease set = a.locks(names).tryAcquire().orElseThrow();
      // the middle name's node deleted behind the holder's back: the one multi of deletes fails
      // as a whole, and the names are released one by one
      String middle = "/" + NodeNames.encode(names.get(1));
      for (String child : ZK.admin().getChildren().forPath(middle)) {
        ZK.admin().delete().forPath(middle + "/" + child);
      }
      assertThat(set.release()).as("a set that lost a name, released").isFalse();
      for (String name : names) {
        Optional<Lease> after = b.lock(name).tryAcquire();
        assertThat(after).as("%s after the set's release", name).isPresent();
        after.get().release();
      }
    }
  }

  private static List<String> children(String name) throws Exception {
    try {
      return ZK.admin().getChildren().forPath("/" + NodeNames.encode(name));
    } catch (KeeperException.NoNodeException e) {
      return List.of();
    }
  }
}
