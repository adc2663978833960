package dev.locksmith.tck.compare;

import dev.locksmith.tck.compare.Comparison.Event;
import dev.locksmith.tck.compare.Comparison.Target;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * The contender processes of one scenario run ({@link ContenderProcess}, one JVM each), the events
 * they report, the last lines of their stderr, and the {@link ResourceServer} they write through.
 * Closing it resumes and ends every contender.
 */
final class ContenderRun implements AutoCloseable {
  /** How many of a contender's last stderr lines a failure shows. */
  private static final int STDERR_LINES = 40;

  final Target target;
  private final Duration lease;
  final String name = "compare/" + UUID.randomUUID().toString().substring(0, 8);
  final ResourceServer resources;
  final List<Process> processes = new ArrayList<>();
  final List<Event> events = new CopyOnWriteArrayList<>();
  final List<Deque<String>> stderr = new ArrayList<>();
  volatile Predicate<Event> trigger;
  volatile Event triggeredBy;

  /** Held while a reader tests the trigger, which may block (it forks {@code kill}). */
  private final java.util.concurrent.locks.ReentrantLock triggerLock =
      new java.util.concurrent.locks.ReentrantLock();

  ContenderRun(Target target, Duration lease) throws IOException {
    this.target = target;
    this.lease = lease;
    this.resources = new ResourceServer();
  }

  void start(int index, String uri, long holdMillis, int permits, int setNames, boolean election)
      throws IOException {
    String java =
        System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    ProcessBuilder pb =
        new ProcessBuilder(
            java,
            "-Xss512k",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            System.getProperty("java.class.path"),
            ContenderProcess.class.getName(),
            name,
            Long.toString(lease.toMillis()),
            Integer.toString(resources.port()),
            Long.toString(holdMillis),
            Integer.toString(permits),
            Integer.toString(setNames),
            election ? "election" : "lock");
    pb.environment().put("LOCKSMITH_URI", uri);
    Process p = pb.start();
    processes.add(p);
    // its stderr (a stack trace if it fails to start), kept in part so that a failure can say
    // what the contender said
    Deque<String> err = new ArrayDeque<>();
    stderr.add(err);
    Thread errReader =
        new Thread(
            () -> {
              try (BufferedReader in =
                  new BufferedReader(
                      new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                  synchronized (err) {
                    err.addLast(line);
                    if (err.size() > STDERR_LINES) {
                      err.removeFirst();
                    }
                  }
                }
              } catch (IOException e) {
                // the process ended
              }
            },
            "contender-" + index + "-stderr");
    errReader.setDaemon(true);
    errReader.start();
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader in =
                  new BufferedReader(
                      new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                  Event e = new Event(index, line);
                  // one reader at a time: a trigger's test acts (signals a contender), and two
                  // readers testing it at once would freeze two contenders, one never resumed
                  triggerLock.lock();
                  try {
                    Predicate<Event> t = trigger;
                    if (t != null && t.test(e)) {
                      trigger = null;
                      triggeredBy = e;
                    }
                  } finally {
                    triggerLock.unlock();
                  }
                  events.add(e);
                }
              } catch (IOException e) {
                // the process ended
              }
            },
            "contender-" + index + "-reader");
    reader.setDaemon(true);
    reader.start();
  }

  /**
   * Waits until the contenders have reported {@code count} events of a kind; fails at once, with
   * what it wrote on stderr, if a contender that has not reported one has exited.
   */
  void awaitCount(String kind, int count, Duration within) throws InterruptedException {
    long deadline = System.nanoTime() + within.toNanos();
    while (events.stream().filter(e -> e.kind.equals(kind)).count() < count) {
      for (int i = 0; i < processes.size(); i++) {
        int index = i;
        Process p = processes.get(i);
        if (!p.isAlive()
            && events.stream().noneMatch(e -> e.contender == index && e.kind.equals(kind))) {
          Thread.sleep(100); // let the readers take in its last lines
          throw new IllegalStateException(
              "contender "
                  + i
                  + " exited with code "
                  + p.exitValue()
                  + " before it reported "
                  + kind
                  + "; its stderr: "
                  + stderrOf(i)
                  + lastError());
        }
      }
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException(
            "contenders reported "
                + events.stream().filter(e -> e.kind.equals(kind)).count()
                + " "
                + kind
                + " events of "
                + count
                + " expected within "
                + within.toMillis()
                + " ms"
                + stragglers(kind)
                + lastError());
      }
      Thread.sleep(5);
    }
  }

  /**
   * @return the contenders that have not reported an event of {@code kind}, each with its last
   *     stderr lines
   */
  String stragglers(String kind) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < processes.size(); i++) {
      int index = i;
      if (events.stream().noneMatch(e -> e.contender == index && e.kind.equals(kind))) {
        out.append("; contender ")
            .append(i)
            .append(" (")
            .append(processes.get(i).isAlive() ? "alive" : "exited")
            .append(") did not, its stderr: ")
            .append(stderrOf(i));
      }
    }
    return out.toString();
  }

  /**
   * @return the last lines contender {@code index} wrote on stderr, joined with " | "
   */
  String stderrOf(int index) {
    Deque<String> err = stderr.get(index);
    synchronized (err) {
      return err.isEmpty() ? "(nothing)" : String.join(" | ", err);
    }
  }

  String lastError() {
    return events.stream()
        .filter(e -> e.kind.equals("ERROR"))
        .reduce((a, b) -> b)
        .map(e -> "; last contender error: " + String.join(" ", e.fields))
        .orElse("");
  }

  /**
   * Runs {@code action} from the reader thread's view: waits for the first event that matches, then
   * returns it.
   */
  Event awaitEvent(Predicate<Event> which, Duration within) throws InterruptedException {
    triggeredBy = null;
    trigger = which;
    long deadline = System.nanoTime() + within.toNanos();
    while (triggeredBy == null) {
      if (System.nanoTime() - deadline > 0) {
        trigger = null;
        throw new IllegalStateException(
            "no contender event matched within " + within.toMillis() + " ms" + lastError());
      }
      Thread.sleep(1);
    }
    return triggeredBy;
  }

  @Override
  public void close() {
    for (Process p : processes) {
      Comparison.signal(p, "CONT");
      try {
        p.getOutputStream().close();
      } catch (IOException e) {
        // it is going away anyway
      }
    }
    for (Process p : processes) {
      try {
        if (!p.waitFor(5, TimeUnit.SECONDS)) {
          p.destroyForcibly();
        }
      } catch (InterruptedException e) {
        p.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
    try {
      resources.close();
    } catch (IOException e) {
      // closing anyway
    }
  }
}
