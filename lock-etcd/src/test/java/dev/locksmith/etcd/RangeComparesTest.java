package dev.locksmith.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.etcd.jetcd.api.Compare;
import io.etcd.jetcd.api.TxnRequest;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The rewrite {@link RangeCompares} makes of a transaction's marked compares, and only of them. */
class RangeComparesTest {
  private static ByteString bytes(String s) {
    return ByteString.copyFrom(s, StandardCharsets.UTF_8);
  }

  private static Compare create(String key, long revision) {
    return Compare.newBuilder()
        .setKey(bytes(key))
        .setTarget(Compare.CompareTarget.CREATE)
        .setResult(Compare.CompareResult.EQUAL)
        .setCreateRevision(revision)
        .build();
  }

  @Test
  void aMarkedCompareBecomesACompareOfItsPrefixRange() {
    TxnRequest r =
        TxnRequest.newBuilder()
            .addCompare(create("/p/a/", RangeCompares.MARK))
            .addCompare(create("/p/a/k-0", 0))
            .addCompare(create("/p/b/", RangeCompares.MARK))
            .build();
    TxnRequest w = RangeCompares.widen(r);
    assertThat(w.getCompare(0).getRangeEnd()).isEqualTo(bytes("/p/a0"));
    assertThat(w.getCompare(0).getCreateRevision()).isZero();
    assertThat(w.getCompare(0).getKey()).isEqualTo(bytes("/p/a/"));
    assertThat(w.getCompare(1)).as("an unmarked compare").isEqualTo(r.getCompare(1));
    assertThat(w.getCompare(2).getRangeEnd()).isEqualTo(bytes("/p/b0"));
  }

  @Test
  void aRequestWithoutMarksGoesOutAsItIs() {
    TxnRequest r = TxnRequest.newBuilder().addCompare(create("/p/a/k-0", 0)).build();
    assertThat(RangeCompares.widen(r)).isSameAs(r);
    Compare value =
        create("/p/a/", RangeCompares.MARK).toBuilder()
            .setTarget(Compare.CompareTarget.VALUE)
            .build();
    TxnRequest other = TxnRequest.newBuilder().addCompare(value).build();
    assertThat(RangeCompares.widen(other)).as("-1 on another target").isSameAs(other);
  }

  @Test
  void thePrefixEndSkipsTrailingFfBytes() {
    assertThat(RangeCompares.prefixEnd(ByteString.copyFrom(new byte[] {1, (byte) 0xff})))
        .isEqualTo(ByteString.copyFrom(new byte[] {2}));
    assertThat(RangeCompares.prefixEnd(ByteString.copyFrom(new byte[] {(byte) 0xff})))
        .isEqualTo(ByteString.copyFrom(new byte[] {0}));
  }
}
