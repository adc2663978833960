package dev.locksmith.zookeeper;

import dev.locksmith.spi.Claim;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Decides, from one read of a semaphore's or read-write lock's children in sequence order, what the
 * waiter whose node is among them may do. Every waiter judges only the nodes ahead of its own, so a
 * decision never depends on who has polled yet:
 *
 * <ul>
 *   <li><b>Permit</b>: the head (the oldest node) sets the count in use. A node asking another
 *       count is refused. A node asking the head's count is granted once fewer than that many nodes
 *       are ahead of it and all of them ask the same count (a node ahead with another count is
 *       about to be refused and go: it is waited for). Two nodes that are live at once were each
 *       seen by the later one's read, so the live grants never exceed the count and never mix
 *       counts.
 *   <li><b>Read</b>: granted once no writer's node is ahead; it waits for the nearest one.
 *   <li><b>Write</b>: granted once no node is ahead; it waits for the one just before it.
 * </ul>
 */
final class ClaimQueue {

  /** What a waiter may do. */
  enum Action {
    /** Take it. */
    GRANT,
    /** Wait for one node to go: {@link Verdict#node}. */
    WAIT_FOR_NODE,
    /** Wait for any change of the children: a permit may come free from any holder. */
    WAIT_FOR_CHILDREN,
    /** Refused: the semaphore is in use with another count, {@link Verdict#permitsInUse}. */
    PERMITS_IN_USE
  }

  /** A decision. */
  static final class Verdict {
    private static final Verdict GRANT = new Verdict(Action.GRANT, null, 0);
    private static final Verdict CHILDREN = new Verdict(Action.WAIT_FOR_CHILDREN, null, 0);

    final Action action;

    /** The child to wait for, for {@link Action#WAIT_FOR_NODE}. */
    final String node;

    /** The count in use, for {@link Action#PERMITS_IN_USE}. */
    final int permitsInUse;

    private Verdict(Action action, String node, int permitsInUse) {
      this.action = action;
      this.node = node;
      this.permitsInUse = permitsInUse;
    }

    static Verdict waitFor(String node) {
      return new Verdict(Action.WAIT_FOR_NODE, node, 0);
    }

    @Override
    public String toString() {
      return action
          + (node != null ? " " + node : "")
          + (action == Action.PERMITS_IN_USE ? " " + permitsInUse : "");
    }
  }

  private ClaimQueue() {}

  /**
   * @param claim what the waiter claims; not {@link Claim#exclusive()}
   * @param children the resource's children, sorted by {@link NodeNames#BY_SEQUENCE}
   * @param mine the index of the waiter's own node in {@code children}
   * @return what it may do
   */
  static Verdict judge(Claim claim, List<String> children, int mine) {
    switch (claim.kind()) {
      case PERMIT:
        return judgePermit(claim.permits(), children, mine);
      case READ:
        for (int i = mine - 1; i >= 0; i--) {
          if (!NodeNames.isReader(children.get(i))) {
            return Verdict.waitFor(children.get(i));
          }
        }
        return Verdict.GRANT;
      case WRITE:
        return mine == 0 ? Verdict.GRANT : Verdict.waitFor(children.get(mine - 1));
      default:
        throw new IllegalArgumentException(
            "`claim` was " + claim + " but it must be a permit or a side of a read-write lock");
    }
  }

  /**
   * The nodes {@link #judge} grants, each judged as what its name claims: of a semaphore, the first
   * permit nodes, up to the head's count and up to the first node with another count; of a
   * read-write lock, the head if it is not a reader's, else the readers up to the first other node.
   * A node granted here may not have taken its grant yet (its waiter has not polled, or not written
   * its token); a node not granted here holds nothing. Linear, as a semaphore may hold up to {@link
   * Claim#MAX_PERMITS} and a read-write lock any number of readers.
   *
   * @param semaphore whether the children are a semaphore's, else a read-write lock's
   * @param children the resource's children, sorted by {@link NodeNames#BY_SEQUENCE}
   * @return the granted nodes, in order
   */
  static List<String> granted(boolean semaphore, List<String> children) {
    List<String> granted = new ArrayList<>();
    if (semaphore) {
      int head = -1;
      for (String node : children) {
        int n = NodeNames.permitsOf(node);
        if (n < 0) {
          continue; // not a permit's node: nobody's lease, in nobody's way
        }
        if (head < 0) {
          head = n;
        }
        if (n != head || granted.size() >= head) {
          break; // refused, or waiting: so is every node behind it
        }
        granted.add(node);
      }
      return granted;
    }
    for (String node : children) {
      if (!NodeNames.isReader(node)) {
        if (granted.isEmpty()) {
          granted.add(node); // a writer first in line
        }
        break;
      }
      granted.add(node);
    }
    return granted;
  }

  /**
   * The callers waiting in a resource's queue: one per {@link NodeNames#caller} among its children,
   * leaving out the nodes that do not wait (those that hold, or went since the children were read)
   * and any other node of their callers. A node in nobody's queue is nobody's wait: the hold node
   * and nodes without a sequence number, and of a semaphore a node that is not a permit's ({@link
   * #granted} passes those by as well). Read from the children alone: no other read, no write.
   *
   * @param semaphore whether the children are a semaphore's; false for a lock's or a read-write
   *     lock's, whose every node with a sequence number is in line
   * @param children the resource's children
   * @param notWaiting the children that hold, or are gone
   * @return how many callers wait
   */
  static int waiting(boolean semaphore, List<String> children, Collection<String> notWaiting) {
    Set<String> done = new HashSet<>();
    for (String node : notWaiting) {
      String caller = NodeNames.caller(node);
      if (caller != null) {
        done.add(caller);
      }
    }
    Set<String> waiting = new HashSet<>();
    for (String node : children) {
      String caller = NodeNames.caller(node);
      if (caller != null
          && !done.contains(caller)
          && (!semaphore || NodeNames.permitsOf(node) >= 0)) {
        waiting.add(caller);
      }
    }
    return waiting.size();
  }

  private static Verdict judgePermit(int permits, List<String> children, int mine) {
    int head = -1;
    int ahead = 0;
    String otherCount = null;
    for (int i = 0; i < mine; i++) {
      int n = NodeNames.permitsOf(children.get(i));
      if (n < 0) {
        continue; // not a permit's node: nobody's lease
      }
      if (head < 0) {
        head = n;
      } else if (n != head) {
        otherCount = children.get(i); // the nearest such: it is refused when it polls, and goes
      }
      ahead++;
    }
    if (head < 0) {
      return Verdict.GRANT; // nothing ahead: the semaphore takes our count
    }
    if (head != permits) {
      return new Verdict(Action.PERMITS_IN_USE, null, head);
    }
    if (otherCount != null) {
      return Verdict.waitFor(otherCount);
    }
    return ahead < permits ? Verdict.GRANT : Verdict.CHILDREN;
  }
}
