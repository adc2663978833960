package dev.locksmith.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Lock sets on etcd taken in one transaction ({@link EtcdLockSets}): every name's key is put by one
 * transaction, so every name's token (its key's create revision) is that transaction's revision,
 * the same for all; a set taken name by name would show as many tokens as names. Kit rule 20.6
 * checks, on the kit's server, that a busy set takes nothing even for a moment; these check what
 * the kit cannot see: the keys on the server, and the limit of one transaction.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EtcdLockSetIT {
  private static final String PREFIX = "/setit";

  @RegisterExtension static final EtcdServerExtension ETCD = EtcdServerExtension.oneMember("sets");

  private static LockClient client() {
    return Locks.connect("etcd://" + ETCD.hosts() + PREFIX + "?ttl=5s");
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

  /** The keys under one lock's range, read with a plain jetcd client. */
  private static long keysOf(String name) throws Exception {
    ByteSequence range = KeyNames.bytes(KeyNames.lockPrefix(PREFIX, name));
    return ETCD.admin()
        .getKVClient()
        .get(range, GetOption.builder().isPrefix(true).withCountOnly(true).build())
        .get(10, TimeUnit.SECONDS)
        .getCount();
  }

  @Test
  void aFreeSetIsOneTransactionAndItsReleaseFreesEveryName() throws Exception {
    List<String> names = names("set-free", 5);
    try (LockClient a = client();
        LockClient b = client()) {
      // two names were held and released before, three never
      for (String name : names.subList(0, 2)) {
        b.lock(name).tryAcquire().orElseThrow().release();
      }
      Lease set = a.locks(names).tryAcquire().orElseThrow();
      assertThat(tokens(set, names))
          .as("tokens of a set of 5 taken in one transaction: one revision")
          .hasSize(1);
      for (String name : names) {
        assertThat(b.lock(name).tryAcquire()).as("%s while the set holds it", name).isEmpty();
        assertThat(keysOf(name)).as("keys under %s while the set holds it", name).isEqualTo(1);
      }
      assertThat(set.release()).isTrue();
      for (String name : names) {
        assertThat(keysOf(name)).as("keys under %s after the set's release", name).isZero();
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
  void aBusySetPutsNoKeyUnderItsFreeNames() throws Exception {
    List<String> names = names("set-busy", 3);
    try (LockClient a = client();
        LockClient b = client()) {
      Lease middle = b.lock(names.get(1)).tryAcquire().orElseThrow();
      assertThat(a.locks(names).tryAcquire()).as("a set with its middle name held").isEmpty();
      assertThat(keysOf(names.get(0))).as("keys under the first name").isZero();
      assertThat(keysOf(names.get(2))).as("keys under the last name").isZero();
      assertThat(keysOf(names.get(1))).as("keys under the held name").isEqualTo(1);
      middle.release();
      Lease set = a.locks(names).tryAcquire().orElseThrow();
      assertThat(tokens(set, names)).hasSize(1);
      set.release();
    }
  }

  @Test
  void aKeyOfAnyKindUnderANameMakesTheSetBusy() throws Exception {
    // a key no Locksmith client wrote (a waiter's, a hold's or a stranger's) still counts: the
    // compare is over the whole range, not over one key
    List<String> names = names("set-stranger", 2);
    ByteSequence stranger =
        KeyNames.bytes(KeyNames.lockPrefix(PREFIX, names.get(1)) + "some-other-key");
    ETCD.admin()
        .getKVClient()
        .put(stranger, KeyNames.bytes("x"), PutOption.DEFAULT)
        .get(10, TimeUnit.SECONDS);
    try (LockClient a = client()) {
      assertThat(a.locks(names).tryAcquire())
          .as("a set with a key under its second name")
          .isEmpty();
      assertThat(keysOf(names.get(0))).as("keys under the first name").isZero();
      ETCD.admin().getKVClient().delete(stranger).get(10, TimeUnit.SECONDS);
      Lease set = a.locks(names).tryAcquire().orElseThrow();
      set.release();
    }
  }

  @Test
  void sixtyFourNamesAreOneTransactionAndSixtyFiveAreTakenNameByName() throws Exception {
    List<String> names = names("set-64", 65);
    try (LockClient a = client();
        LockClient b = client()) {
      Lease set64 = a.locks(names.subList(0, 64)).tryAcquire().orElseThrow();
      assertThat(tokens(set64, names.subList(0, 64)))
          .as("tokens of a set of 64: still one transaction")
          .hasSize(1);
      assertThat(set64.release()).isTrue();
      Lease set65 = a.locks(names).tryAcquire().orElseThrow();
      assertThat(tokens(set65, names))
          .as("tokens of a set of 65, above etcd's 128 operations: one per name")
          .hasSize(65);
      assertThat(set65.release()).as("65 names released in two transactions").isTrue();
      for (String name : List.of(names.get(0), names.get(63), names.get(64))) {
        assertThat(keysOf(name)).as("keys under %s after the release", name).isZero();
        b.lock(name).tryAcquire().orElseThrow().release();
      }
    }
  }

  @Test
  void aSetWhoseKeyWasDeletedReleasesTheRestAndSaysSo() throws Exception {
    List<String> names = names("set-lost", 3);
    try (LockClient a = client();
        LockClient b = client()) {
      Lease set = a.locks(names).tryAcquire().orElseThrow();
      ETCD.admin()
          .getKVClient()
          .delete(
              KeyNames.bytes(KeyNames.lockPrefix(PREFIX, names.get(1))),
              io.etcd.jetcd.options.DeleteOption.builder().isPrefix(true).build())
          .get(10, TimeUnit.SECONDS);
      assertThat(set.release()).as("a set that lost a name, released").isFalse();
      for (String name : names) {
        Optional<Lease> after = b.lock(name).tryAcquire();
        assertThat(after).as("%s after the set's release", name).isPresent();
        after.get().release();
      }
    }
  }

  @Test
  void withoutTheInterceptorTheMarkedCompareNeverHolds() throws Exception {
    // a client that does not rewrite the compare (a plain jetcd client) sends "created at -1":
    // never true, so a set would be busy, never granted wrongly
    ByteSequence empty =
        KeyNames.bytes(KeyNames.lockPrefix(PREFIX, "never-used-" + UUID.randomUUID()));
    TxnResponse r =
        ETCD.admin()
            .getKVClient()
            .txn()
            .If(RangeCompares.noKeyUnder(empty))
            .Then(Op.get(empty, GetOption.DEFAULT))
            .commit()
            .get(10, TimeUnit.SECONDS);
    assertThat(r.isSucceeded()).as("the marked compare, sent as it is").isFalse();
  }
}
