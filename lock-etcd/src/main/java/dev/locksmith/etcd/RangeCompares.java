package dev.locksmith.etcd;

import com.google.protobuf.ByteString;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.api.Compare;
import io.etcd.jetcd.api.TxnRequest;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.MethodDescriptor;

/**
 * Lets a transaction ask "no key under this prefix", which etcd answers since 3.3 (a {@code
 * Compare} with a {@code range_end} holds for every key of the range, and for an empty range
 * compares as a key that does not exist) but jetcd's {@link Cmp} cannot say: it has no range end. A
 * lock set is taken in one transaction only with it ({@link EtcdLockSets}): one compare per name
 * that no key is under the name's prefix, then one put per name.
 *
 * <p>{@link #noKeyUnder} builds a compare that jetcd sends as "the key equal to the prefix was
 * created at revision -1", which no key ever is; this interceptor, installed on every client the
 * provider builds, turns each such compare of a {@code Txn} request into "every key from the prefix
 * to the prefix's end was created at revision 0", which holds exactly when the range is empty.
 * Every other request goes out untouched. Without the interceptor the marked compare is always
 * false: a set is then never granted in one step, never wrongly.
 */
final class RangeCompares implements ClientInterceptor {
  /** The create revision that marks a compare to widen; no key is ever created at it. */
  static final long MARK = -1;

  private static final String TXN = "etcdserverpb.KV/Txn";

  /**
   * @param prefix a key prefix (ours end with {@code /})
   * @return a compare that holds when no key starts with {@code prefix}, once sent through this
   *     interceptor
   */
  static Cmp noKeyUnder(ByteSequence prefix) {
    return new Cmp(prefix, Cmp.Op.EQUAL, CmpTarget.createRevision(MARK));
  }

  @Override
  public <Q, R> ClientCall<Q, R> interceptCall(
      MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
    ClientCall<Q, R> call = next.newCall(method, options);
    if (!TXN.equals(method.getFullMethodName())) {
      return call;
    }
    return new ForwardingClientCall.SimpleForwardingClientCall<>(call) {
      @Override
      @SuppressWarnings("unchecked")
      public void sendMessage(Q message) {
        super.sendMessage(
            message instanceof TxnRequest ? (Q) widen((TxnRequest) message) : message);
      }
    };
  }

  /**
   * @return the request with each marked compare made a compare of its key's whole prefix range;
   *     the request itself when none is marked
   */
  static TxnRequest widen(TxnRequest request) {
    boolean marked = false;
    for (Compare c : request.getCompareList()) {
      marked |= isMarked(c);
    }
    if (!marked) {
      return request;
    }
    TxnRequest.Builder b = request.toBuilder();
    for (int i = 0; i < b.getCompareCount(); i++) {
      Compare c = b.getCompare(i);
      if (isMarked(c)) {
        b.setCompare(
            i, c.toBuilder().setCreateRevision(0).setRangeEnd(prefixEnd(c.getKey())).build());
      }
    }
    return b.build();
  }

  private static boolean isMarked(Compare c) {
    return c.getTarget() == Compare.CompareTarget.CREATE
        && c.getCreateRevision() == MARK
        && c.getRangeEnd().isEmpty();
  }

  /**
   * @return the first key after every key that starts with {@code prefix}: the prefix with its last
   *     byte below 0xff raised by one and the rest dropped ({@code "\0"}, every key, if it is all
   *     0xff)
   */
  static ByteString prefixEnd(ByteString prefix) {
    byte[] end = prefix.toByteArray();
    for (int i = end.length - 1; i >= 0; i--) {
      if (end[i] != (byte) 0xff) {
        end[i]++;
        return ByteString.copyFrom(end, 0, i + 1);
      }
    }
    return ByteString.copyFrom(new byte[] {0});
  }
}
