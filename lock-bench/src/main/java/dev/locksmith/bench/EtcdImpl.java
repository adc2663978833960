package dev.locksmith.bench;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * etcd through plain jetcd, on one client with one lease granted up front and kept alive: either
 * the raw floor (a transaction that puts the key with the lease if its create revision is 0, then a
 * delete), or jetcd's own {@code Lock} client (etcd's server-side lock service).
 */
final class EtcdImpl implements LockImpl {
  private static final AtomicLong SEQ = new AtomicLong();

  private final Client client;
  private final boolean lockService;
  private final long leaseId;
  private final CloseableClient keepAlive;
  private final String tokenPrefix = ProcessHandle.current().pid() + "-";

  EtcdImpl(String endpoint, boolean lockService) throws Exception {
    this.client = Client.builder().endpoints("http://" + endpoint).build();
    this.lockService = lockService;
    this.leaseId = client.getLeaseClient().grant(30).get(10, TimeUnit.SECONDS).getID();
    this.keepAlive =
        client
            .getLeaseClient()
            .keepAlive(
                leaseId,
                new StreamObserver<LeaseKeepAliveResponse>() {
                  @Override
                  public void onNext(LeaseKeepAliveResponse value) {}

                  @Override
                  public void onError(Throwable t) {}

                  @Override
                  public void onCompleted() {}
                });
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  @Override
  public Held acquire(String name, Duration timeout) throws Exception {
    long waitMillis = timeout == null ? Long.MAX_VALUE : timeout.toMillis();
    if (lockService) {
      ByteSequence key;
      try {
        key =
            client
                .getLockClient()
                .lock(bytes("/jetcd-lock/" + name), leaseId)
                .get(waitMillis, TimeUnit.MILLISECONDS)
                .getKey();
      } catch (TimeoutException e) {
        return null;
      }
      return () -> client.getLockClient().unlock(key).get(10, TimeUnit.SECONDS);
    }
    ByteSequence key = bytes("/raw/" + name);
    ByteSequence value = bytes(tokenPrefix + SEQ.incrementAndGet());
    TxnResponse r =
        client
            .getKVClient()
            .txn()
            .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
            .Then(Op.put(key, value, PutOption.builder().withLeaseId(leaseId).build()))
            .commit()
            .get(10, TimeUnit.SECONDS);
    if (!r.isSucceeded()) {
      return null;
    }
    return () -> client.getKVClient().delete(key, DeleteOption.DEFAULT).get(10, TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    try {
      keepAlive.close();
      client.getLeaseClient().revoke(leaseId).get(5, TimeUnit.SECONDS);
    } catch (Exception e) {
      // the lease expires on its own
    } finally {
      client.close();
    }
  }
}
