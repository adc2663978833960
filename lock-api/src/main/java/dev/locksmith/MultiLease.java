package dev.locksmith;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The lease of a set of names: one lease per name, in the set's order, held and given up as one.
 */
final class MultiLease implements Lease {
  private final String description;
  private final List<String> names;
  private final List<Lease> leases;
  private final CompletableFuture<LeaseLostException> lost = new CompletableFuture<>();

  MultiLease(String description, List<String> names, List<Lease> leases) {
    this.description = description;
    this.names = names;
    this.leases = leases;
    for (Lease lease : leases) {
      // the first name lost is the set's loss, and it names that name
      lease.lost().thenAccept(lost::complete);
    }
  }

  @Override
  public String lockName() {
    return description;
  }

  @Override
  public List<String> lockNames() {
    return names;
  }

  /**
   * @return the token of the set's first name in its order ({@code lockNames().get(0)}); each
   *     name's own token is {@link #fencingToken(String)}
   */
  @Override
  public long fencingToken() {
    return leases.get(0).fencingToken();
  }

  @Override
  public long fencingToken(String name) {
    int i = names.indexOf(name);
    if (i < 0) {
      throw new IllegalArgumentException(
          "`name` was "
              + (name == null ? "null" : "'" + Names.show(name) + "'")
              + " but this lease holds only "
              + description);
    }
    return leases.get(i).fencingToken();
  }

  @Override
  public boolean isValid() {
    for (Lease lease : leases) {
      if (!lease.isValid()) {
        return false;
      }
    }
    return true;
  }

  @Override
  public CompletionStage<LeaseLostException> lost() {
    return lost.minimalCompletionStage();
  }

  /**
   * Releases every name, last first.
   *
   * @return true if every name was still held up to this release
   * @throws BackendUnavailableException the first a release threw, after every other name was
   *     released; the names it could not release expire with their lease
   */
  @Override
  public boolean release() {
    Boolean together = LeaseHandle.releaseTogether(leases);
    if (together != null) {
      return together;
    }
    return MultiLock.allLastFirst(leases, Lease::release);
  }

  /**
   * Moves every name's expiry; see {@link Lease#extend(Duration)}.
   *
   * @return true if every name is now kept until then; false if any was no longer ours (the others
   *     are moved all the same)
   */
  @Override
  public boolean extend(Duration lease) {
    LeaseHandle.checkExtend(lease); // checked once, before any name is touched
    boolean all = true;
    for (Lease one : leases) {
      all &= one.extend(lease);
    }
    return all;
  }

  /**
   * Gives every name up with the server keeping it for {@code keep}; see {@link
   * Lease#releaseAfter(Duration)}.
   *
   * @return true if every name was still held up to this call
   */
  @Override
  public boolean releaseAfter(Duration keep) {
    LeaseHandle.checkKeep(keep); // checked once, before any name is touched
    boolean all = true;
    for (int i = leases.size() - 1; i >= 0; i--) {
      all &= leases.get(i).releaseAfter(keep);
    }
    return all;
  }

  @Override
  public void close() {
    try {
      if (LeaseHandle.releaseTogether(leases) != null) {
        return;
      }
    } catch (LockException e) {
      org.slf4j.LoggerFactory.getLogger(MultiLease.class)
          .warn(
              "closing lease on locks {} could not release them; they expire with their lease: {}",
              description,
              e.getMessage());
      return;
    }
    for (int i = leases.size() - 1; i >= 0; i--) {
      leases.get(i).close();
    }
  }

  @Override
  public String toString() {
    return "Lease{" + description + ", valid=" + isValid() + "}";
  }
}
