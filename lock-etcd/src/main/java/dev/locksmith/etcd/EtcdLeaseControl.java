package dev.locksmith.etcd;

import dev.locksmith.spi.BackendLease;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.PutOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lease control on etcd: {@code extend} moves a held key from the client's session lease onto an
 * etcd lease of its own, with the TTL asked for; {@code releaseAfter} moves it onto such a lease
 * under a value that is nobody's owner id, so that only time (or this client, on time) frees it.
 * Either way etcd's own lease clock ends the key when this client is gone.
 *
 * <p>Both move the key by a put in a transaction that first compares the key's create revision and
 * (for a lock) value with ours: a put keeps the create revision, so the fencing token and the
 * waiters' order stay as they were, and a key that is no longer ours is never touched. The put
 * gives the key a new mod revision, which was the token of a permit or read-write side granted
 * after waiting: the value of a moved permit or side carries its token after the owner id ({@link
 * #valueOf}), for listing ({@link EtcdHolders}). etcd counts TTLs in whole seconds, so a lease of
 * its own gets the duration rounded up (and at least the server's minimum TTL); etcd then expires
 * it on a sweep of about 500 ms. The server's end is therefore late by up to a second plus the
 * sweep, never early; a live client ends it on time itself (the core releases an unrenewed lease at
 * its expiry, and a hold is deleted here exactly at its end).
 */
final class EtcdLeaseControl {
  private static final Logger LOG = LoggerFactory.getLogger(EtcdLeaseControl.class);

  /**
   * Start of the value of a key held after release: {@code hold-after-release/<keep in ns>/<owner
   * id>}. No lease has it as owner id, so no release, extend or hold of ours matches it.
   */
  static final String HOLD_PREFIX = "hold-after-release/";

  private final EtcdBackend backend;

  EtcdLeaseControl(EtcdBackend backend) {
    this.backend = backend;
  }

  /**
   * @return etcd's TTL for a duration: whole seconds, rounded up, at least 1
   */
  static long ttlSeconds(Duration d) {
    long s = d.getSeconds() + (d.getNano() > 0 ? 1 : 0);
    return Math.max(1, s);
  }

  boolean extend(BackendLease lease, Duration newLease) {
    EtcdBackend.Held held = (EtcdBackend.Held) lease.state();
    String what =
        "extending "
            + dev.locksmith.spi.Claim.noun(lease.claim().kind())
            + " '"
            + lease.name()
            + "' to "
            + dev.locksmith.spi.Durations.format(newLease);
    long leaseId = grant(newLease, what);
    TxnResponse r;
    try {
      r =
          backend.calls.awaitUninterruptibly(
              () ->
                  backend
                      .client
                      .getKVClient()
                      .txn()
                      .If(stillOurs(held, lease))
                      .Then(
                          Op.put(
                              held.key,
                              KeyNames.bytes(valueOf(lease)),
                              PutOption.builder().withLeaseId(leaseId).build()))
                      .commit(),
              backend.settings.requestTimeout,
              what);
    } catch (RuntimeException e) {
      // Whether the key moved is unknown. Revoking the new lease keeps the old expiry or ends the
      // key now (the delete watch then reports the loss): never later than the caller was told.
      revokeQuietly(leaseId);
      throw e;
    }
    backend.saw(r.getHeader().getRevision());
    if (!r.isSucceeded()) {
      revokeQuietly(leaseId);
      gone(held);
      return false;
    }
    long previous;
    do {
      previous = held.entry.ownLease.get();
      if (previous == EtcdBackend.ENDED) {
        // released while we moved it: the release deleted the key, or revoking this lease does
        revokeQuietly(leaseId);
        return true;
      }
    } while (!held.entry.ownLease.compareAndSet(previous, leaseId));
    if (previous > 0) {
      revokeQuietly(previous); // no key on it any more
    }
    return true;
  }

  boolean releaseAfter(BackendLease lease, Duration keep) {
    EtcdBackend.Held held = (EtcdBackend.Held) lease.state();
    String what =
        "holding lock '"
            + lease.name()
            + "' for "
            + dev.locksmith.spi.Durations.format(keep)
            + " after release";
    long holdLease = grant(keep, what);
    ByteSequence holdValue = KeyNames.bytes(HOLD_PREFIX + keep.toNanos() + "/" + lease.ownerId());
    TxnResponse r;
    try {
      r =
          backend.calls.awaitUninterruptibly(
              () ->
                  backend
                      .client
                      .getKVClient()
                      .txn()
                      .If(stillOurs(held, lease))
                      .Then(
                          Op.put(
                              held.key,
                              holdValue,
                              PutOption.builder().withLeaseId(holdLease).build()))
                      .commit(),
              backend.settings.requestTimeout,
              what);
    } catch (RuntimeException e) {
      // Unknown whether the hold was set: revoking its lease ends it if it was; if it was not, the
      // key is still on the session's lease, which we keep alive, so it must go too.
      revokeQuietly(holdLease);
      backend.keys.remove(held.key, held.entry);
      held.entry.held = false;
      endOwnLease(held.entry);
      backend.deletes.deleteLater(held.key, held.slot.session, held.slot::free);
      throw e;
    }
    long holdRevision = r.getHeader().getRevision();
    backend.saw(holdRevision);
    if (!r.isSucceeded()) {
      revokeQuietly(holdLease);
      gone(held);
      return false;
    }
    backend.keys.remove(held.key, held.entry);
    held.entry.held = false;
    endOwnLease(held.entry); // the key left it for the hold's lease
    // A live client ends the hold on time; closed, abandoned or killed, etcd ends it with its
    // lease.
    backend.schedule(() -> endHold(held, holdValue, holdRevision, holdLease), keep.toNanos());
    return true;
  }

  /**
   * Deletes a hold's key if it is still that hold (value and mod revision), then its lease. Never
   * blocks.
   */
  private void endHold(
      EtcdBackend.Held held, ByteSequence holdValue, long holdRevision, long holdLease) {
    if (backend.isClosed()) {
      return;
    }
    backend
        .client
        .getKVClient()
        .txn()
        .If(
            new Cmp(held.key, Cmp.Op.EQUAL, CmpTarget.value(holdValue)),
            new Cmp(held.key, Cmp.Op.EQUAL, CmpTarget.modRevision(holdRevision)))
        .Then(Op.delete(held.key, DeleteOption.DEFAULT))
        .commit()
        .orTimeout(backend.settings.requestTimeout.toNanos(), TimeUnit.NANOSECONDS)
        .whenComplete(
            (r, error) -> {
              if (error == null) {
                backend.saw(r.getHeader().getRevision());
                held.slot.free(); // deleted now, or gone with its lease before
              } else {
                LOG.debug(
                    "{}: ending the hold on {} failed; revoking its lease instead: {}",
                    backend.settings.describe(),
                    held.key,
                    EtcdCalls.describe(error));
              }
              // no key on it any more, or (after an error) its key goes with it
              backend
                  .client
                  .getLeaseClient()
                  .revoke(holdLease)
                  .orTimeout(backend.settings.requestTimeout.toNanos(), TimeUnit.NANOSECONDS)
                  .whenComplete(
                      (ok, e) -> {
                        if (e == null) {
                          held.slot.free();
                        }
                      });
            });
  }

  /**
   * How long a waiter behind {@code holder} may sleep without polling: at most until the holder's
   * key ends. A key on an etcd lease of its own ends with that lease, whose rest etcd tells in
   * whole seconds rounded down; a hold ends earlier by what its TTL was rounded up.
   *
   * @param holder the key just before the waiter's, as read
   * @param recheck the longest sleep otherwise
   */
  Duration untilFree(KeyValue holder, Duration recheck) throws InterruptedException {
    long lease = holder.getLease();
    if (lease == 0 || lease == sessionLeaseOf(holder.getKey())) {
      return recheck; // on its client's session: held while that client lives
    }
    long left;
    try {
      left =
          backend
              .calls
              .await(
                  () ->
                      backend
                          .client
                          .getLeaseClient()
                          .timeToLive(lease, io.etcd.jetcd.options.LeaseOption.DEFAULT),
                  backend.settings.requestTimeout,
                  "reading the rest of a lock holder's lease",
                  EtcdSettings.REQUEST_TIMEOUT)
              .getTTL();
    } catch (RuntimeException e) {
      // gone already (expired, not yet swept): poll again soon; else fall back to the recheck
      return EtcdCalls.leaseNotFound(e) ? Duration.ofMillis(50) : recheck;
    }
    long nanos = TimeUnit.SECONDS.toNanos(Math.max(0, left));
    String value = holder.getValue().toString(StandardCharsets.UTF_8);
    if (value.startsWith(HOLD_PREFIX)) {
      int end = value.indexOf('/', HOLD_PREFIX.length());
      try {
        long keep = Long.parseLong(value.substring(HOLD_PREFIX.length(), end));
        nanos -= TimeUnit.SECONDS.toNanos(ttlSeconds(Duration.ofNanos(keep))) - keep;
      } catch (RuntimeException e) {
        nanos = 0; // not a value of ours: poll soon
      }
    }
    // ending now (etcd sweeps expired leases every 500 ms): look again soon, without spinning
    Duration d = Duration.ofNanos(Math.max(nanos, TimeUnit.MILLISECONDS.toNanos(50)));
    return d.compareTo(recheck) < 0 ? d : recheck;
  }

  /**
   * @return the session lease id a key's name carries ({@code ...<lease hex>-<slot hex>}), or 0
   */
  static long sessionLeaseOf(ByteSequence key) {
    String k = key.toString(StandardCharsets.UTF_8);
    int dash = k.lastIndexOf('-');
    int slash = k.lastIndexOf('/');
    if (dash <= slash) {
      return 0;
    }
    try {
      return Long.parseUnsignedLong(k.substring(slash + 1, dash), 16);
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /**
   * @return the value {@link #extend} puts: a lock's owner id; for a permit or a side of a
   *     read-write lock, the owner id, {@link #TOKEN_MARK} and the grant's token. The put gives the
   *     key a new mod revision, which was the token of a permit or side granted after waiting (see
   *     {@link QueueRule#grantWrites}), so the token goes into the value for {@link EtcdHolders}.
   */
  static String valueOf(BackendLease lease) {
    return lease.claim().isExclusive()
        ? lease.ownerId()
        : lease.ownerId() + TOKEN_MARK + lease.fencingToken();
  }

  /**
   * Between the owner id and the token in the value of a permit's or side's key moved by {@link
   * #extend}: the last one in such a value (an owner id may hold it too, its thread's name).
   */
  static final char TOKEN_MARK = '#';

  private Cmp[] stillOurs(EtcdBackend.Held held, BackendLease lease) {
    if (!lease.claim().isExclusive()) {
      // A permit's or side's key: its create revision alone tells it is still ours, as for its
      // release (its value is the owner id, or after an extend the owner id and the token).
      return new Cmp[] {
        new Cmp(held.key, Cmp.Op.EQUAL, CmpTarget.createRevision(held.entry.createRevision))
      };
    }
    return new Cmp[] {
      // the token of a lock, not of a permit or side granted after waiting (see
      // QueueRule#grantWrites)
      new Cmp(held.key, Cmp.Op.EQUAL, CmpTarget.createRevision(held.entry.createRevision)),
      new Cmp(held.key, Cmp.Op.EQUAL, CmpTarget.value(KeyNames.bytes(lease.ownerId())))
    };
  }

  /**
   * @return a new etcd lease with {@code d} rounded up to whole seconds
   */
  private long grant(Duration d, String what) {
    long ttl = ttlSeconds(d);
    var g =
        backend.calls.awaitUninterruptibly(
            () -> backend.client.getLeaseClient().grant(ttl),
            backend.settings.requestTimeout,
            what + " (granting an etcd lease of " + ttl + " s)");
    return g.getID();
  }

  /**
   * Our key is no longer there as ours (the compare failed: nothing else writes a key of this name,
   * so it is gone). Forget it, and free its name.
   */
  private void gone(EtcdBackend.Held held) {
    backend.keys.remove(held.key, held.entry);
    held.entry.held = false;
    endOwnLease(held.entry);
    held.slot.free();
  }

  /** The key is released or given up: revoke the lease of its own it had, if any. */
  void endOwnLease(EtcdBackend.KeyEntry entry) {
    long own = entry.ownLease.getAndSet(EtcdBackend.ENDED);
    if (own > 0) {
      revokeQuietly(own);
    }
  }

  /** Revokes a lease in the background, bounded by the request timeout; never throws. */
  void revokeQuietly(long leaseId) {
    try {
      backend
          .client
          .getLeaseClient()
          .revoke(leaseId)
          .orTimeout(backend.settings.requestTimeout.toNanos(), TimeUnit.NANOSECONDS)
          .whenComplete(
              (ok, e) -> {
                if (e != null) {
                  LOG.debug(
                      "revoking etcd lease {} failed; it ends with its TTL: {}",
                      Long.toHexString(leaseId),
                      EtcdCalls.describe(e));
                }
              });
    } catch (RuntimeException e) {
      LOG.debug(
          "revoking etcd lease {} failed; it ends with its TTL: {}",
          Long.toHexString(leaseId),
          e.toString());
    }
  }
}
