package dev.locksmith.redlock;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockException;
import dev.locksmith.redis.internal.RedisScripts;
import dev.locksmith.redlock.RedlockBackend.Call;
import dev.locksmith.redlock.RedlockBackend.Grant;
import dev.locksmith.redlock.RedlockBackend.Member;
import dev.locksmith.spi.BackendLease;
import dev.locksmith.spi.Claim;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.Renewal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lease control on a {@link RedlockBackend}: {@code renew}, {@code extend} and {@code
 * releaseAfter}, each a script on every server at once that counts toward a majority. Renew and
 * extend run the owner-checked renew script with the new lease plus the drift allowance; {@code
 * releaseAfter} (locks only) turns our key into a hold that no lease owns. An extend or a hold that
 * did not get its majority is given back on every server that made it.
 */
final class RedlockLeaseControl {
  private static final Logger LOG = LoggerFactory.getLogger(RedlockLeaseControl.class);

  /** Renewals per pipeline and server, as in lock-redis. */
  static final int RENEW_CHUNK = 1000;

  private final RedlockBackend backend;

  RedlockLeaseControl(RedlockBackend backend) {
    this.backend = backend;
  }

  List<Renewal> renew(List<BackendLease> leases) {
    List<Renewal> out = new ArrayList<>(leases.size());
    if (leases.isEmpty()) {
      return out;
    }
    long start = System.nanoTime();
    // leases of different claims need different scripts: one pipelined batch per script and server
    Map<RedisScripts.Script, List<Integer>> byScript = new LinkedHashMap<>();
    List<Call> calls = new ArrayList<>(leases.size());
    Duration shortest = null;
    for (int l = 0; l < leases.size(); l++) {
      BackendLease lease = leases.get(l);
      // the keys outlive the lease by the drift allowance, so the core's validity (renewal start +
      // lease) keeps that margin
      long ttl =
          Math.max(
              1,
              lease.lease().toMillis()
                  + TimeUnit.NANOSECONDS.toMillis(backend.driftNanos(lease.lease())));
      Call call = renewCall(lease.name(), lease.claim(), RedlockBackend.grant(lease), ttl);
      calls.add(call);
      byScript.computeIfAbsent(call.script, k -> new ArrayList<>()).add(l);
      if (shortest == null || lease.lease().compareTo(shortest) < 0) {
        shortest = lease.lease();
      }
    }
    Duration timeout = backend.settings.renewTimeout(shortest);
    int n = backend.members.size();
    int size = leases.size();
    Fanout<List<Object>> renew =
        Fanout.start(
            backend.members,
            m -> {
              Object[] replies = new Object[size];
              for (Map.Entry<RedisScripts.Script, List<Integer>> batch : byScript.entrySet()) {
                List<List<String>> keyLists = new ArrayList<>(batch.getValue().size());
                List<List<String>> argLists = new ArrayList<>(batch.getValue().size());
                for (int l : batch.getValue()) {
                  keyLists.add(calls.get(l).keys);
                  argLists.add(calls.get(l).args);
                }
                List<Object> answers =
                    m.node.evalMany(batch.getKey(), keyLists, argLists, RENEW_CHUNK, timeout);
                for (int j = 0; j < answers.size(); j++) {
                  replies[batch.getValue().get(j)] = answers.get(j);
                }
              }
              return java.util.Arrays.asList(replies);
            },
            backend.executor);
    long chunks = 0;
    for (List<Integer> batch : byScript.values()) {
      chunks += (batch.size() + RENEW_CHUNK - 1) / RENEW_CHUNK;
    }
    renew.awaitUninterruptibly(
        start + timeout.toNanos() * chunks,
        f -> {
          for (int l = 0; l < size; l++) {
            int renewed = 0;
            int lost = 0;
            for (int i = 0; i < n; i++) {
              Object code = codeOf(f.answer(i), l);
              if (Long.valueOf(RedisScripts.RENEWED).equals(code)) {
                renewed++;
              } else if (code instanceof Long) {
                lost++;
              }
            }
            if (renewed < backend.quorum && lost <= n - backend.quorum) {
              return false;
            }
          }
          return true;
        });
    long now = System.nanoTime();
    for (int l = 0; l < size; l++) {
      BackendLease lease = leases.get(l);
      Grant grant = RedlockBackend.grant(lease);
      int renewed = 0;
      List<String> gone = new ArrayList<>();
      List<String> unreachable = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        Member m = backend.members.get(i);
        Object code = codeOf(renew.answer(i), l);
        if (Long.valueOf(RedisScripts.RENEWED).equals(code)) {
          renewed++;
        } else if (Long.valueOf(RedisScripts.HELD_BY_ANOTHER).equals(code)) {
          gone.add(m.endpoint() + ": held by another owner");
        } else if (Long.valueOf(RedisScripts.GONE).equals(code)) {
          gone.add(m.endpoint() + ": key gone");
        } else if (code == null) {
          unreachable.add(m.endpoint() + " did not answer within " + Durations.format(timeout));
        } else {
          unreachable.add(RedlockBackend.reason(m, code));
        }
      }
      if (renewed >= backend.quorum) {
        if (now - grant.validUntilNanos < 0) {
          grant.validUntilNanos = start + lease.lease().toNanos();
          out.add(Renewal.renewed());
        } else {
          out.add(
              Renewal.failed(
                  new LockException(
                      Claim.noun(lease.claim().kind())
                          + " '"
                          + lease.name()
                          + "' was renewed on a majority of "
                          + backend.shownUri
                          + " only after its validity ended")));
        }
      } else if (gone.size() > n - backend.quorum) {
        out.add(
            Renewal.lost(
                "the "
                    + leaseKey(lease)
                    + " is no longer ours on a majority of the "
                    + n
                    + " Redis servers ("
                    + String.join("; ", gone)
                    + ")"));
      } else {
        out.add(
            Renewal.failed(
                new BackendUnavailableException(
                    "renewed "
                        + Claim.noun(lease.claim().kind())
                        + " '"
                        + lease.name()
                        + "' on only "
                        + renewed
                        + " of the "
                        + n
                        + " Redis servers of "
                        + backend.shownUri
                        + ", and it needs "
                        + backend.quorum
                        + "; unreachable: "
                        + String.join("; ", unreachable)
                        + (gone.isEmpty() ? "" : "; not ours: " + String.join("; ", gone)))));
      }
    }
    return out;
  }

  /**
   * @return what a lease holds on each server, for messages: a lock's key, a semaphore's slot, a
   *     read-write lock's side
   */
  private String leaseKey(BackendLease lease) {
    switch (lease.claim().kind()) {
      case PERMIT:
        return "slot "
            + RedlockBackend.grant(lease).slot
            + " of "
            + backend.claimKeys.semaphoreSlots(lease.name());
      case READ:
      case WRITE:
        return "lease in " + backend.sideKey(lease.name(), lease.claim());
      default:
        return "key " + backend.keys.owner(lease.name());
    }
  }

  /**
   * @return the answer of one server for one lease: a Long, a Throwable, or null if the server has
   *     not answered
   */
  private static Object codeOf(Object serverAnswer, int lease) {
    if (serverAnswer instanceof List) {
      return ((List<?>) serverAnswer).get(lease);
    }
    return serverAnswer;
  }

  /**
   * @return the owner-checked renewal (and extend) of a lease to {@code ttlMillis} from now
   */
  private Call renewCall(String name, Claim claim, Grant grant, long ttlMillis) {
    String ttl = Long.toString(ttlMillis);
    switch (claim.kind()) {
      case PERMIT:
        return new Call(
            ClaimScripts.SEMAPHORE_RENEW,
            List.of(
                backend.claimKeys.semaphoreSlots(name),
                backend.claimKeys.semaphoreOwners(name),
                backend.claimKeys.semaphorePermits(name)),
            List.of(grant.value, ttl, Integer.toString(grant.slot)));
      case READ:
      case WRITE:
        return new Call(
            ClaimScripts.READ_WRITE_RENEW,
            List.of(backend.sideKey(name, claim)),
            List.of(grant.value, ttl));
      default:
        return new Call(
            RedisScripts.RENEW,
            List.of(backend.keys.owner(name), backend.keys.token(name)),
            List.of(grant.value, ttl));
    }
  }

  /**
   * The renew script with the new lease on every server at once. The keys get the new lease plus
   * the drift allowance, as a renewal gives them, and the lease counts as extended only when a
   * majority extended it before its current validity ended; then it is valid until the start of the
   * call + the new lease. Otherwise every server that extended it, now or when its late answer
   * comes, releases it (owner-checked), and the answer is false: the core counts the lease as lost.
   */
  boolean extend(BackendLease lease, Duration newLease) {
    Grant grant = RedlockBackend.grant(lease);
    String name = lease.name();
    int n = backend.members.size();
    Call call =
        renewCall(
            name,
            lease.claim(),
            grant,
            RedisScripts.ceilMillis(newLease.plusNanos(backend.driftNanos(newLease))));
    Duration timeout =
        backend.settings.renewTimeout(
            newLease.compareTo(lease.lease()) < 0 ? newLease : lease.lease());
    long start = System.nanoTime();
    long deadline = start + timeout.toNanos();
    if (grant.validUntilNanos - deadline < 0) {
      deadline = grant.validUntilNanos; // an answer after the validity ended could not count
    }
    Fanout<Object> extend =
        Fanout.start(backend.members, m -> call.on(m, timeout), backend.executor);
    extend.awaitUninterruptibly(
        deadline,
        f -> {
          int extended = 0;
          int not = 0;
          for (int i = 0; i < n; i++) {
            Object a = f.answer(i);
            if (Long.valueOf(RedisScripts.RENEWED).equals(a)) {
              extended++;
            } else if (a != null) {
              not++;
            }
          }
          return extended >= backend.quorum || not > n - backend.quorum;
        });
    long now = System.nanoTime();
    int extended = 0;
    List<String> failed = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Object a = extend.answer(i);
      if (Long.valueOf(RedisScripts.RENEWED).equals(a)) {
        extended++;
      } else {
        failed.add(backend.members.get(i).endpoint() + ": " + outcome(a, timeout));
      }
    }
    if (extended >= backend.quorum && now - grant.validUntilNanos < 0) {
      grant.validUntilNanos = start + newLease.toNanos();
      return true;
    }
    // not extended: give back what was, so that no minority keeps the lock past the old expiry
    for (int i = 0; i < n; i++) {
      Member m = backend.members.get(i);
      extend
          .future(i)
          .whenComplete(
              (reply, error) -> {
                if (Long.valueOf(RedisScripts.RENEWED).equals(reply)) {
                  backend.inBackground(
                      m,
                      backend.releaseCall(
                          name, lease.claim(), grant.value, grant.slot, grant.value));
                }
              });
    }
    LOG.debug(
        "{} '{}': extended on {} of the {} Redis servers of {} ({}), and it needs {} within its"
            + " validity; given back",
        Claim.noun(lease.claim().kind()),
        name,
        extended,
        n,
        backend.shownUri,
        String.join("; ", failed),
        backend.quorum);
    return false;
  }

  /**
   * The hold script on every server at once: where the key still holds our value, it becomes a
   * value no lease has, expiring after {@code keep} plus the drift allowance, so that no server
   * whose clock runs fast frees it before {@code keep}. True when a majority set the hold. Else
   * every hold set, now or on a late answer, is taken back (owner-checked on the hold's value), and
   * the answer is false, or {@link BackendUnavailableException} when the servers that did not
   * answer decide it (the lock then expires with its lease).
   */
  boolean releaseAfter(BackendLease lease, Duration keep) {
    if (!lease.claim().isExclusive()) {
      throw new UnsupportedOperationException(
          backend
              + " does not implement releaseAfter for a "
              + Claim.noun(lease.claim().kind())
              + "'s lease");
    }
    Grant grant = RedlockBackend.grant(lease);
    String name = lease.name();
    String hold = RedisScripts.holdValue(grant.value);
    int n = backend.members.size();
    List<String> args =
        List.of(
            grant.value,
            hold,
            Long.toString(RedisScripts.ceilMillis(keep.plusNanos(backend.driftNanos(keep)))));
    Duration timeout = backend.settings.renewTimeout(lease.lease());
    long start = System.nanoTime();
    Fanout<Object> holding =
        Fanout.start(
            backend.members,
            m ->
                m.node.eval(
                    RedisScripts.HOLD,
                    List.of(backend.keys.owner(name), backend.keys.token(name)),
                    args,
                    timeout),
            backend.executor);
    holding.awaitUninterruptibly(
        start + timeout.toNanos(),
        f -> {
          int held = 0;
          int not = 0;
          for (int i = 0; i < n; i++) {
            Object a = f.answer(i);
            if (Long.valueOf(1).equals(a)) {
              held++;
            } else if (a instanceof Long) {
              not++;
            }
          }
          return held >= backend.quorum || not > n - backend.quorum;
        });
    int held = 0;
    List<String> unreachable = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Object a = holding.answer(i);
      if (Long.valueOf(1).equals(a)) {
        held++;
      } else if (!(a instanceof Long)) {
        unreachable.add(backend.members.get(i).endpoint() + ": " + outcome(a, timeout));
      }
    }
    if (held >= backend.quorum) {
      return true;
    }
    for (int i = 0; i < n; i++) {
      Member m = backend.members.get(i);
      holding
          .future(i)
          .whenComplete(
              (reply, error) -> {
                if (Long.valueOf(1).equals(reply)) {
                  backend.inBackground(
                      m, backend.releaseCall(name, Claim.exclusive(), hold, -1, hold));
                }
              });
    }
    if (held + unreachable.size() >= backend.quorum) {
      throw new BackendUnavailableException(
          "cannot hold lock '"
              + name
              + "' after release: held on "
              + held
              + " of the "
              + n
              + " Redis servers of "
              + backend.shownUri
              + ", a lock needs "
              + backend.quorum
              + "; unreachable: "
              + String.join("; ", unreachable)
              + "; what was held is given back, and the rest expires with the lease");
    }
    return false;
  }

  /**
   * @return what one server's answer says, for a message
   */
  private static String outcome(Object answer, Duration timeout) {
    if (answer == null) {
      return "did not answer within " + Durations.format(timeout);
    }
    if (answer instanceof Throwable) {
      String msg = ((Throwable) answer).getMessage();
      return msg == null ? answer.toString() : msg;
    }
    if (Long.valueOf(RedisScripts.HELD_BY_ANOTHER).equals(answer)) {
      return "held by another owner";
    }
    if (Long.valueOf(RedisScripts.GONE).equals(answer)) {
      return "key gone";
    }
    return "answered " + answer;
  }
}
